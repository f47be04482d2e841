"""Grouped kinds: a clipped sum or mean of one numeric column in each group of one or
two declared grouping columns (categories + Other (+ Missing), or bins (+ Missing)).

The vector of group sums (and counts) is noised at once with its group
sensitivities (dpportal.privacy.grouped): a person's L rows may fall in up to L
groups. A grouped mean spends GROUPED_SUM_SHARE of its epsilon on the sums.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from budgets.amounts import fmt
from dpportal.privacy import planning_stats, sensitivity
from dpportal.privacy.grouped import grouped_mean_noise, grouped_sum_noise
from dpportal.privacy.grouped_release import (
    grouped_mean_intervals,
    release_grouped_means,
    release_grouped_sums,
)
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Delta, Epsilon, exact_str
from releases.kinds.base import (
    UNINFORMATIVE,
    Cell,
    StatisticKind,
    SumAndCountParts,
    exact_fraction,
    frac,
    set_group_cells,
    statistic_errors,
    uninformative,
)
from releases.kinds.counting import SymmetricIntervals
from releases.kinds.domains import column_domain
from releases.kinds.planned import axis_cells

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

GROUPED_SUM_SHARE = Fraction(1, 2)


def group_count(stat: StatisticPlan) -> int:
    """The number of cells (groups) of a grouped or spread statistic; 1 when ungrouped."""
    out = 1
    for column in stat.group_columns:
        out *= axis_cells(column)
    return out


def groups_spec(stat: Any) -> list[dict[str, Any]]:
    """The frozen domains of a statistic's grouping columns (releases.services.freeze)."""
    return [column_domain(c) for c in (stat.group_column, stat.group_column2) if c is not None]


def entry_head(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
        "columns": [c["name"] for c in entry["columns"]],
        "group_columns": [g["name"] for g in entry.get("groups", [])],
        "category": None, "cells": [], "shape": None,
        "epsilon": entry["epsilon"], "delta": entry["delta"],
    }  # fmt: skip


