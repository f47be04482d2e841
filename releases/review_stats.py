"""The review document of grouped statistics, quantiles and spread (issue 14).

Same typed values as releases.review_selectors builds for the other kinds
(StatisticReview), from the frozen specification only, plus `details`: the
rows a reviewer needs for these kinds (groups and their bound, the candidate
grid, the epsilon split, the rank-error bound). Noise and accuracy come from
releases.dp (dp_stats), the functions the preview and the worker use.

Units. A grouped sum's noise is drawn in grid units (x gamma); a spread's count
in rows, its centred sum in half grid units (x gamma/2) and its squares in
(gamma/2)**2 (dpportal.privacy.spread); quantiles add no noise to a value:
permute-and-flip over the owner's grid, utility sensitivity max(q, 1 - q) L ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from datasets.models import Column
from dpportal import formatting
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.quantiles import candidate_grid, quantile_sensitivity
from releases import dp
from releases.dp_stats import NEW_KINDS, SPREAD_KINDS
from releases.review_text import grid_text, sensitivity_text
from releases.review_text import mechanism_text as review_mechanism_text
from releases.review_types import ColumnReview, NoiseReview, StatisticReview
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = ["NEW_KINDS", "add_plan_fields", "statistic_review"]

KIND_TEXT = {
    "grouped_sum": "Sum of a numeric column by group, clipped to a range",
    "grouped_mean": "Mean of a numeric column by group, clipped to a range",
    "quantiles": "Median and quantiles (permute-and-flip over a public grid)",
    "stddev": "Standard deviation of a numeric column, clipped to a range",
    "variance": "Variance of a numeric column, clipped to a range",
}
SPREAD_PARTS = ("count", "sum", "squares")


def _decimal(value: Any) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


def add_plan_fields(
    stat: StatisticPlan, entry: dict[str, Any], make_column: Callable[[dict], Column]
) -> None:
    """Set a frozen new-kind entry's grouping columns, quantiles and grid on its plan."""
    if entry.get("kind") not in NEW_KINDS:
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
    parameter = "sigma" if gaussian else "scale b"
    distribution = "discrete Gaussian" if gaussian else "discrete Laplace"
    return NoiseReview(
        part=part, distribution=distribution, parameter=parameter, scale=scale, unit=unit,
        l1_sensitivity=l1, l2_sensitivity=l2, granularity=factor, epsilon=spec.epsilon,
        delta=spec.delta,
        scale_text=f"{distribution} noise, {parameter} = {formatting.scale(scale)} {unit}",
        sensitivity_text=sensitivity_text(
            l1=l1, l2=l2, unit=unit, gaussian=gaussian, bound=spec.contribution_bound
        ),
    )  # fmt: skip


def _noises(stat: StatisticPlan, specs: tuple[NoiseSpec, ...], unit: str) -> tuple:
    if stat.kind == "grouped_sum":
        return (_noise(specs[0], part="", unit=unit, factor=Fraction(specs[0].granularity)),)
    if stat.kind == "grouped_mean":
        return (
            _noise(specs[0], part="sum", unit=unit, factor=Fraction(specs[0].granularity)),
            _noise(specs[1], part="count", unit="rows", factor=Fraction(1)),
        )
    if stat.kind in SPREAD_KINDS:
        half = Fraction(specs[0].granularity) / 2
        name = stat.column.name
        return (
            _noise(specs[0], part="count", unit="rows", factor=Fraction(1)),
            _noise(specs[1], part="centred sum", unit=f"units of {name}", factor=half),
            _noise(specs[2], part="sum of squares", unit=f"squared units of {name}",
                   factor=half * half),
        )  # fmt: skip
    return ()


def _groups_text(stat: StatisticPlan, cells: int) -> str:
    if not stat.group_columns:
        return "One cell: all rows."
    names = " × ".join(c.name for c in stat.group_columns)
    return (
        f"{formatting.integer(cells)} groups: every combination of {names} (declared "
        "categories or bins, plus “Other” for undeclared values and “Missing” where the "
        "column counts missing values), as a histogram's cells."
    )


def _bound_text(stat: StatisticPlan, plan: ReleasePlan) -> str:
    bound = plan.dataset.contribution_bound
    worst = formatting.significant(max(abs(stat.lower), abs(stat.upper)), 30)
    return (
        f"No per-group bound: a person's L = {formatting.integer(bound)} row(s) may fall in L "
        f"different groups, so the group sums move by at most L × {worst} in total (l1) and "
        "the group counts by at most L."
    )


