"""Clipped sums and means of one numeric column.

Values are clipped to the owner's public bounds and rounded to a public grid
gamma (sensitivity.sum_granularity at the epsilon the sum is noised with), so the
sum is noised in integer grid units (DESIGN.md section 3); a sum's interval adds
the stored rounding bound so that it covers the exact clipped sum. A mean spends
MEAN_SUM_SHARE of its epsilon on its sum and the rest on its count, and its
interval inverts the exact pivot g S^ - m N^ (dpportal.privacy.mean_pivot).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from budgets.amounts import fmt
from dpportal.privacy import mechanisms, noise, sensitivity
from dpportal.privacy.accuracy import mean_interval
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Delta, Epsilon, exact_str
from releases.kinds import opendp
from releases.kinds.base import (
    UNINFORMATIVE,
    Cell,
    SumAndCountParts,
    exact_fraction,
    frac,
    statistic_errors,
    uninformative,
)
from releases.kinds.counting import SymmetricIntervals, entry_head
from releases.kinds.planned import PlannedKind

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

MEAN_SUM_SHARE = Fraction(1, 2)


class SumKind(SymmetricIntervals, PlannedKind):
    name = "sum"
    bounded = True
    aggregate = "sum"
    #: the share of the statistic's epsilon its sum is noised with
    sum_share = Fraction(1)

    def planning_parameters(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        params = super().planning_parameters(plan=plan, stat=stat)
        params["lower"], params["upper"] = frac(stat.lower), frac(stat.upper)
        return params

    def granularity(self, *, lower, upper, epsilon, contribution_bound: int) -> Fraction:
        """The public grid of the sum (for a mean, its sum part at its epsilon share).

        A sum's grid allows for the rounding of up to sensitivity.MAX_ROWS rows
        (rows_bound), which its interval adds; a mean's pivot interval accounts for
        rounding itself.
        """
        return sensitivity.sum_granularity(
            frac(lower), frac(upper), epsilon=frac(epsilon) * self.sum_share,
            contribution_bound=contribution_bound,
            rows_bound=sensitivity.MAX_ROWS if self.name == "sum" else None,
        )  # fmt: skip

    def planned_granularity(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        return self.granularity(
            lower=stat.lower, upper=stat.upper, epsilon=stat.epsilon,
            contribution_bound=plan.dataset.contribution_bound,
        )  # fmt: skip

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        gamma = self.granularity(
            lower=stat.lower, upper=stat.upper, epsilon=stat.epsilon,
            contribution_bound=contribution_bound,
        )  # fmt: skip
        return {"lower": fmt(stat.lower), "upper": fmt(stat.upper), "granularity": exact_str(gamma)}

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return (
                noise.sum_noise(
                    mechanism=plan.mechanism, epsilon=frac(stat.epsilon),
                    delta=frac(stat.delta), lower=frac(stat.lower), upper=frac(stat.upper),
                    granularity=self.planned_granularity(plan=plan, stat=stat),
                    contribution_bound=plan.dataset.contribution_bound,
                ),
            )  # fmt: skip

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        result = mechanisms.release_sum(
            int(aggregate), lower=frac(entry["lower"]), upper=frac(entry["upper"]),
            granularity=entry["granularity"], mechanism=mechanism,
            epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        out["cells"] = ["Sum"]
        out["values"] = list(result.decimal_values)
        out["explanation"] = result.to_dict()
        return out

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return [("", "value", granularity)]

    def opendp_parameters(self, entry: dict[str, Any], *, axes: list) -> dict[str, Any] | None:
        """OpenDP's clamp and sum of the column's values (a mean: over OpenDP's count, the
        epsilon split as here); OpenDP's own noise on floats, not this grid's."""
        return {
            "program": "sum",
            "column": opendp.column_parameters(entry["columns"][0]),
            "lower": float(frac(entry["lower"])),
            "upper": float(frac(entry["upper"])),
            "sum_share": float(self.sum_share),
        }

    def value_title(self, columns: list[str]) -> str:
        return f"sum of {columns[0]}" if columns else "sum"

    def layout(self, entry: dict[str, Any]) -> str:
        return "figure"


class MeanKind(SumAndCountParts, SumKind):
    name = "mean"
    aggregate = "sum_count"
    sum_share = MEAN_SUM_SHARE

    def planning_parameters(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        params = super().planning_parameters(plan=plan, stat=stat)
        params["n_guess"] = stat.n_guess or 1
        params["sum_share"] = MEAN_SUM_SHARE
        return params

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return noise.mean_noise(
                mechanism=plan.mechanism, epsilon=frac(stat.epsilon), delta=frac(stat.delta),
                lower=frac(stat.lower), upper=frac(stat.upper),
                granularity=self.planned_granularity(plan=plan, stat=stat),
                contribution_bound=plan.dataset.contribution_bound, sum_share=MEAN_SUM_SHARE,
            )  # fmt: skip

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        result = mechanisms.release_mean(
            int(aggregate[0]), int(aggregate[1]), lower=frac(entry["lower"]),
            upper=frac(entry["upper"]), granularity=entry["granularity"], mechanism=mechanism,
            epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, sum_share=MEAN_SUM_SHARE,
            confidence=frac(confidence), rng=rng,
        )  # fmt: skip
        out["cells"] = ["Mean"]
        out["values"] = [float(result.estimate)]
        out["explanation"] = result.to_dict()
        return out

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """The pivot interval (asymmetric: no half-width); one mean, so per cell is all.
        Flagged UNINFORMATIVE by base.uninformative at the release's own confidence."""
        explanation = entry["explanation"]
        estimate, low, high = mean_interval(explanation, confidence=confidence)
        stored = exact_fraction(explanation.get("confidence") or confidence)
        if exact_fraction(confidence) == stored:
            ends = (low, high)
        else:
            ends = explanation.get("interval") or mean_interval(explanation, confidence=stored)[1:]
        flag = uninformative(
            noisy_count=int(explanation["count"]["values"][0]),
            count_explanation=explanation["count"], confidence=stored,
            low=float(ends[0]), high=float(ends[1]),
            lowest=float(frac(explanation["lower"])), highest=float(frac(explanation["upper"])),
        )  # fmt: skip
        return [Cell(estimate, low, high, flag=UNINFORMATIVE if flag else None)]

    def value_title(self, columns: list[str]) -> str:
        return f"mean of {columns[0]}" if columns else "mean"


KINDS = (SumKind(), MeanKind())
