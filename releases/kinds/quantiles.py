"""Quantiles of one numeric column, chosen among public candidates by exact
permute-and-flip, pure epsilon-DP whatever the release's mechanism.

A statistic defined now ("method": "joint") spends half its epsilon on the quantiles
themselves, drawn jointly (dpportal.privacy.joint_quantiles: the recursive algorithm
of Kaplan, Schnapp and Stemmer, eps / D per level), and half on a confidence interval
in the data's units for each (dpportal.privacy.quantile_intervals: two one-sided
selections per quantile, valid for every dataset at the release's confidence). Older
specifications (no "method") were drawn one by one at epsilon / k with no interval;
they are read back as they were drawn. The rank error stays the guarantee of where a
released quantile lies; the interval is the guarantee of where the true one lies.

Beside it, every surface states the rank error in the data's units, as this module
words it (one place): before the release a planning figure, "about +-X if the owner's
guess of n values were spread evenly over the grid"; after it, "about between A and
B", read through the released quantiles themselves as the shape of the data and n
(the owner's planning guess, frozen with the specification, or a released noisy
count). Both are estimates from public values only, under the assumption stated with
them; without a guess of n there is none, and the surfaces say how to get one.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from budgets.amounts import fmt
from dpportal.privacy import joint_quantiles, quantile_intervals, quantile_units, quantiles
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Epsilon, exact_str, round_up_sig
from releases.kinds import opendp
from releases.kinds.base import Cell, NoisePart, StatisticKind, frac, statistic_errors
from releases.kinds.quantile_words import (
    basis_text,
    quantile_label,
    result_step,
    result_text,
    value_basis,
)

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan


#: The share of a quantile statistic's epsilon its confidence intervals spend.
INTERVAL_SHARE = Fraction(1, 2)
#: The method of every quantile statistic defined now (older specs have none).
JOINT = "joint"


def budget(entry_or_epsilon: object, *, joint: bool = True) -> tuple[Fraction, Fraction]:
    """(epsilon of the quantiles, epsilon of their intervals) of a statistic's epsilon."""
    eps = frac(entry_or_epsilon)
    if not joint:
        return eps, Fraction(0)
    return Epsilon(eps * (1 - INTERVAL_SHARE)), Epsilon(eps * INTERVAL_SHARE)


def is_open(entry: dict[str, Any]) -> bool:
    """Whether a spec entry's grid is open (no declared upper bound)."""
    return bool((entry.get("grid") or {}).get("open"))


def interval_valid(stored: object, confidence: object, *, k: int, simultaneous: bool) -> bool:
    """Whether intervals released at `stored` confidence hold at `confidence`: each
    misses with probability <= 1 - stored, so per quantile at any level up to stored,
    and all k at once (union bound) where k (1 - stored) <= 1 - confidence."""
    miss, wanted = 1 - frac(stored), 1 - frac(confidence)
    return (k * miss if simultaneous else miss) <= wanted


def quantile_ranks(cell_counts: Any) -> tuple[list[int], int]:
    """(r_j = #{x < c_j}, n) from the counts per grid cell (-inf, c_1), ..., [c_m, inf)
    (RankCounter.rank_counts: cumulative sums)."""
    cumulative = np.cumsum(np.asarray(cell_counts, dtype=np.int64))
    return [int(r) for r in cumulative[:-1]], int(cumulative[-1])


def grid_of(entry: dict[str, Any]) -> tuple[Fraction, ...]:
    """The quantiles' public candidate grid from a frozen spec entry."""
    grid = entry["grid"]
    if grid.get("open"):
        lower = grid.get("lower")
        return quantiles.open_grid(None if lower is None else frac(lower), frac(grid["step"]))
    if "edges" in grid:
        return tuple(frac(e) for e in grid["edges"])
    return quantiles.candidate_grid(frac(grid["lower"]), frac(grid["upper"]), frac(grid["step"]))


