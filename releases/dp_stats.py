"""The issue-14 kinds' doorway into dpportal.privacy: cost, previews, noise, records, results.

Grouped sum and mean, quantiles (permute-and-flip on a public grid) and the
spread (standard deviation, variance). Kept apart from releases.dp (shared
with other work); releases.dp delegates to the functions here for these kinds.
As there, every function sees public parameters only, except `noisy_entry_stats`,
which receives a true aggregate in memory, draws the noise once and returns
only noisy, public values. The same parameters feed planning and mechanisms
(cells, L, bounds, grid, budget split), so a preview and a release agree.

Formats of the spec and result entries: /work/wt/briefs/stats14-format.md.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from dpportal import messages
from dpportal.errors import ValidationFailed
from dpportal.privacy import planning_stats, quantiles, sensitivity
from dpportal.privacy.accounting import Cost
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.grouped import grouped_mean_noise, grouped_sum_noise
from dpportal.privacy.grouped_release import release_grouped_means, release_grouped_sums
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import exact_str
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.spread import DEFAULT_SHARES, release_spread, spread_noise
from dpportal.privacy.spread_parts import spread_granularity

if TYPE_CHECKING:
    from releases.services import ReleasePlan, StatisticPlan

GROUPED_KINDS = ("grouped_sum", "grouped_mean")
SPREAD_KINDS = ("stddev", "variance")
NEW_KINDS = (*GROUPED_KINDS, "quantiles", *SPREAD_KINDS)
#: kinds whose mechanism is pure epsilon whatever the release's mechanism (no delta share)
PURE_KINDS = ("argmax", "quantiles")
GROUPED_SUM_SHARE = Fraction(1, 2)


def _frac(value: object) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(Decimal(str(value)))


def column_cells(*, kind: str, categories: list, bin_edges: list, missing: str) -> int:
    """Cells of one grouping column: categories + Other (+ Missing), or bins (+ Missing)."""
    extra = 1 if missing == "category" else 0
    if kind == "categorical":
        return len(categories) + 1 + extra
    return len(bin_edges) - 1 + extra


def group_count(stat: StatisticPlan) -> int:
    """The number of cells (groups) of a grouped or spread statistic; 1 when ungrouped."""
    out = 1
    for c in stat.group_columns:
        out *= column_cells(
            kind=c.kind, categories=c.categories, bin_edges=c.bin_edges or [], missing=c.missing
        )
    return out


def grouped_granularity(
    *, kind: str, lower: object, upper: object, epsilon: object, contribution_bound: int
) -> Fraction:
    """A grouped sum's grid, or a grouped mean's sum part's (at its epsilon share).

    A grouped sum's is the released-sum grid (rows_bound, as releases.dp.granularity
    for a sum), so its interval can cover the clipped sums (grouped.grouped_sum_noise)."""
    eps = _frac(epsilon) * (GROUPED_SUM_SHARE if kind == "grouped_mean" else 1)
    return sensitivity.sum_granularity(
        _frac(lower), _frac(upper), epsilon=eps, contribution_bound=contribution_bound,
        rows_bound=sensitivity.MAX_ROWS if kind == "grouped_sum" else None,
    )  # fmt: skip


def spec_granularity(
    *, kind: str, lower: object, upper: object, epsilon: object, contribution_bound: int
) -> str:
    """The public grid of a grouped or spread statistic, as an exact string (the frozen spec)."""
    if kind in SPREAD_KINDS:
        gamma = spread_granularity(
            _frac(lower), _frac(upper), epsilon=_frac(epsilon),
            contribution_bound=contribution_bound,
        )  # fmt: skip
    else:
        gamma = grouped_granularity(
            kind=kind, lower=lower, upper=upper, epsilon=epsilon,
            contribution_bound=contribution_bound,
        )  # fmt: skip
    return exact_str(gamma)


def statistic_cost(*, plan: ReleasePlan, stat: StatisticPlan) -> Cost:
    """(eps, delta): every part of these kinds composes to the statistic's own share."""
    delta = Fraction(0) if stat.kind in PURE_KINDS else _frac(stat.delta)
    return Cost(_frac(stat.epsilon), delta)


def _common(plan: ReleasePlan, stat: StatisticPlan, epsilon: object) -> dict[str, Any]:
    return {
        "mechanism": plan.mechanism,
        "epsilon": _frac(epsilon),
        "delta": _frac(stat.delta),
        "contribution_bound": plan.dataset.contribution_bound,
    }


def _halfwidth(plan: ReleasePlan, stat: StatisticPlan, epsilon: object, simultaneous=False):
    """The preview's half-width (value units) of one grouped or spread statistic."""
    common = _common(plan, stat, epsilon)
    confidence = _frac(plan.confidence)
    if stat.kind in SPREAD_KINDS:
        return planning_stats.spread_sd_halfwidth(
            **common, confidence=confidence, lower=_frac(stat.lower), upper=_frac(stat.upper),
            n_guess=stat.n_guess or 1, groups=group_count(stat), simultaneous=simultaneous,
        )  # fmt: skip
    return planning_stats.grouped_halfwidth(
        kind=stat.kind, **common, confidence=confidence, groups=group_count(stat),
        lower=_frac(stat.lower), upper=_frac(stat.upper), n_guess=stat.n_guess,
        simultaneous=simultaneous, sum_share=GROUPED_SUM_SHARE,
    )  # fmt: skip


