"""The releases app's one doorway into dpportal.privacy (noise, accuracy, cost).

Planning (the preview, solving epsilon for a target half-width) goes through
dpportal.privacy.planning, which builds the same NoiseSpec the mechanisms use;
this module passes it exactly the parameters the mechanisms will get (cells,
L, bounds, mean split), so a preview and a release cannot disagree.
Nothing here sees data except `noisy_entry`, which receives a true aggregate
in memory, draws the noise once and returns only public, noisy numbers.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from dpportal import messages
from dpportal.errors import ValidationFailed
from dpportal.privacy import accounting, mechanisms, noise, planning, sensitivity
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import (
    MechanismRecord,
    merge_records,
    records_from_explanation,
)
from dpportal.privacy.params import exact_str
from dpportal.privacy.rng import RandomSource
from releases import dp_stats

if TYPE_CHECKING:
    from releases.services import ReleasePlan, StatisticPlan

MEAN_SUM_SHARE = Fraction(1, 2)
PURE_KINDS = dp_stats.PURE_KINDS


def _frac(value: object) -> Fraction:
    return Fraction(Decimal(str(value))) if not isinstance(value, Fraction) else value


def granularity(
    *, kind: str, lower: object, upper: object, epsilon: object, contribution_bound: int
) -> str:
    """The public grid of a sum or a mean's sum part, as an exact string.

    sensitivity.sum_granularity at the epsilon the sum is noised with: the
    statistic's epsilon, for a mean its sum share (MEAN_SUM_SHARE), the same
    rule planning applies, so the preview and the computation use one grid.
    """
    eps = _frac(epsilon) * (MEAN_SUM_SHARE if kind == "mean" else 1)
    rows_bound = sensitivity.MAX_ROWS if kind == "sum" else None  # see sum_granularity
    return exact_str(
        sensitivity.sum_granularity(
            _frac(lower),
            _frac(upper),
            epsilon=eps,
            contribution_bound=contribution_bound,
            rows_bound=rows_bound,
        )
    )


def release_cost(*, plan: ReleasePlan) -> tuple[Decimal, Decimal]:
    """The release's (epsilon, delta) by sequential composition (accounting.release_cost)."""
    costs = [
        dp_stats.statistic_cost(plan=plan, stat=s)
        if s.kind in dp_stats.NEW_KINDS
        else accounting.statistic_cost(
            kind=s.kind,
            mechanism="laplace" if s.kind == "argmax" else plan.mechanism,
            epsilon=s.epsilon,
            delta=s.delta,
            cells=1,
        )
        for s in plan.statistics
    ]
    total = accounting.release_cost(costs)
    # shares are decimals, so the exact total is a finite decimal
    return (
        Decimal(total.epsilon.numerator) / Decimal(total.epsilon.denominator),
        Decimal(total.delta.numerator) / Decimal(total.delta.denominator),
    )


def _cells(stat: StatisticPlan) -> int:
    """The cells the mechanism will noise: the same count as compute's readers produce."""

    def size(column) -> int:
        missing = 1 if column.missing == "category" else 0
        if column.kind == "categorical":
            return len(column.categories) + 1 + missing
        return len(column.bin_edges) - 1 + missing

    if stat.kind == "histogram":
        out = 1
        for c in stat.columns:
            out *= size(c)
        return out
    if stat.kind == "argmax":
        return len(stat.column.categories)  # Report Noisy Max over the declared ones only
    return 1