def released_cells(
    entry: dict[str, Any],
    values: list[float],
    errors: list[float],
    confidence: object,
    *,
    simultaneous: bool,
) -> list[Cell]:
    """Cells of a result with released intervals: the interval where the true quantile
    lies (low, high) wherever the released confidence covers the level asked for (None
    above it: noise drawn once cannot be re-read at a higher level), and the rank error
    of the released value, capped at what is possible when a noisy count of the rows
    exists (no quantile is more than max(q, 1 - q) N values from its target)."""
    ends = entry["intervals"]["ends"]
    valid = interval_valid(entry["interval_confidence"], confidence, k=len(ends),
                           simultaneous=simultaneous)  # fmt: skip
    basis = value_basis(entry)
    cells = []
    for value, t, end, q in zip(values, errors, ends, entry["quantiles"], strict=True):
        if basis is not None and basis[0] == "noisy_count":
            t = min(t, float(max(frac(q), 1 - frac(q))) * basis[1])
        low, high = (float(frac(end["low"])), float(frac(end["high"]))) if valid else (None, None)
        cells.append(Cell(value, low=low, high=high, rank_error=t))
    return cells


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

    def _rank_error(
        self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object, simultaneous=False
    ) -> float:
        """The largest rank-error bound over the quantiles drawn jointly with their share
        of `epsilon` (the rest buys the intervals)."""
        points, _ = budget(epsilon)
        return max(
            joint_quantiles.joint_rank_error_bounds(
                epsilon=points,
                quantiles=[frac(q) for q in stat.quantiles],
                contribution_bound=plan.dataset.contribution_bound,
                candidates=len(stat.grid),
                confidence=frac(plan.confidence),
                simultaneous=simultaneous,
            )  # fmt: skip
        )

    def _interval_reach(self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object) -> float:
        """How far in ranks a confidence interval's ends typically lie from the quantile
        (a planning figure from public parameters: quantile_intervals)."""
        _, ends = budget(epsilon)
        return max(
            quantile_intervals.planned_interval_rank_reach(
                epsilon=ends,
                quantiles=[frac(q) for q in stat.quantiles],
                contribution_bound=plan.dataset.contribution_bound,
                candidates=len(stat.grid),
                confidence=frac(plan.confidence),
            )  # fmt: skip
        )

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """Rank errors (the guarantee) and, with a guess of n, their planning figure in
        the data's units (value_error: values spread evenly over the grid)."""
        k = len(stat.quantiles)
        with statistic_errors(stat):
            one = self._rank_error(plan, stat, stat.epsilon)
            together = self._rank_error(plan, stat, stat.epsilon, simultaneous=True)
            reach = self._interval_reach(plan, stat, stat.epsilon)
            first, last = stat.grid[0], stat.grid[-1]
            step = quantile_units.grid_step(stat.grid)
            open_grid = stat.upper is None and stat.step is not None and not stat.column.bin_edges

            def units(t: float) -> float | None:
                if not stat.n_guess or open_grid:
                    return None
                return quantile_units.planning_value_error(
                    rank_error=t, n_guess=stat.n_guess, first=first, last=last, step=step
                )

            return {
                "cells": k,
                "halfwidth": None,
                "halfwidth_simultaneous": None,
                "n_guess": stat.n_guess,
                "candidates": len(stat.grid),
                "rank_error": one,
                "rank_error_simultaneous": together,
                "value_error": units(one),
                "value_error_simultaneous": units(together),
                "interval_rank_reach": reach,
                "interval_value_reach": units(reach),
                "open_grid": open_grid,
                "grid_first": float(first),
                "grid_last": float(last),
                "grid_step": float(step),
            }

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        return (*super().planning_key(plan=plan, stat=stat), stat.n_guess)

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """The smallest epsilon (3 significant digits, rounded up) whose quantiles, drawn
        jointly with their share, have a rank error within the target. The quantiles get
        half of it and every joint bound scales as 1 / epsilon, so it is the joint draw's
        own epsilon for half the target; the loop only absorbs float rounding."""
        frame = gettext("%(where)s: no epsilon in range meets the target (%(problem)s).")
        target = frac(stat.target_halfwidth)
        with statistic_errors(stat, frame):
            eps = joint_quantiles.joint_epsilon_for_rank_error(
                rank_error=target * (1 - INTERVAL_SHARE),
                quantiles=[frac(q) for q in stat.quantiles],
                contribution_bound=plan.dataset.contribution_bound, candidates=len(stat.grid),
                confidence=frac(plan.confidence),
            )  # fmt: skip
            while self._rank_error(plan, stat, eps) > target:
                eps = round_up_sig(eps * Fraction(1001, 1000), 3)
            return eps

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        return ()  # permute-and-flip selects a candidate: no noise vector

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        """The joint draw's levels (one permute_and_flip record each at its share) and the
        intervals' ends (one each): they add up to the statistic's epsilon."""
        points, ends = budget(stat.epsilon)
        k = len(stat.quantiles)
        return [
            *joint_quantiles.joint_records(points, k),
            *quantile_intervals.interval_records(ends, k),
        ]

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        return []

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        if stat.step is None:
            grid: dict[str, Any] = {"edges": [str(e) for e in (stat.column.bin_edges or [])]}
        elif stat.upper is None:  # no declared upper bound: the open grid
            lower = None if stat.lower is None else fmt(stat.lower)
            grid = {"open": True, "lower": lower, "step": fmt(stat.step)}
        else:
            grid = {"lower": fmt(stat.lower), "upper": fmt(stat.upper), "step": fmt(stat.step)}
        entry = {"quantiles": list(stat.quantiles), "grid": grid, "method": JOINT,
                 "interval_share": exact_str(INTERVAL_SHARE)}  # fmt: skip
        entry["candidates"] = len(grid_of(entry))
        if stat.n_guess:  # public: the owner's guess of n, for the accuracy in data units
            entry["n_guess"] = int(stat.n_guess)
        return entry

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        ranks, n = quantile_ranks(aggregate)
        grid, qs = grid_of(entry), [frac(q) for q in entry["quantiles"]]
        extra: dict[str, Any] = {}
        if entry.get("method") == JOINT:
            points, ends = budget(Epsilon(entry["epsilon"]))
            result = joint_quantiles.release_joint_quantiles(
                ranks, n, candidates=grid, quantiles=qs, epsilon=points,
                contribution_bound=contribution_bound, rng=rng,
            )  # fmt: skip
            intervals = quantile_intervals.release_quantile_intervals(
                ranks, n, candidates=grid, quantiles=qs, epsilon=ends,
                contribution_bound=contribution_bound, confidence=frac(confidence), rng=rng,
            )  # fmt: skip
            extra = {"method": JOINT, "intervals": intervals.to_dict(),
                     "interval_confidence": exact_str(frac(confidence))}  # fmt: skip
        else:
            result = quantiles.release_quantiles(
                ranks, n, candidates=grid, quantiles=qs, epsilon=Epsilon(entry["epsilon"]),
                contribution_bound=contribution_bound, rng=rng,
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
            "grid_step": exact_str(quantile_units.grid_step(grid)),
            **({"n_guess": int(entry["n_guess"])} if entry.get("n_guess") else {}),
            **extra,
        }  # fmt: skip

    def value_cells(self, stat: StatisticPlan) -> int:
        return len(stat.quantiles)

    def opendp_parameters(self, entry: dict[str, Any], *, axes: list) -> dict[str, Any] | None:
        """Each quantile by OpenDP's private_quantile (permute-and-flip over the same
        candidates) at an even share of the quantiles' epsilon. The joint draw and the
        intervals' share have no OpenDP counterpart: the intervals' share is not spent."""
        points, _ = budget(entry["epsilon"], joint=entry.get("method") == JOINT)
        return {
            "program": "quantiles",
            "column": opendp.column_parameters(entry["columns"][0]),
            "quantiles": [float(frac(q)) for q in entry["quantiles"]],
            "candidates": [float(c) for c in grid_of(entry)],
            "epsilon_points": float(points),
        }

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return []

    def explanation_parts(self, explanation: dict[str, Any]):
        return iter(())

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """No value interval: the rank-error bound t (records) of each quantile; with the
        stated confidence the chosen candidate's rank is within t of q n (plus the grid's
        resolution). Beside it, when n is known (value_basis), about_low/about_high: the
        same error in the data's units through the released quantiles' shape
        (quantile_units.value_range_from_released), an estimate, not a guarantee."""
        errors = quantiles.quantile_rank_errors(
            entry["explanation"], confidence=confidence, simultaneous=simultaneous
        )
        values = self.values(entry)
        if entry.get("intervals"):
            return released_cells(entry, values, errors, confidence, simultaneous=simultaneous)
        basis = value_basis(entry)
        if basis is None:
            return [Cell(v, rank_error=t) for v, t in zip(values, errors, strict=True)]
        explanation = entry["explanation"]
        ranges = quantile_units.value_range_from_released(
            quantiles=[frac(q) for q in entry["quantiles"]], values=entry["values"],
            rank_errors=errors, n=basis[1], first=explanation["grid_first"],
            last=explanation["grid_last"], step=result_step(entry),
        )  # fmt: skip
        return [
            Cell(v, rank_error=t, about_low=low, about_high=high)
            for v, t, (low, high) in zip(values, errors, ranges, strict=True)
        ]

    def cell_accuracy_text(self, cell: Cell) -> str:
        return result_text(cell)

    def accuracy_note(self, entry: dict[str, Any]) -> str:
        return basis_text(entry)

    def value_title(self, columns: list[str]) -> str:
        return columns[0] if columns else ""

    def layout(self, entry: dict[str, Any]) -> str:
        return "quantiles"


KINDS = (QuantilesKind(),)