def _rank_error(plan: ReleasePlan, stat: StatisticPlan, epsilon: object, k: int = 1) -> float:
    """The largest rank-error bound over the quantiles (equal shares of epsilon)."""
    share = _frac(epsilon) / len(stat.quantiles)
    return max(
        quantiles.rank_error_bound(
            epsilon=share,
            quantile=_frac(q),
            contribution_bound=plan.dataset.contribution_bound,
            candidates=len(stat.grid),
            confidence=_frac(plan.confidence),
            k=k,
        )  # fmt: skip
        for q in stat.quantiles
    )


def statistic_accuracy(*, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
    """The preview of one new-kind statistic (keys: stats14-format.md, "Preview")."""
    where = gettext("Statistic %(number)s") % {"number": stat.position + 1}
    try:
        if stat.kind == "quantiles":
            k = len(stat.quantiles)
            return {
                "cells": k,
                "halfwidth": None,
                "halfwidth_simultaneous": None,
                "n_guess": None,
                "candidates": len(stat.grid),
                "rank_error": _rank_error(plan, stat, stat.epsilon),
                "rank_error_simultaneous": _rank_error(plan, stat, stat.epsilon, k=k),
            }
        cells = group_count(stat)
        together = _halfwidth(plan, stat, stat.epsilon, True) if cells > 1 else None
        return {
            "cells": cells,
            "halfwidth": _halfwidth(plan, stat, stat.epsilon),
            "halfwidth_simultaneous": together,
            "n_guess": stat.n_guess,
        }
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("%(where)s: %(problem)s")
            % {"where": where, "problem": messages.translated(exc.records)}
        )


def epsilon_for_target(*, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
    """The smallest epsilon meeting the target: a per-cell half-width, or a rank error."""
    where = gettext("Statistic %(number)s") % {"number": stat.position + 1}
    target = _frac(stat.target_halfwidth)
    try:
        if stat.kind == "quantiles":
            return quantiles.quantiles_epsilon_for_rank_error(
                rank_error=target, quantiles=[_frac(q) for q in stat.quantiles],
                contribution_bound=plan.dataset.contribution_bound, candidates=len(stat.grid),
                confidence=_frac(plan.confidence),
            )  # fmt: skip
        return planning_stats.epsilon_for_target(lambda e: _halfwidth(plan, stat, e), target)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("%(where)s: no epsilon in range meets the target (%(problem)s).")
            % {"where": where, "problem": messages.translated(exc.records)}
        )


def statistic_noise(*, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
    """The NoiseSpecs the mechanism will use: grouped sum (1), grouped mean (sum, count),
    spread (count, sum, squares); quantiles: none (permute-and-flip adds no noise vector)."""
    if stat.kind == "quantiles":
        return ()
    common = _common(plan, stat, stat.epsilon)
    bound = common["contribution_bound"]
    lo, hi = _frac(stat.lower), _frac(stat.upper)
    try:
        if stat.kind in SPREAD_KINDS:
            gamma = spread_granularity(lo, hi, epsilon=common["epsilon"], contribution_bound=bound)
            return spread_noise(
                lower=lo, upper=hi, granularity=gamma, groups=group_count(stat), **common
            )
        gamma = grouped_granularity(
            kind=stat.kind, lower=lo, upper=hi, epsilon=stat.epsilon, contribution_bound=bound
        )
        args = dict(lower=lo, upper=hi, granularity=gamma, groups=group_count(stat), **common)
        if stat.kind == "grouped_sum":
            return (grouped_sum_noise(**args),)
        return grouped_mean_noise(**args, sum_share=GROUPED_SUM_SHARE)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("Statistic %(number)s: %(problem)s")
            % {"number": stat.position + 1, "problem": messages.translated(exc.records)}
        )


