"""The release builder's words for its JavaScript (static/js/builder.js, builder-tradeoff.js),
in the reader's language.

The scripts hold no English: the page sends this dict through json_script, and the
scripts fill `{name}` placeholders with numbers the preview endpoint formatted.
"""

from __future__ import annotations

from django.utils.translation import gettext, pgettext

from dpportal import formatting
from dpportal.privacy.unbounded_bounds import DEFAULT_RATIO
from releases.models import Statistic


def builder_text() -> dict[str, object]:
    return {
        "kinds": [[value, str(label)] for value, label in Statistic.Kind.choices],
        "presets": [
            ["", gettext("presets…")],
            ["0.5", gettext("Median")],
            ["0.25, 0.5, 0.75", gettext("Median and quartiles")],
            ["0.1, 0.25, 0.5, 0.75, 0.9", gettext("Deciles 1 and 9, quartiles, median")],
        ],
        "quantiles_label": gettext("quantiles (fractions or percents)"),
        "presets_label": gettext("quantile presets"),
        "bin_edges": gettext("bin edges"),
        "step_label": gettext("grid step (empty: the column's bin edges)"),
        "quantiles": gettext("quantiles"),
        "grid_step": gettext("grid step"),
        "none": gettext("(none)"),
        "category": gettext("category"),
        "group_by": gettext("group by"),
        "crosstab_columns": gettext("columns"),
        "crosstab_publish": gettext("tables"),
        "crosstab_ways": [
            ["1", gettext("each column alone")],
            ["2", gettext("every table of up to 2 columns")],
            ["3", gettext("every table of up to 3 columns")],
            ["", gettext("the tables listed:")],
        ],
        "crosstab_tables": gettext(
            "tables to publish, each its columns joined by ×, separated by ;"
        ),
        "crosstab_placeholder": "a × b; c",
        "crosstab_total": gettext("and the total"),
        "bounds_ends": gettext("search"),
        "bounds_end_choices": [
            ["both", gettext("both bounds")],
            ["upper", gettext("the upper bound only")],
            ["lower", gettext("the lower bound only")],
        ],
        "bounds_outside": gettext("values allowed beyond each bound"),
        "bounds_tail": gettext("upper bound"),
        "bounds_tail_choices": [
            ["", gettext("where few values lie beyond (guaranteed)")],
            ["lognormal", gettext("extrapolated for a clipped mean (log-normal tail model)")],
        ],
        "bounds_centre": gettext("start point"),
        "bounds_unit": gettext("smallest step"),
        "bounds_limit": gettext("largest distance"),
        "bounds_help": gettext(
            "The search starts at the start point and walks outward in steps growing by "
            "%(growth)s until few values lie beyond. The start point must be a value you know lies "
            "inside the column's range without looking at the data (0 for amounts, a typical "
            "year for years): the data itself must not suggest it. No bounds need to be "
            "declared for this column. For a clipped mean, an upper bound extrapolated under a "
            "log-normal tail model leaves about the values asked for above it if the column's "
            "upper tail is log-normal (incomes, durations and sizes often are), and has no "
            "guarantee otherwise."
        )
        % {"growth": formatting.percent(DEFAULT_RATIO - 1)},
        "keys_per_person": gettext("keys per person"),
        "keys_with_counts": gettext("with their counts"),
        "keys_max": gettext("at most (keys)"),
        "keys_needed": gettext(
            "a key held by {p50} persons is published with probability 50 %, by {p95} with "
            "probability 95 %"
        ),
        "rows_cap": gettext("most rows per person to resolve"),
        "rows_cap_label": gettext(
            "most rows per person to resolve (empty: 1000); persons with more are counted together"
        ),
        "check_failed": gettext("The check could not be made."),
        "check_private": gettext("Private: for you only, never published."),
        "check_rows": gettext("Rows in the dataset: {rows}."),
        "check_persons": gettext(
            "Rows per person ({column}): {persons} persons; min {min}, median {median}, "
            "90th percentile {p90}, 99th percentile {p99}, max {max}. The limit L = {limit} "
            "drops {dropped} rows ({dropped_share})."
        ),
        "check_none": gettext("No statistic of this draft has bounds to check."),
        "then_by": gettext("then by"),
        "all_rows": gettext("(all rows)"),
        "low": pgettext("lower bound, short", "lo"),
        "high": pgettext("upper bound, short", "hi"),
        "remove": gettext("Remove"),
        "description": pgettext("field", "description"),
        "label_en": gettext("label in English (empty: named from its kind and columns)"),
        "label_zh": gettext("label in Simplified Chinese"),
        "description_en": gettext("description in English"),
        "description_zh": gettext("description in Simplified Chinese"),
        "column_kinds": {
            "categorical": gettext("categorical"),
            "numeric": gettext("numeric"),
            "date": gettext("date"),
        },
        "rank": gettext("rank ± {n}"),
        "statistic": gettext("Statistic"),
        "epsilon": gettext("epsilon"),
        "delta": gettext("delta"),
        "cells": gettext("cells"),
        "per_cell": gettext("± per cell"),
        "all_cells": gettext("± all cells at once"),
        "cost": gettext("Total cost: epsilon {epsilon}, delta {delta}."),
        "remaining": gettext(
            "Remaining in the project, counted tightly at the cap's delta: epsilon "
            "{epsilon_remaining} now, epsilon {epsilon_remaining_after} after this release."
        ),
        "basic_remaining": gettext(
            "Basic composition (the plain sums) would leave epsilon {epsilon} after it."
        ),
        "no_fit": gettext("This release does not fit the remaining budget."),
        "untight": gettext(
            "The project's ledger could not be accounted tightly: only the basic sums apply."
        ),
        "project_cap": gettext("Project cap"),
        "committed_now": gettext("Committed now"),
        "after_release": gettext("After this release"),
        "loss_caption": gettext("The project's privacy loss at delta {delta}"),
        "tight": gettext("epsilon (tight accounting)"),
        "basic_epsilon": gettext("epsilon (basic sum)"),
        "basic_delta": gettext("delta (basic sum)"),
        "fits": gettext("{n} releases like this one fit under the cap (this one included)."),
        "fits_one": gettext("{n} release like this one fits under the cap (this one included)."),
        "no_bound_fit": gettext("This release does not fit under the cap by either bound."),
        "preview_failed": gettext("The preview could not be computed: try again."),
        "chart_failed": gettext("The chart could not be computed for this release."),
        "this_total": gettext("This release: total epsilon {epsilon}."),
        "no_total_fits": gettext("No total of this release fits under the cap."),
        "largest": gettext(
            "The largest total of this release that still fits under the cap: epsilon {epsilon}."
        ),
        "largest_at_least": gettext(
            "The largest total of this release that still fits under the cap: epsilon at "
            "least {epsilon}."
        ),
        "hover": gettext("{label}: ± {halfwidth} at epsilon {epsilon}"),
        "this_release": gettext("this release"),
        "fits_up_to": gettext("fits under the cap up to here"),
        "x_axis": gettext("total epsilon of the release"),
        "y_axis": gettext("half-width (± per cell, value units)"),
        "total_epsilon": gettext("total epsilon"),
        "fits_column": gettext("fits under the cap"),
        "yes": gettext("yes"),
        "no": gettext("no"),
    }
