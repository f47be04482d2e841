"""The sentences of the review document of grouped statistics, quantiles and spread, in the
reader's language (releases.review.stats builds the document around them)."""

from __future__ import annotations

from django.utils.translation import gettext, ngettext

from datasets.models import Column
from dpportal import formatting
from dpportal.privacy.quantile_grids import OPEN_GRID_DECADES
from releases.services.plan import ReleasePlan, StatisticPlan


def kind_text(kind: str) -> str:
    return {
        "grouped_sum": gettext("Sum of a numeric column by group, clipped to a range"),
        "grouped_mean": gettext("Mean of a numeric column by group, clipped to a range"),
        "quantiles": gettext("Median and quantiles (permute-and-flip over a public grid)"),
        "stddev": gettext("Standard deviation of a numeric column, clipped to a range"),
        "variance": gettext("Variance of a numeric column, clipped to a range"),
    }[kind]


def units_of(name: str) -> str:
    return gettext("units of %(name)s") % {"name": name}


SPREAD_PARTS = ("count", "sum", "squares")


def groups_text(stat: StatisticPlan, cells: int) -> str:
    if not stat.group_columns:
        return gettext("One cell: all rows.")
    names = " × ".join(c.name for c in stat.group_columns)
    return ngettext(
        "%(n)s group: every combination of %(names)s (declared categories or bins, plus "
        "“Other” for undeclared values and “Missing” where the column counts missing values), "
        "as a histogram's cells.",
        "%(n)s groups: every combination of %(names)s (declared categories or bins, plus "
        "“Other” for undeclared values and “Missing” where the column counts missing values), "
        "as a histogram's cells.",
        cells,
    ) % {"n": formatting.integer(cells), "names": names}


def bound_text(stat: StatisticPlan, plan: ReleasePlan) -> str:
    bound = plan.dataset.contribution_bound
    worst = formatting.significant(max(abs(stat.lower), abs(stat.upper)), 30)
    return gettext(
        "No per-group bound: a person's L = %(bound)s row(s) may fall in L different groups, so "
        "the group sums move by at most L × %(worst)s in total (l1) and the group counts by at "
        "most L."
    ) % {"bound": formatting.integer(bound), "worst": worst}


def grid_words(stat: StatisticPlan) -> str:
    m = formatting.integer(len(stat.grid))
    if stat.step is not None and stat.upper is None:
        if stat.lower is None:
            return gettext(
                "an open grid (no bounds declared): 0 and every number of three significant "
                "digits from %(step)s to %(top)s in size, either sign, so neighbours are at "
                "most 1 %% apart: %(m)s candidates fixed by the step alone (never read from the "
                "data); values beyond the last count as above it"
            ) % {
                "step": formatting.significant(stat.step, 30),
                "top": formatting.significant(stat.step * 10**OPEN_GRID_DECADES, 30),
                "m": m,
            }
        return gettext(
            "an open grid (no upper bound declared): %(lower)s, then %(lower)s plus every number "
            "of three significant digits from %(step)s to %(top)s, so neighbours are at most "
            "1 %% apart: %(m)s candidates fixed by the lower bound and step alone (never read "
            "from the data); values beyond the last count as above it"
        ) % {
            "lower": formatting.significant(stat.lower, 30),
            "step": formatting.significant(stat.step, 30),
            "top": formatting.significant(stat.step * 10**OPEN_GRID_DECADES, 30),
            "m": m,
        }
    if stat.step is not None:
        return gettext(
            "every %(step)s from %(lower)s to %(upper)s: %(m)s candidates, declared by the owner "
            "(never read from the data)"
        ) % {
            "step": formatting.significant(stat.step, 30),
            "lower": formatting.significant(stat.lower, 30),
            "upper": formatting.significant(stat.upper, 30),
            "m": m,
        }
    edges = ", ".join(formatting.significant(e, 30) for e in stat.grid)
    return gettext("the column's declared bin edges %(edges)s: %(m)s candidates") % {
        "edges": edges,
        "m": m,
    }


def missing(stat: StatisticPlan) -> str:
    out = [gettext("Rows where %(name)s is missing are left out.") % {"name": stat.column.name}]
    for c in stat.group_columns:
        if c.missing == Column.Missing.CATEGORY:
            message = gettext("Rows where %(name)s is missing are in the “Missing” group.")
        else:
            message = gettext("Rows where %(name)s is missing are dropped.")
        out.append(message % {"name": c.name})
    return " ".join(out)


def out_of_range(stat: StatisticPlan) -> str:
    name = stat.column.name
    if stat.kind == "quantiles":
        return gettext(
            "No clipping: values of %(name)s below the grid's first candidate rank below every "
            "candidate, values above its last rank above every one."
        ) % {"name": name}
    lo, hi = (formatting.significant(x, 30) for x in (stat.lower, stat.upper))
    out = [
        gettext(
            "Values of %(name)s below %(lo)s count as %(lo)s, above %(hi)s as %(hi)s (clipped)."
        )
        % {"name": name, "lo": lo, "hi": hi}
    ]
    for c in stat.group_columns:
        if c.kind == Column.Kind.CATEGORICAL:
            message = gettext("Values of %(name)s that are not declared go to the “Other” group.")
        else:
            message = gettext("Values of %(name)s outside the bins are clamped into the edge bins.")
        out.append(message % {"name": c.name})
    return " ".join(out)


def estimates(stat: StatisticPlan) -> str:
    """What a grouped or spread statistic estimates, in a sentence."""
    name = stat.column.name
    groups = gettext(" and ").join(c.name for c in stat.group_columns)
    if groups:
        message = {
            "grouped_sum": gettext(
                "The sum of %(name)s in each group of %(groups)s, each value clipped to the range."
            ),
            "grouped_mean": gettext(
                "The mean of %(name)s in each group of %(groups)s, each value clipped to the "
                "range. Noisy sum / noisy count per group; the counts are not published."
            ),
            "stddev": gettext(
                "The population standard deviation of %(name)s in each group of %(groups)s, each "
                "value clipped to the range."
            ),
            "variance": gettext(
                "The population variance of %(name)s in each group of %(groups)s, each value "
                "clipped to the range."
            ),
        }[stat.kind]
        return message % {"name": name, "groups": groups}
    message = {
        "grouped_sum": gettext(
            "The sum of %(name)s over all rows, each value clipped to the range."
        ),
        "grouped_mean": gettext(
            "The mean of %(name)s over all rows, each value clipped to the range. Noisy sum / "
            "noisy count per group; the counts are not published."
        ),
        "stddev": gettext(
            "The population standard deviation of %(name)s over all rows, each value clipped to "
            "the range."
        ),
        "variance": gettext(
            "The population variance of %(name)s over all rows, each value clipped to the range."
        ),
    }[stat.kind]
    return message % {"name": name}
