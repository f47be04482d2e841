"""Quantiles of one numeric column: each chosen among public candidates by exact
permute-and-flip (dpportal.privacy.quantiles), pure epsilon-DP whatever the release's
mechanism; k quantiles each spend epsilon / k. No noise is added to a value, so a
quantile has no value interval: its accuracy is a rank error in records.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from budgets.amounts import fmt
from dpportal.privacy import quantiles
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Epsilon, exact_str
from releases.kinds.base import Cell, NoisePart, StatisticKind, frac, statistic_errors

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan


def quantile_ranks(cell_counts: Any) -> tuple[list[int], int]:
    """(r_j = #{x < c_j}, n) from the counts per grid cell (-inf, c_1), ..., [c_m, inf)
    (RankCounter.rank_counts: cumulative sums)."""
    cumulative = np.cumsum(np.asarray(cell_counts, dtype=np.int64))
    return [int(r) for r in cumulative[:-1]], int(cumulative[-1])


def grid_of(entry: dict[str, Any]) -> tuple[Fraction, ...]:
    """The quantiles' public candidate grid from a frozen spec entry."""
    grid = entry["grid"]
    if "edges" in grid:
        return tuple(frac(e) for e in grid["edges"])
    return quantiles.candidate_grid(frac(grid["lower"]), frac(grid["upper"]), frac(grid["step"]))


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


class QuantilesKind(StatisticKind):
    name = "quantiles"
    pure = True
    bounded = True
    fields = "grouped"
    aggregate = "ranks"

    def mechanism(self, release_mechanism: str) -> str:
        return "permute_and_flip"

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        return "permute_and_flip"

    def _rank_error(self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object, k=1) -> float:
        """The largest rank-error bound over the quantiles (equal shares of epsilon)."""
        share = frac(epsilon) / len(stat.quantiles)
        return max(
            quantiles.rank_error_bound(
                epsilon=share,
                quantile=frac(q),
                contribution_bound=plan.dataset.contribution_bound,
                candidates=len(stat.grid),
                confidence=frac(plan.confidence),
                k=k,
            )  # fmt: skip
            for q in stat.quantiles
        )

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        k = len(stat.quantiles)
        with statistic_errors(stat):
            return {
                "cells": k,
                "halfwidth": None,
                "halfwidth_simultaneous": None,
                "n_guess": None,
                "candidates": len(stat.grid),
                "rank_error": self._rank_error(plan, stat, stat.epsilon),
                "rank_error_simultaneous": self._rank_error(plan, stat, stat.epsilon, k=k),
            }

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        frame = gettext("%(where)s: no epsilon in range meets the target (%(problem)s).")
        with statistic_errors(stat, frame):
            return quantiles.quantiles_epsilon_for_rank_error(
                rank_error=frac(stat.target_halfwidth), quantiles=[frac(q) for q in stat.quantiles],
                contribution_bound=plan.dataset.contribution_bound, candidates=len(stat.grid),
                confidence=frac(plan.confidence),
            )  # fmt: skip

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        return ()  # permute-and-flip selects a candidate: no noise vector

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        """One permute_and_flip record per quantile, at its own share of epsilon: each is
        an independent selection."""
        shares = quantiles.quantiles_budget_split(frac(stat.epsilon), len(stat.quantiles))
        return [MechanismRecord.permute_and_flip(epsilon=e) for e in shares]

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        return []

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        if stat.step is None:
            grid: dict[str, Any] = {"edges": [str(e) for e in (stat.column.bin_edges or [])]}
        else:
            grid = {"lower": fmt(stat.lower), "upper": fmt(stat.upper), "step": fmt(stat.step)}
        entry = {"quantiles": list(stat.quantiles), "grid": grid}
        entry["candidates"] = len(grid_of(entry))
        return entry

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        ranks, n = quantile_ranks(aggregate)
        result = quantiles.release_quantiles(
            ranks, n, candidates=grid_of(entry), quantiles=[frac(q) for q in entry["quantiles"]],
            epsilon=Epsilon(entry["epsilon"]), contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        return {
            "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
            "columns": [c["name"] for c in entry["columns"]],
            "group_columns": [g["name"] for g in entry.get("groups", [])],
            "category": None, "shape": None,
            "epsilon": entry["epsilon"], "delta": entry["delta"],
            "cells": [quantile_label(q) for q in entry["quantiles"]],
            "quantiles": list(entry["quantiles"]),
            "values": [exact_str(p.value) for p in result.parts],
            "explanation": result.to_dict(),
        }  # fmt: skip

    def value_cells(self, stat: StatisticPlan) -> int:
        return len(stat.quantiles)

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return []

    def explanation_parts(self, explanation: dict[str, Any]):
        return iter(())

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """No value interval: the rank-error bound t (records) of each quantile; with the
        stated confidence the chosen candidate's rank is within t of q n (plus the grid's
        resolution)."""
        errors = quantiles.quantile_rank_errors(
            entry["explanation"], confidence=confidence, simultaneous=simultaneous
        )
        return [Cell(v, rank_error=t) for v, t in zip(self.values(entry), errors, strict=True)]

    def value_title(self, columns: list[str]) -> str:
        return columns[0] if columns else ""

    def layout(self, entry: dict[str, Any]) -> str:
        return "quantiles"


KINDS = (QuantilesKind(),)