class GroupedKind(StatisticKind):
    """Shared by the grouped and spread kinds: preview by planning_stats, cells by groups."""

    grouped = True
    opendp_missing = (
        "one value per declared group, composed in parallel: OpenDP's core Context API has "
        "no parallel composition over groups, and its Polars API needs another Polars"
    )
    bounded = True
    fields = "grouped"

    def value_cells(self, stat: StatisticPlan) -> int:
        return group_count(stat)

    def _common(self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object) -> dict[str, Any]:
        return {
            "mechanism": plan.mechanism,
            "epsilon": frac(epsilon),
            "delta": frac(stat.delta),
            "contribution_bound": plan.dataset.contribution_bound,
        }

    def halfwidth(self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object,
                  simultaneous: bool = False) -> float:  # fmt: skip
        """The preview's half-width (value units) at `epsilon`."""
        raise NotImplementedError

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        cells = group_count(stat)
        with statistic_errors(stat):
            together = self.halfwidth(plan, stat, stat.epsilon, True) if cells > 1 else None
            return {
                "cells": cells,
                "halfwidth": self.halfwidth(plan, stat, stat.epsilon),
                "halfwidth_simultaneous": together,
                "n_guess": stat.n_guess,
            }

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        """Exact records for the accountant (dpportal.privacy.mechanism_records), one per
        noise vector.

        Laplace vectors: discrete Laplace at their l1 sensitivity (as histograms).
        Gaussian vectors calibrated as one coordinate (calibration "cks_thm7": one cell,
        or L = 1 so one person moves one cell; integer l2): discrete_gaussian at that l2,
        the exact CKS Thm 7 profile their sigma was calibrated to. Gaussian vectors on
        which one person moves several cells (calibrated through zCDP): zcdp_gaussian at
        their l2 sensitivity (rho = l2**2 / (2 sigma**2), CKS Thm 14).
        """
        out = []
        for spec in self.noise(plan=plan, stat=stat):
            if spec.noise == "discrete_laplace":
                out.append(
                    MechanismRecord.discrete_laplace(
                        sensitivity=spec.l1_sensitivity, scale=spec.scale
                    )
                )
                continue
            l2 = Fraction(spec.l2_sensitivity)
            one_coordinate = spec.calibration == "cks_thm7" and l2.denominator == 1
            make = (
                MechanismRecord.discrete_gaussian
                if one_coordinate
                else MechanismRecord.zcdp_gaussian
            )
            out.append(
                make(sensitivity=l2, sigma=spec.sigma, epsilon=spec.epsilon, delta=spec.delta)
            )
        return out

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        frame = gettext("%(where)s: no epsilon in range meets the target (%(problem)s).")
        with statistic_errors(stat, frame):
            return planning_stats.epsilon_for_target(
                lambda e: self.halfwidth(plan, stat, e), frac(stat.target_halfwidth)
            )

    def planned_granularity(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        return self.granularity(
            lower=stat.lower, upper=stat.upper, epsilon=stat.epsilon,
            contribution_bound=plan.dataset.contribution_bound,
        )  # fmt: skip

    def granularity(self, *, lower, upper, epsilon, contribution_bound: int) -> Fraction:
        raise NotImplementedError

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        gamma = self.granularity(
            lower=stat.lower, upper=stat.upper, epsilon=stat.epsilon,
            contribution_bound=contribution_bound,
        )  # fmt: skip
        return {
            "groups": groups_spec(stat),
            "lower": fmt(stat.lower),
            "upper": fmt(stat.upper),
            "granularity": exact_str(gamma),
        }


class GroupedSumKind(SymmetricIntervals, GroupedKind):
    name = "grouped_sum"
    groups_required = True
    aggregate = "sum"
    sum_share = Fraction(1)

    def granularity(self, *, lower, upper, epsilon, contribution_bound: int) -> Fraction:
        """A grouped sum's grid, or a grouped mean's sum part's (at its epsilon share).

        A grouped sum's is the released-sum grid (rows_bound, as a sum's), so its
        interval can cover the clipped sums (grouped.grouped_sum_noise); a grouped
        mean's pivot interval accounts for rounding itself.
        """
        return sensitivity.sum_granularity(
            frac(lower), frac(upper), epsilon=frac(epsilon) * self.sum_share,
            contribution_bound=contribution_bound,
            rows_bound=sensitivity.MAX_ROWS if self.name == "grouped_sum" else None,
        )  # fmt: skip

    def halfwidth(self, plan, stat, epsilon, simultaneous=False) -> float:
        return planning_stats.grouped_halfwidth(
            kind=stat.kind, **self._common(plan, stat, epsilon),
            confidence=frac(plan.confidence), groups=group_count(stat),
            lower=frac(stat.lower), upper=frac(stat.upper), n_guess=stat.n_guess,
            simultaneous=simultaneous, sum_share=GROUPED_SUM_SHARE,
        )  # fmt: skip

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return (grouped_sum_noise(**self._noise_args(plan, stat)),)

    def _noise_args(self, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        return dict(
            lower=frac(stat.lower), upper=frac(stat.upper),
            granularity=self.planned_granularity(plan=plan, stat=stat),
            groups=group_count(stat), **self._common(plan, stat, stat.epsilon),
        )  # fmt: skip

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        set_group_cells(out, axes)
        result = release_grouped_sums(
            list(aggregate), lower=frac(entry["lower"]), upper=frac(entry["upper"]),
            granularity=frac(entry["granularity"]), mechanism=mechanism,
            epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        out["values"] = list(result.decimal_values)
        out["explanation"] = result.to_dict()
        return out

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return [("", "value", granularity)]

    def value_title(self, columns: list[str]) -> str:
        return f"sum of {columns[0] if columns else ''}"


class GroupedMeanKind(SumAndCountParts, GroupedSumKind):
    name = "grouped_mean"
    aggregate = "sum_count"
    # each group's interval inverts a pivot (mean_pivot): dearer to read back than a sum
    cell_limit_setting = "RELEASE_MAX_GROUPED_MEAN_CELLS"
    sum_share = GROUPED_SUM_SHARE

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return grouped_mean_noise(**self._noise_args(plan, stat), sum_share=GROUPED_SUM_SHARE)

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        out = super().spec_fields(stat, contribution_bound=contribution_bound)
        out["sum_share"] = str(GROUPED_SUM_SHARE)
        return out

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        set_group_cells(out, axes)
        result = release_grouped_means(
            list(aggregate[0]), list(aggregate[1]), lower=frac(entry["lower"]),
            upper=frac(entry["upper"]), granularity=frac(entry["granularity"]),
            mechanism=mechanism, epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, rng=rng, sum_share=GROUPED_SUM_SHARE,
            confidence=frac(confidence),
        )  # fmt: skip
        out["values"] = [float(e) for e in result.estimates]
        out["explanation"] = result.to_dict()
        return out

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """Each group's pivot interval at `confidence`; a group flagged UNINFORMATIVE by
        base.uninformative at the release's own confidence (the same at every level)."""
        explanation = entry["explanation"]
        cells = grouped_mean_intervals(
            explanation, confidence=confidence, simultaneous=simultaneous
        )
        flags = self.uninformative_cells(entry, cells, confidence, simultaneous)
        return [
            Cell(float(est), float(low), float(high), flag=UNINFORMATIVE if flag else None)
            for (est, low, high), flag in zip(cells, flags, strict=True)
        ]

    def uninformative_cells(
        self, entry: dict[str, Any], cells: list, confidence: object, simultaneous: bool
    ) -> list[bool]:
        """Per group: base.uninformative on its noisy count and its per-group interval at
        the release's confidence (`cells` when they are those; else the ones stored beside
        the values, recomputed only if missing)."""
        explanation = entry["explanation"]
        stored = exact_fraction(explanation.get("confidence") or confidence)
        if not simultaneous and exact_fraction(confidence) == stored:
            ends = [(low, high) for _, low, high in cells]
        else:
            ends = explanation.get("intervals") or [
                (low, high)
                for _, low, high in grouped_mean_intervals(explanation, confidence=stored)
            ]
        lowest, highest = float(frac(explanation["lower"])), float(frac(explanation["upper"]))
        return [
            uninformative(
                noisy_count=int(count), count_explanation=explanation["count"],
                confidence=stored, low=float(low), high=float(high),
                lowest=lowest, highest=highest,
            )
            for count, (low, high) in zip(explanation["count"]["values"], ends, strict=True)
        ]  # fmt: skip

    def value_title(self, columns: list[str]) -> str:
        return f"mean of {columns[0] if columns else ''}"


KINDS = (GroupedSumKind(), GroupedMeanKind())