def _grid_words(stat: StatisticPlan) -> str:
    m = formatting.integer(len(stat.grid))
    if stat.step is not None:
        return (
            f"every {formatting.significant(stat.step, 30)} from "
            f"{formatting.significant(stat.lower, 30)} to {formatting.significant(stat.upper, 30)}"
            f": {m} candidates, declared by the owner (never read from the data)"
        )
    edges = ", ".join(formatting.significant(e, 30) for e in stat.grid)
    return f"the column's declared bin edges {edges}: {m} candidates"


def _quantile_details(stat: StatisticPlan, plan: ReleasePlan) -> list[tuple[str, str, str]]:
    k = len(stat.quantiles)
    share = Fraction(stat.epsilon) / k
    bound = plan.dataset.contribution_bound
    sens = "; ".join(
        f"{q}: {formatting.scale(quantile_sensitivity(Fraction(q), bound))} ranks"
        for q in stat.quantiles
    )
    return [
        ("Quantiles", ", ".join(stat.quantiles), "quantiles"),
        ("Candidate grid", _grid_words(stat), "grid"),
        (
            "Epsilon split",
            f"equal shares: {k} × {formatting.budget(share)} (sequential composition)",
            "split",
        ),  # fmt: skip
        (
            "Sensitivity of the rank utility",
            f"max(q, 1 - q) × L per quantile: {sens}",
            "sensitivity",
        ),  # fmt: skip
        (
            "Rank-error bound",
            "t = (2 Δu / ε_i) ln(m / β) ranks per quantile, ln(k m / β) for "
            "all at once: with probability at least 1 - β the chosen candidate's rank is within t "
            "of the target rank, beyond the grid's own resolution",
            "rank-bound",
        ),  # fmt: skip
    ]


def _details(stat: StatisticPlan, plan: ReleasePlan, cells: int) -> list[tuple[str, str, str]]:
    if stat.kind == "quantiles":
        return _quantile_details(stat, plan)
    out = [("Groups", _groups_text(stat, cells), "groups")]
    if stat.group_columns:
        out.append(("Group bound", _bound_text(stat, plan), "group-bound"))
    if stat.kind == "grouped_mean":
        out.append(("Epsilon split", "sum 1/2, count 1/2 of the statistic's epsilon", "split"))
    if stat.kind in SPREAD_KINDS:
        out.append(("Epsilon split", "count 1/4, centred sum 1/4, sum of squares 1/2", "split"))
        out.append(("Interval", "each part at confidence 1 - β/3, combined exactly by interval "
                    "arithmetic; a negative variance estimate is clamped to 0 and the public "
                    "page says so", "interval"))  # fmt: skip
    return out


def _texts(stat: StatisticPlan, plan: ReleasePlan, preview: dict[str, Any]) -> dict[str, Any]:
    """halfwidth, unit and their sentences (ranks for quantiles)."""
    confidence = formatting.percent(plan.confidence)
    if stat.kind == "quantiles":
        one, together = preview["rank_error"], preview["rank_error_simultaneous"]
        return {
            "unit": "ranks", "halfwidth": one, "halfwidth_simultaneous": together,
            "halfwidth_text": (
                f"Rank error ±{formatting.halfwidth(one)} ranks for each quantile: with "
                f"{confidence} confidence at most that many values lie between a released value "
                "and the true quantile, beyond the grid's own step"
            ),
            "halfwidth_simultaneous_text": (
                f"±{formatting.halfwidth(together)} ranks for all {len(stat.quantiles)} "
                "quantiles at once"
            ),
        }  # fmt: skip
    unit = f"units of {stat.column.name}"
    one, together = preview["halfwidth"], preview["halfwidth_simultaneous"] or preview["halfwidth"]
    guess = ""
    if stat.n_guess:
        rows = formatting.integer(stat.n_guess)
        where = "in the smallest group" if stat.kind == "grouped_mean" else "per cell"
        guess = f" if about {rows} rows have a value {where} (the owner's planning guess)"
        if stat.kind in SPREAD_KINDS:
            guess += ", for the standard deviation, with a spread guessed at a quarter of the range"
    what = "each group" if preview["cells"] > 1 else "the value"
    return {
        "unit": unit, "halfwidth": one, "halfwidth_simultaneous": together,
        "halfwidth_text": f"±{formatting.halfwidth(one)} {unit} for {what}{guess}",
        "halfwidth_simultaneous_text": (
            f"±{formatting.halfwidth(together)} {unit} for all "
            f"{formatting.integer(preview['cells'])} groups at once"
            if preview["cells"] > 1
            else f"±{formatting.halfwidth(together)} {unit} (one value: the same interval)"
        ),
    }  # fmt: skip