def _planning_parameters(*, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
    """The public parameters of `stat` exactly as the mechanism will see them.

    Same mechanism (Report Noisy Max is Laplace), same L, same cell count, same
    bounds and the same mean split; planning derives the same grid from them
    (sensitivity.sum_granularity at the sum's epsilon, for a mean its share).
    """
    params: dict[str, Any] = {
        "kind": stat.kind,
        "mechanism": "laplace" if stat.kind == "argmax" else plan.mechanism,
        "delta": 0 if stat.kind == "argmax" else stat.delta,
        "confidence": _frac(plan.confidence),
        "contribution_bound": plan.dataset.contribution_bound,
        "cells": _cells(stat),
    }
    if stat.kind in ("sum", "mean"):
        params["lower"], params["upper"] = _frac(stat.lower), _frac(stat.upper)
    if stat.kind == "mean":
        params["n_guess"] = stat.n_guess or 1
        params["sum_share"] = MEAN_SUM_SHARE
    return params


def statistic_accuracy(*, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
    """The preview of one statistic: cells, half-widths (planning.statistic_halfwidth).

    Per cell, and for a histogram all cells at once. A mean's half-width is the
    farthest an end of its interval lies from the true mean at the owner's
    planning guess n (see dpportal.privacy.planning). New kinds: releases.dp_stats.
    """
    if stat.kind in dp_stats.NEW_KINDS:
        return dp_stats.statistic_accuracy(plan=plan, stat=stat)
    params = _planning_parameters(plan=plan, stat=stat)
    try:
        per_cell = planning.statistic_halfwidth(**params, epsilon=stat.epsilon)
        simultaneous = None
        if stat.kind == "histogram" and params["cells"] > 1:
            simultaneous = planning.statistic_halfwidth(
                **params, epsilon=stat.epsilon, simultaneous=True
            )
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("Statistic %(number)s: %(problem)s")
            % {"number": stat.position + 1, "problem": messages.translated(exc.records)}
        )
    return {
        "cells": params["cells"],
        "halfwidth": per_cell,
        "halfwidth_simultaneous": simultaneous,
        "n_guess": stat.n_guess,
    }


def statistic_noise(*, plan: ReleasePlan, stat: StatisticPlan) -> tuple[noise.NoiseSpec, ...]:
    """The exact noise the mechanism will give `stat` (a mean: its sum's, then its count's).

    The NoiseSpecs dpportal.privacy.noise builds from `_planning_parameters`, as
    planning.statistic_halfwidth does: sensitivities, scale or sigma (in grid units
    for a sum, with the same granularity) for the review document. Public only.
    New kinds: releases.dp_stats.statistic_noise (quantiles: none).
    """
    if stat.kind in dp_stats.NEW_KINDS:
        return dp_stats.statistic_noise(plan=plan, stat=stat)
    params = _planning_parameters(plan=plan, stat=stat)
    bound, cells = params["contribution_bound"], params["cells"]
    common = {"mechanism": params["mechanism"], "epsilon": _frac(stat.epsilon)}
    common["delta"] = params["delta"]
    try:
        if stat.kind == "argmax":
            return (
                noise.argmax_noise(
                    epsilon=common["epsilon"], contribution_bound=bound, cells=cells
                ),
            )
        if stat.kind in ("count", "histogram"):
            return (
                noise.count_noise(
                    **common, contribution_bound=bound, cells=cells, statistic=stat.kind
                ),
            )
        lower, upper = params["lower"], params["upper"]
        share = params.get("sum_share", Fraction(1))
        gamma = sensitivity.sum_granularity(
            lower, upper, epsilon=common["epsilon"] * share, contribution_bound=bound,
            rows_bound=sensitivity.MAX_ROWS if stat.kind == "sum" else None,
        )  # fmt: skip
        if stat.kind == "sum":
            return (
                noise.sum_noise(
                    lower=lower, upper=upper, granularity=gamma, contribution_bound=bound, **common
                ),
            )
        return noise.mean_noise(
            lower=lower, upper=upper, granularity=gamma, contribution_bound=bound,
            sum_share=share, **common,
        )  # fmt: skip
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("Statistic %(number)s: %(problem)s")
            % {"number": stat.position + 1, "problem": messages.translated(exc.records)}
        )


