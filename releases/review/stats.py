"""The review document of grouped statistics, quantiles and spread.

Same typed values as releases.review.selectors builds for the other kinds
(StatisticReview), from the frozen specification only, plus `details`: the
rows a reviewer needs for these kinds (groups and their bound, the candidate
grid, the epsilon split, the rank-error bound). Noise and accuracy come from
the statistic's kind (releases.kinds), as the preview and the worker use it.

Units. A grouped sum's noise is drawn in grid units (x gamma); a spread's count
in rows, its centred sum in half grid units (x gamma/2) and its squares in
(gamma/2)**2 (dpportal.privacy.spread); quantiles add no noise to a value:
permute-and-flip over the owner's grid, utility sensitivity max(q, 1 - q) L ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, pgettext

from datasets.models import Column
from dpportal import formatting
from dpportal.privacy.joint_quantiles import joint_levels
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.quantiles import candidate_grid, quantile_sensitivity
from releases import dp, kinds
from releases.kinds import quantile_words
from releases.kinds import quantiles as quantile_kind
from releases.review import stats_text as sentences
from releases.review.text import grid_text, sensitivity_text
from releases.review.text import mechanism_text as review_mechanism_text
from releases.review.types import ColumnReview, NoiseReview, StatisticReview
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = ["add_plan_fields", "statistic_review"]


def _decimal(value: Any) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


def add_plan_fields(
    stat: StatisticPlan, entry: dict[str, Any], make_column: Callable[[dict], Column]
) -> None:
    """Set a frozen new-kind entry's grouping columns, quantiles and grid on its plan."""
    kind = kinds.REGISTRY.get(str(entry.get("kind")))
    if kind is None or kind.fields != "grouped":
        return
    groups = [make_column(d) for d in entry.get("groups") or []]
    stat.group_column = groups[0] if groups else None
    stat.group_column2 = groups[1] if len(groups) > 1 else None
    if entry["kind"] == "quantiles":
        grid = entry.get("grid") or {}
        stat.quantiles = [str(q) for q in entry.get("quantiles") or []]
        if "step" in grid:
            stat.lower, stat.upper = _decimal(grid["lower"]), _decimal(grid["upper"])
            stat.step = _decimal(grid["step"])
            stat.grid = candidate_grid(grid["lower"], grid["upper"], grid["step"])
        else:
            stat.grid = tuple(Fraction(str(e)) for e in grid.get("edges") or [])


def _noise(spec: NoiseSpec, *, part: str, unit: str, factor: Fraction) -> NoiseReview:
    """One noise draw, its scale and sensitivities converted to `unit` by `factor`."""
    gaussian = spec.mechanism == "gaussian"
    scale = Fraction(spec.sigma if gaussian else spec.scale) * factor
    l1, l2 = Fraction(spec.l1_sensitivity) * factor, Fraction(spec.l2_sensitivity) * factor
    parameter = pgettext("noise", "sigma") if gaussian else gettext("scale b")
    distribution = gettext("discrete Gaussian") if gaussian else gettext("discrete Laplace")
    return NoiseReview(
        part=part, distribution=distribution, parameter=parameter, scale=scale, unit=unit,
        l1_sensitivity=l1, l2_sensitivity=l2, granularity=factor, epsilon=spec.epsilon,
        delta=spec.delta,
        scale_text=gettext("%(distribution)s noise, %(parameter)s = %(scale)s %(unit)s")
        % {
            "distribution": distribution, "parameter": parameter,
            "scale": formatting.scale(scale), "unit": unit,
        },
        sensitivity_text=sensitivity_text(
            l1=l1, l2=l2, unit=unit, gaussian=gaussian, bound=spec.contribution_bound
        ),
    )  # fmt: skip


def noise_reviews(*, plan: ReleasePlan, stat: StatisticPlan, value_unit: str) -> tuple:
    """Every noise draw of a statistic for the review, each in the unit its kind states
    (releases.kinds: part_units), so the review and the published result agree."""
    kind = kinds.get(stat.kind)
    specs = kind.noise(plan=plan, stat=stat)
    units = kind.part_units(granularity=kind.planned_granularity(plan=plan, stat=stat))
    name = stat.column.name if stat.column is not None else ""
    part_words = {
        "": "",
        "sum": pgettext("noise part", "sum"),
        "count": pgettext("noise part", "count"),
    }
    if kind.aggregate == "spread":
        part_words["sum"] = gettext("centred sum")
        part_words["squares"] = gettext("sum of squares")
    unit_words = {
        "rows": gettext("rows"),
        "value": value_unit,
        "value²": gettext("squared units of %(name)s") % {"name": name},
    }
    if kind.aggregate == "persons":
        unit_words["rows"] = gettext("persons")
    out = tuple(
        _noise(spec, part=part_words[part], unit=unit_words[unit], factor=factor)
        for spec, (part, unit, factor) in zip(specs, units, strict=True)
    )
    if kind.aggregate == "persons":  # the unit is the person, whatever rows it has
        said = gettext(
            "1 person: adding or removing one person (all of their rows) changes one count "
            "by 1, whatever the limit per person"
        )
        out = tuple(replace(n, sensitivity_text=said) for n in out)
    return out