def _missing(stat: StatisticPlan) -> str:
    out = [f"Rows where {stat.column.name} is missing are left out."]
    for c in stat.group_columns:
        if c.missing == Column.Missing.CATEGORY:
            out.append(f"Rows where {c.name} is missing are in the “Missing” group.")
        else:
            out.append(f"Rows where {c.name} is missing are dropped.")
    return " ".join(out)


def _out_of_range(stat: StatisticPlan) -> str:
    name = stat.column.name
    if stat.kind == "quantiles":
        return (
            f"No clipping: values of {name} below the grid's first candidate rank below every "
            "candidate, values above its last rank above every one."
        )
    lo, hi = (formatting.significant(x, 30) for x in (stat.lower, stat.upper))
    out = [f"Values of {name} below {lo} count as {lo}, above {hi} as {hi} (clipped)."]
    for c in stat.group_columns:
        if c.kind == Column.Kind.CATEGORICAL:
            out.append(f"Values of {c.name} that are not declared go to the “Other” group.")
        else:
            out.append(f"Values of {c.name} outside the bins are clamped into the edge bins.")
    return " ".join(out)


def statistic_review(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    """The review of one grouped, quantile or spread statistic."""
    specs = dp.statistic_noise(plan=plan, stat=stat)
    preview = dp.statistic_accuracy(plan=plan, stat=stat)
    value_unit = f"units of {stat.column.name}"
    noises = _noises(stat, specs, value_unit)
    cells = int(preview["cells"])
    texts = _texts(stat, plan, preview)
    pure = stat.kind == "quantiles"
    if stat.kind == "quantiles":
        clip = f"Not applicable: a quantile is chosen among the candidates ({_grid_words(stat)})."
        estimates = (
            f"The {', '.join(stat.quantiles)} quantile(s) of {stat.column.name}: for each, the "
            "grid value whose rank is closest to the target rank; only the chosen values are "
            "released, never a rank or the number of rows."
        )
        mechanism_text = (
            "Permute-and-flip (McKenna & Sheldon 2020) over the public grid, sampled exactly "
            "(rational utilities, exact Bernoulli coins, candidate order from the CSPRNG): pure "
            "epsilon-differential privacy"
        )
    else:
        gamma = Fraction(specs[0].granularity)
        lo, hi = (formatting.significant(x, 30) for x in (stat.lower, stat.upper))
        clip = f"{lo} to {hi}; values are rounded to a public grid of {grid_text(gamma)}."
        what = {"grouped_sum": "sum", "grouped_mean": "mean", "stddev": "population standard "
                "deviation", "variance": "population variance"}[stat.kind]  # fmt: skip
        groups = " and ".join(c.name for c in stat.group_columns)
        estimates = f"The {what} of {stat.column.name}" + (
            f" in each group of {groups}" if groups else " over all rows"
        )
        estimates += ", each value clipped to the range."
        if stat.kind == "grouped_mean":
            estimates += " Noisy sum / noisy count per group; the counts are not published."
        mechanism_text = review_mechanism_text(stat.kind, plan.mechanism)
    return StatisticReview(
        number=stat.position + 1,
        label=stat.label,
        kind=stat.kind,
        kind_text=KIND_TEXT[stat.kind],
        estimates_text=estimates,
        columns=tuple(ColumnReview.of(c) for c in [stat.column, *stat.group_columns]),
        category="",
        clip_lower=None if pure else stat.lower,
        clip_upper=None if pure else stat.upper,
        clip_text=clip,
        cells=cells,
        out_of_range_text=_out_of_range(stat),
        missing_text=_missing(stat),
        mechanism="permute_and_flip" if pure else plan.mechanism,
        mechanism_text=mechanism_text,
        epsilon=stat.epsilon,
        delta=Decimal(0) if pure else stat.delta,
        noise=noises,
        n_guess=stat.n_guess,
        details=tuple(_details(stat, plan, cells)),
        **texts,
    )