def statistic_records(*, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
    """One statistic's mechanism records, from the NoiseSpecs it will use (`statistic_noise`)."""
    if stat.kind in dp_stats.NEW_KINDS:
        return list(dp_stats.mechanism_records(plan=plan, stat=stat))
    return [
        record
        for spec in statistic_noise(plan=plan, stat=stat)
        for record in records_from_explanation(spec.describe())
    ]


def release_mechanisms(*, plan: ReleasePlan) -> list[dict[str, Any]]:
    """The release's mechanism records (exact parameters) for the tight accountant.

    From the same NoiseSpecs the mechanisms will use (`statistic_noise`), equal
    mechanisms merged (self-composition), as JSON dicts (MechanismRecord.to_dict).
    """
    records = [r for stat in plan.statistics for r in statistic_records(plan=plan, stat=stat)]
    return [r.to_dict() for r in merge_records(records)]


def planning_key(*, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
    """Everything `statistic_accuracy`, `statistic_noise` and `statistic_records` read of
    (plan, stat), hashable: equal keys give equal results (for memoising a sweep).
    The new kinds read more than the planning parameters (groups, quantiles, grid):
    keyed by their position in the plan, so they are never shared."""
    if stat.kind in dp_stats.NEW_KINDS:
        return ("position", stat.position, _frac(stat.epsilon))
    params = _planning_parameters(plan=plan, stat=stat)
    return (tuple(sorted(params.items())), _frac(stat.epsilon))


def epsilon_for_target(*, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
    """The smallest epsilon whose per-cell half-width is <= the statistic's target.

    planning.epsilon_for_halfwidth (3 significant digits, rounded up, over
    planning.EPSILON_RANGE) with the parameters the mechanism will use. New kinds:
    releases.dp_stats.epsilon_for_target (quantiles: a target rank error).
    """
    if stat.kind in dp_stats.NEW_KINDS:
        return dp_stats.epsilon_for_target(plan=plan, stat=stat)
    params = _planning_parameters(plan=plan, stat=stat)
    target = _frac(stat.target_halfwidth)
    where = gettext("Statistic %(number)s") % {"number": stat.position + 1}
    try:
        high = planning.EPSILON_RANGE[1]
        if planning.statistic_halfwidth(**params, epsilon=high) > target:
            raise ValidationFailed(
                gettext(
                    "%(where)s: the target half-width %(target)s would need an epsilon above "
                    "%(high)s; choose a wider target."
                )
                % {"where": where, "target": f"{float(target):g}", "high": high}
            )
        return planning.epsilon_for_halfwidth(**params, halfwidth=target)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("%(where)s: %(problem)s")
            % {"where": where, "problem": messages.translated(exc.records)}
        )


# --- drawing noise: the only function that receives a true aggregate ------------------


def noisy_entry(
    *,
    entry: dict[str, Any],
    aggregate: Any,
    mechanism: str,
    confidence: str,
    contribution_bound: int,
    cells: list,
    rng: RandomSource | None = None,
) -> dict[str, Any]:
    """Noise one statistic's true aggregate once; return its public result entry.

    The true aggregate is used here and dropped: the entry holds noisy values and
    the explanation (public parameters) only. `rng`: the OS CSPRNG when None; tests
    alone pass a seeded source (dpportal.privacy.rng.SeededTestRandom).
    """
    kind = entry["kind"]
    if kind in dp_stats.NEW_KINDS:
        return dp_stats.noisy_entry_stats(
            entry=entry, aggregate=aggregate, mechanism=mechanism, confidence=confidence,
            contribution_bound=contribution_bound, axes=cells, rng=rng,
        )  # fmt: skip
    eps = Fraction(Decimal(entry["epsilon"]))
    delta = Fraction(Decimal(entry["delta"]))
    out: dict[str, Any] = {
        "position": entry["position"],
        "kind": kind,
        "label": entry["label"],
        "columns": [c["name"] for c in entry["columns"]],
        "category": entry.get("category"),
        "cells": [],
        "shape": None,
        "epsilon": entry["epsilon"],
        "delta": entry["delta"],
    }
    if kind == "count":
        result = mechanisms.release_counts(
            int(aggregate), mechanism=mechanism, epsilon=eps, delta=delta,
            contribution_bound=contribution_bound,
            rng=rng,
        )  # fmt: skip
        out["cells"] = [entry.get("category") or "All rows"]
        out["values"] = list(result.values)
    elif kind == "histogram":
        result = mechanisms.release_counts(
            np.asarray(aggregate, dtype=np.int64), mechanism=mechanism, epsilon=eps, delta=delta,
            contribution_bound=contribution_bound,
            rng=rng,
        )  # fmt: skip
        if len(cells) == 2:
            rows, cols = cells[0].labels, cells[1].labels
            out["cells"] = [f"{r} / {c}" for r in rows for c in cols]
            out["shape"] = [len(rows), len(cols)]
            out["row_labels"], out["col_labels"] = rows, cols
        else:
            out["cells"] = list(cells[0].labels)
        out["values"] = list(result.values)
    elif kind == "sum":
        result = mechanisms.release_sum(
            int(aggregate), lower=Fraction(Decimal(entry["lower"])),
            upper=Fraction(Decimal(entry["upper"])), granularity=entry["granularity"],
            mechanism=mechanism, epsilon=eps, delta=delta, contribution_bound=contribution_bound,
            rng=rng,
        )  # fmt: skip
        out["cells"] = ["Sum"]
        out["values"] = list(result.decimal_values)
    elif kind == "mean":
        result = mechanisms.release_mean(
            int(aggregate[0]), int(aggregate[1]), lower=Fraction(Decimal(entry["lower"])),
            upper=Fraction(Decimal(entry["upper"])), granularity=entry["granularity"],
            mechanism=mechanism, epsilon=eps, delta=delta, contribution_bound=contribution_bound,
            sum_share=MEAN_SUM_SHARE, confidence=Fraction(Decimal(confidence)),
            rng=rng,
        )  # fmt: skip
        out["cells"] = ["Mean"]
        out["values"] = [float(result.estimate)]
    elif kind == "argmax":
        result = mechanisms.release_argmax(
            np.asarray(aggregate, dtype=np.int64), epsilon=eps,
            contribution_bound=contribution_bound,
            rng=rng,
        )  # fmt: skip
        labels = cells[0].labels
        out["cells"] = list(labels[: result.spec.cells])
        out["values"] = []
        out["argmax"] = {"index": result.index, "label": labels[result.index]}
    else:  # pragma: no cover - the spec was validated at submission
        raise ValueError("unknown statistic kind")
    out["explanation"] = result.to_dict()
    return out