def _quantile_details(
    stat: StatisticPlan, plan: ReleasePlan, preview: dict[str, Any]
) -> list[tuple[str, str, str]]:
    k = len(stat.quantiles)
    levels = joint_levels(k)
    confidence = formatting.percent(plan.confidence)
    one, together = preview["rank_error"], preview["rank_error_simultaneous"]
    points, ends = quantile_kind.budget(Fraction(stat.epsilon))
    bound = plan.dataset.contribution_bound
    sens = "; ".join(
        gettext("%(q)s: %(ranks)s ranks")
        % {"q": q, "ranks": formatting.scale(quantile_sensitivity(Fraction(q), bound))}
        for q in stat.quantiles
    )
    reach = gettext("about ±%(ranks)s ranks") % {
        "ranks": formatting.halfwidth(preview.get("interval_rank_reach"))
    }
    if preview.get("interval_value_reach") is not None:
        reach += " " + gettext("(about ±%(width)s in the data's units, a planning figure)") % {
            "width": formatting.halfwidth(preview["interval_value_reach"])
        }
    return [
        (gettext("Quantiles"), ", ".join(stat.quantiles), "quantiles"),
        (gettext("Candidate grid"), sentences.grid_words(stat), "grid"),
        (
            gettext("Epsilon split"),
            gettext(
                "half (%(points)s) to the quantiles, drawn jointly in %(levels)s levels of "
                "%(level)s each (the recursive algorithm of Kaplan, Schnapp and Stemmer, 2022: "
                "the selections of one level see disjoint rows); half (%(ends)s) to their "
                "confidence intervals, %(count)s selections of %(end)s each (sequential "
                "composition)"
            )
            % {
                "points": formatting.budget(points),
                "levels": levels,
                "level": formatting.budget(points / levels),
                "ends": formatting.budget(ends),
                "count": 2 * k,
                "end": formatting.budget(ends / (2 * k)),
            },
            "split",
        ),  # fmt: skip
        (
            gettext("Sensitivity of the rank utility"),
            gettext("max(q, 1 - q) × L per quantile: %(sensitivities)s") % {"sensitivities": sens},
            "sensitivity",
        ),  # fmt: skip
        (
            gettext("Rank-error bound"),
            gettext(
                "permute-and-flip's exact worst-case tail for each selection, added up over the "
                "levels on a quantile's path: with probability at least 1 - β the released "
                "value's rank is within t of the target rank, beyond the grid's own resolution"
            ),
            "rank-bound",
        ),  # fmt: skip
        (
            gettext("Rank error"),
            gettext(
                "Rank error ±%(ranks)s ranks for each quantile: with %(confidence)s confidence at "
                "most that many values lie between a released value and the true quantile, "
                "beyond the grid's own step"
            )
            % {"ranks": formatting.halfwidth(one), "confidence": confidence}
            + "; "
            + gettext("±%(ranks)s ranks for all %(k)s quantiles at once")
            % {"ranks": formatting.halfwidth(together), "k": k},
            "rank-error",
        ),  # fmt: skip
        (
            gettext("Confidence interval"),
            gettext(
                "for each quantile two grid points, one at most the true quantile and one at "
                "least it, each wrong with probability at most β/2 whatever the data (one-sided "
                "permute-and-flip over the grid's cells, after Drechsler, Globus-Harris, "
                "McMillan, Sarathy and Smith, 2022): the interval holds the true quantile with "
                "%(confidence)s confidence and is shown in the data's units; its ends planned at "
                "%(reach)s from the quantile"
            )
            % {"confidence": confidence, "reach": reach},
            "interval",
        ),  # fmt: skip
    ]


def _details(
    stat: StatisticPlan, plan: ReleasePlan, cells: int, preview: dict[str, Any]
) -> list[tuple[str, str, str]]:
    if stat.kind == "quantiles":
        return _quantile_details(stat, plan, preview)
    out = [(gettext("Groups"), sentences.groups_text(stat, cells), "groups")]
    if stat.group_columns:
        out.append((gettext("Group bound"), sentences.bound_text(stat, plan), "group-bound"))
    split = gettext("Epsilon split")
    if stat.kind == "grouped_mean":
        out.append((split, gettext("sum 1/2, count 1/2 of the statistic's epsilon"), "split"))
    if kinds.get(stat.kind).aggregate == "spread":
        out.append((split, gettext("count 1/4, centred sum 1/4, sum of squares 1/2"), "split"))
        out.append((gettext("Interval"), gettext(
            "each part at confidence 1 - β/3, combined exactly by interval arithmetic; a negative "
            "variance estimate is clamped to 0 and the public page says so"
        ), "interval"))  # fmt: skip
    return out