def mechanism_records(*, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
    """Records for the accountant: Laplace vectors as discrete Laplace with their l1
    sensitivity (as histograms); Gaussian vectors and quantiles as generic (eps, delta)."""
    if stat.kind == "quantiles":
        return [MechanismRecord.generic(epsilon=_frac(stat.epsilon), delta=0)]
    out = []
    for spec in statistic_noise(plan=plan, stat=stat):
        if spec.noise == "discrete_laplace":
            out.append(
                MechanismRecord.discrete_laplace(sensitivity=spec.l1_sensitivity, scale=spec.scale)
            )
        else:
            out.append(MechanismRecord.generic(epsilon=spec.epsilon, delta=spec.delta))
    return out


# --- drawing noise: receives a true aggregate, returns public values only ------------------


def _group_cells(out: dict[str, Any], axes: list) -> None:
    if not axes:
        out["cells"] = ["All rows"]
    elif len(axes) == 2:
        rows, cols = axes[0].labels, axes[1].labels
        out["cells"] = [f"{r} / {c}" for r in rows for c in cols]
        out["shape"] = [len(rows), len(cols)]
        out["row_labels"], out["col_labels"] = list(rows), list(cols)
    else:
        out["cells"] = list(axes[0].labels)


def noisy_entry_stats(
    *,
    entry: dict[str, Any],
    aggregate: Any,
    mechanism: str,
    confidence: str,
    contribution_bound: int,
    axes: list,
    rng: RandomSource | None = None,
) -> dict[str, Any]:
    """Noise one new-kind statistic's true aggregate once; return its public result entry.

    aggregate: grouped_sum: per-cell sums in grid units; grouped_mean: (sums, counts);
    quantiles: the value counts per grid cell (quantile_ranks); spread: (counts, sums,
    squares) in centred half-grid units. `axes`: the grouping cells (releases.compute.Axis).
    """
    kind = entry["kind"]
    eps, delta = _frac(entry["epsilon"]), _frac(entry["delta"])
    out: dict[str, Any] = {
        "position": entry["position"], "kind": kind, "label": entry["label"],
        "columns": [c["name"] for c in entry["columns"]],
        "group_columns": [g["name"] for g in entry.get("groups", [])],
        "category": None, "cells": [], "shape": None,
        "epsilon": entry["epsilon"], "delta": entry["delta"],
    }  # fmt: skip
    common = dict(mechanism=mechanism, epsilon=eps, delta=delta, rng=rng,
                  contribution_bound=contribution_bound)  # fmt: skip
    if kind == "quantiles":
        ranks, n = quantile_ranks(aggregate)
        result = quantiles.release_quantiles(
            ranks, n, candidates=grid_of(entry), quantiles=[_frac(q) for q in entry["quantiles"]],
            epsilon=eps, contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        out["cells"] = [quantile_label(q) for q in entry["quantiles"]]
        out["quantiles"] = list(entry["quantiles"])
        out["values"] = [exact_str(p.value) for p in result.parts]
        out["explanation"] = result.to_dict()
        return out
    _group_cells(out, axes)
    grid = dict(lower=_frac(entry["lower"]), upper=_frac(entry["upper"]),
                granularity=_frac(entry["granularity"]))  # fmt: skip
    if kind == "grouped_sum":
        result = release_grouped_sums(list(aggregate), **grid, **common)
        out["values"] = list(result.decimal_values)
    elif kind == "grouped_mean":
        result = release_grouped_means(
            list(aggregate[0]), list(aggregate[1]), **grid, **common,
            sum_share=GROUPED_SUM_SHARE, confidence=_frac(confidence),
        )  # fmt: skip
        out["values"] = [float(e) for e in result.estimates]
    elif kind in SPREAD_KINDS:
        counts, sums, squares = (list(v) for v in aggregate)
        result = release_spread(
            counts, sums, squares, **grid, **common, confidence=_frac(confidence)
        )
        key = "sd" if kind == "stddev" else "variance"
        out["values"] = [cell[key] for cell in result.cells(_frac(confidence))]
    else:  # pragma: no cover - the spec was validated at submission
        raise ValueError("unknown statistic kind")
    out["explanation"] = result.to_dict()
    return out


def quantile_ranks(cell_counts: Any) -> tuple[list[int], int]:
    """(r_j = #{x < c_j}, n) from the counts per grid cell (-inf, c_1), ..., [c_m, inf)
    (RankCounter.rank_counts: cumulative sums)."""
    cumulative = np.cumsum(np.asarray(cell_counts, dtype=np.int64))
    return [int(r) for r in cumulative[:-1]], int(cumulative[-1])


def grid_of(entry: dict[str, Any]) -> tuple[Fraction, ...]:
    """The quantiles' public candidate grid from a frozen spec entry."""
    grid = entry["grid"]
    if "edges" in grid:
        return tuple(_frac(e) for e in grid["edges"])
    return quantiles.candidate_grid(_frac(grid["lower"]), _frac(grid["upper"]), _frac(grid["step"]))


def quantile_label(q: str) -> str:
    """'Median', 'Lower quartile', 'Upper quartile', else '10th percentile' ('2.5 percentile')."""
    value = Decimal(q)
    named = {Decimal("0.5"): "Median", Decimal("0.25"): "Lower quartile",
             Decimal("0.75"): "Upper quartile"}  # fmt: skip
    if value in named:
        return named[value]
    pct = (value * 100).normalize()
    if pct != pct.to_integral_value():
        return f"{format(pct, 'f')} percentile"
    number = int(pct)
    ordinal = {1: "st", 2: "nd", 3: "rd"}
    suffix = "th" if 10 <= number % 100 <= 20 else ordinal.get(number % 10, "th")
    return f"{number}{suffix} percentile"


SPREAD_SHARES = [exact_str(s) for s in DEFAULT_SHARES]
