"""Quantiles of one numeric column: each chosen among public candidates by exact
permute-and-flip (dpportal.privacy.quantiles), pure epsilon-DP whatever the release's
mechanism; k quantiles each spend epsilon / k. No noise is added to a value, so a
quantile has no value interval: its guaranteed accuracy is a rank error in records.

Beside it, every surface states the rank error in the data's units, as this module
words it (one place): before the release a planning figure, "about +-X if the owner's
guess of n values were spread evenly over the grid"; after it, "about between A and
B", read through the released quantiles themselves as the shape of the data and n
(the owner's planning guess, frozen with the specification, or a released noisy
count). Both are estimates from public values only, under the assumption stated with
them; without a guess of n there is none, and the surfaces say how to get one.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from budgets.amounts import fmt
from dpportal import formatting, words
from dpportal.privacy import quantile_units, quantiles
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
    if grid.get("open"):
        lower = grid.get("lower")
        return quantiles.open_grid(None if lower is None else frac(lower), frac(grid["step"]))
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


def value_basis(entry: dict[str, Any]) -> tuple[str, int] | None:
    """The n a result's rank error is read in the data's units with: ("noisy_count", N)
    when the result holds a released noisy count of its rows, else ("n_guess", n), the
    owner's planning guess frozen with the specification; None without either."""
    for source in (entry, entry.get("explanation") or {}):
        count = source.get("noisy_count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
            return ("noisy_count", count)
    guess = entry.get("n_guess")
    if isinstance(guess, int) and not isinstance(guess, bool) and guess >= 1:
        return ("n_guess", guess)
    return None


def result_step(entry: dict[str, Any]) -> Fraction:
    """The largest step of a result's grid (stored; older results: the mean step)."""
    if entry.get("grid_step") is not None:
        return frac(entry["grid_step"])
    explanation = entry["explanation"]
    m = int(explanation["candidates"])
    span = frac(explanation["grid_last"]) - frac(explanation["grid_first"])
    return span / (m - 1) if m > 1 else Fraction(0)


def _ranks_text(rank_error: float) -> str:
    return formatting.rank(rank_error)


def planning_text(accuracy: dict[str, Any], *, simultaneous: bool = False) -> str:
    """A quantile preview's accuracy as a person reads it before the release: the
    planning figure in the data's units with its assumption, the rank error beside it
    (the words: dpportal.words, which pages of frozen previews use too)."""
    return words.quantile_planning_text(accuracy, simultaneous=simultaneous)


def about_range_texts(
    low: float | None, high: float | None, *, group: bool = True
) -> tuple[str, str]:
    """A released quantile's data-unit range as two number texts, to the precision its
    width justifies ('' when there is none)."""
    if low is None or high is None:
        return "", ""
    precision = (high - low) / 2
    if precision <= 0:
        return (formatting.significant(low, group=group),
                formatting.significant(high, group=group))  # fmt: skip
    return (formatting.noisy(low, precision, group=group),
            formatting.noisy(high, precision, group=group))  # fmt: skip


def about_texts(cell: Cell) -> tuple[str, str]:
    """A released quantile's data-unit range as two number texts ('' when none)."""
    return about_range_texts(cell.about_low, cell.about_high)


def basis_text(entry: dict[str, Any]) -> str:
    """The assumption a released quantile's data-unit range is read under, in words."""
    return basis_words(value_basis(entry))


def basis_words(basis: Any) -> str:
    """basis_text from a value_basis (also as stored in JSON: a two-item list or None)."""
    if basis is not None:
        basis = tuple(basis)
    if basis is None or len(basis) != 2 or not isinstance(basis[1], int):
        return gettext(
            "No guess of the number of values was given, so the accuracy is stated in ranks only."
        )
    if basis[0] == "noisy_count":
        n = gettext("a released noisy count of %(n)s values") % {"n": formatting.integer(basis[1])}
    else:
        n = gettext("about %(n)s values (the owner's planning guess, not a count of the data)") % {
            "n": formatting.integer(basis[1])
        }
    return gettext(
        "In the data's units, an estimate: it assumes %(n)s, spread between the published "
        "quantiles as they suggest, and adds one grid step; the rank error is the guarantee."
    ) % {"n": n}


def result_text(cell: Cell) -> str:
    """A released quantile's accuracy in one line: the data-unit range and the rank error."""
    ranks = _ranks_text(cell.rank_error or 0)
    low, high = about_texts(cell)
    if not low:
        return gettext("rank error ± %(ranks)s values") % {"ranks": ranks}
    return gettext("about %(low)s to %(high)s; rank error ± %(ranks)s values") % {
        "low": low,
        "high": high,
        "ranks": ranks,
    }


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
        """Rank errors (the guarantee) and, with a guess of n, their planning figure in
        the data's units (value_error: values spread evenly over the grid)."""
        k = len(stat.quantiles)
        with statistic_errors(stat):
            one = self._rank_error(plan, stat, stat.epsilon)
            together = self._rank_error(plan, stat, stat.epsilon, k=k)
            first, last = stat.grid[0], stat.grid[-1]
            step = quantile_units.grid_step(stat.grid)

            def units(t: float) -> float | None:
                if not stat.n_guess:
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
                "grid_first": float(first),
                "grid_last": float(last),
                "grid_step": float(step),
            }

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        return (*super().planning_key(plan=plan, stat=stat), stat.n_guess)

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
        if stat.n_guess:  # public: the owner's guess of n, for the accuracy in data units
            entry["n_guess"] = int(stat.n_guess)
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
            "grid_step": exact_str(quantile_units.grid_step(grid_of(entry))),
            **({"n_guess": int(entry["n_guess"])} if entry.get("n_guess") else {}),
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
        resolution). Beside it, when n is known (value_basis), about_low/about_high: the
        same error in the data's units through the released quantiles' shape
        (quantile_units.value_range_from_released), an estimate, not a guarantee."""
        errors = quantiles.quantile_rank_errors(
            entry["explanation"], confidence=confidence, simultaneous=simultaneous
        )
        values = self.values(entry)
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