def _texts(stat: StatisticPlan, plan: ReleasePlan, preview: dict[str, Any]) -> dict[str, Any]:
    """halfwidth, unit and their sentences (quantiles: data units and ranks)."""
    if stat.kind == "quantiles":
        # the data-unit planning figure beside the rank error (releases.kinds.quantiles);
        # the rank error's own statement is a detail row (_quantile_details)
        one, together = preview["rank_error"], preview["rank_error_simultaneous"]
        return {
            "unit": gettext("ranks"), "halfwidth": one, "halfwidth_simultaneous": together,
            "halfwidth_text": quantile_words.planning_text(preview),
            "halfwidth_simultaneous_text": quantile_words.planning_text(
                preview, simultaneous=True
            ),
        }  # fmt: skip
    unit = sentences.units_of(stat.column.name)
    one, together = preview["halfwidth"], preview["halfwidth_simultaneous"] or preview["halfwidth"]
    guess = ""
    if stat.n_guess:
        rows = formatting.integer(stat.n_guess)
        if stat.kind == "grouped_mean":
            guess = gettext(
                " if about %(rows)s rows have a value in the smallest group (the owner's planning "
                "guess)"
            ) % {"rows": rows}
        else:
            guess = gettext(
                " if about %(rows)s rows have a value per cell (the owner's planning guess)"
            ) % {"rows": rows}
        if kinds.get(stat.kind).aggregate == "spread":
            guess += gettext(
                ", for the standard deviation, with a spread guessed at a quarter of the range"
            )
    width = {"width": formatting.halfwidth(one), "unit": unit, "guess": guess}
    if preview["cells"] > 1:
        one_text = gettext("±%(width)s %(unit)s for each group%(guess)s") % width
        together_text = gettext("±%(width)s %(unit)s for all %(cells)s groups at once") % {
            "width": formatting.halfwidth(together),
            "unit": unit,
            "cells": formatting.integer(preview["cells"]),
        }
    else:
        one_text = gettext("±%(width)s %(unit)s for the value%(guess)s") % width
        together_text = gettext("±%(width)s %(unit)s (one value: the same interval)") % {
            "width": formatting.halfwidth(together),
            "unit": unit,
        }
    return {
        "unit": unit, "halfwidth": one, "halfwidth_simultaneous": together,
        "halfwidth_text": one_text,
        "halfwidth_simultaneous_text": together_text,
    }  # fmt: skip


def statistic_review(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    """The review of one grouped, quantile or spread statistic."""
    specs = dp.statistic_noise(plan=plan, stat=stat)
    preview = dp.statistic_accuracy(plan=plan, stat=stat)
    value_unit = sentences.units_of(stat.column.name)
    noises = noise_reviews(plan=plan, stat=stat, value_unit=value_unit)
    cells = int(preview["cells"])
    texts = _texts(stat, plan, preview)
    pure = stat.kind == "quantiles"
    if stat.kind == "quantiles":
        clip = gettext("Not applicable: a quantile is chosen among the candidates (%(grid)s).") % {
            "grid": sentences.grid_words(stat)
        }
        estimates = gettext(
            "The %(quantiles)s quantile(s) of %(name)s: for each, the grid value whose rank is "
            "closest to the target rank; only the chosen values are released, never a rank or "
            "the number of rows."
        ) % {"quantiles": ", ".join(stat.quantiles), "name": stat.column.name}
        mechanism_text = gettext(
            "Permute-and-flip (McKenna & Sheldon 2020) over the public grid, sampled exactly "
            "(rational utilities, exact Bernoulli coins, candidate order from the CSPRNG): pure "
            "epsilon-differential privacy"
        )
    else:
        gamma = Fraction(specs[0].granularity)
        lo, hi = (formatting.significant(x, 30) for x in (stat.lower, stat.upper))
        clip = gettext("%(lo)s to %(hi)s; values are rounded to a public grid of %(grid)s.") % {
            "lo": lo,
            "hi": hi,
            "grid": grid_text(gamma),
        }
        estimates = sentences.estimates(stat)
        mechanism_text = review_mechanism_text(stat.kind, plan.mechanism)
    return StatisticReview(
        number=stat.position + 1,
        label=stat.label,
        kind=stat.kind,
        kind_text=sentences.kind_text(stat.kind),
        estimates_text=estimates,
        columns=tuple(ColumnReview.of(c) for c in [stat.column, *stat.group_columns]),
        category="",
        clip_lower=None if pure else stat.lower,
        clip_upper=None if pure else stat.upper,
        clip_text=clip,
        cells=cells,
        out_of_range_text=sentences.out_of_range(stat),
        missing_text=sentences.missing(stat),
        mechanism="permute_and_flip" if pure else plan.mechanism,
        mechanism_text=mechanism_text,
        epsilon=stat.epsilon,
        delta=Decimal(0) if pure else stat.delta,
        noise=noises,
        n_guess=stat.n_guess,
        details=tuple(_details(stat, plan, cells, preview)),
        **texts,
    )
