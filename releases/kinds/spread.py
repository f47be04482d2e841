"""Spread kinds: the standard deviation or variance of one numeric column, overall or in
each group, from three noised parts (count N, centred sum S, sum of squares Q) with
the budget split SPREAD_SHARES (dpportal.privacy.spread).

The sum and the squares are noised in centred half-grid units (w = 2u - (lo_u + hi_u)):
one unit of S is gamma/2 in value units, one unit of Q (gamma/2)**2; N counts rows.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpportal.privacy import planning_stats
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Delta, Epsilon, exact_str
from dpportal.privacy.spread import DEFAULT_SHARES, release_spread, spread_intervals, spread_noise
from dpportal.privacy.spread_parts import spread_granularity
from releases.kinds.base import (
    UNINFORMATIVE,
    Cell,
    exact_fraction,
    frac,
    set_group_cells,
    statistic_errors,
    uninformative,
)
from releases.kinds.grouped import GroupedKind, entry_head, group_count

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

SPREAD_SHARES = [exact_str(s) for s in DEFAULT_SHARES]


class SpreadKind(GroupedKind):
    """The standard deviation; VarianceKind differs only in which value it publishes."""

    name = "stddev"
    opendp_missing = (
        "OpenDP's variance needs a known number of rows; the portal's spreads its budget "
        "over a noisy count, sum and sum of squares and inverts their joint law"
    )
    aggregate = "spread"
    grouped = True
    value_key = "sd"
    # each cell's interval inverts the joint law of three parts (spread_interval):
    # far dearer to read back than a histogram's, so fewer cells keep pages fast
    cell_limit_setting = "RELEASE_MAX_SPREAD_CELLS"

    def granularity(self, *, lower, upper, epsilon, contribution_bound: int) -> Fraction:
        return spread_granularity(
            frac(lower), frac(upper), epsilon=frac(epsilon), contribution_bound=contribution_bound
        )

    def halfwidth(self, plan, stat, epsilon, simultaneous=False) -> float:
        return planning_stats.spread_sd_halfwidth(
            **self._common(plan, stat, epsilon), confidence=frac(plan.confidence),
            lower=frac(stat.lower), upper=frac(stat.upper), n_guess=stat.n_guess or 1,
            groups=group_count(stat), simultaneous=simultaneous,
        )  # fmt: skip

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return spread_noise(
                lower=frac(stat.lower), upper=frac(stat.upper),
                granularity=self.planned_granularity(plan=plan, stat=stat),
                groups=group_count(stat), **self._common(plan, stat, stat.epsilon),
            )  # fmt: skip

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        out = super().spec_fields(stat, contribution_bound=contribution_bound)
        out["shares"] = list(SPREAD_SHARES)
        return out

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        set_group_cells(out, axes)
        counts, sums, squares = (list(v) for v in aggregate)
        result = release_spread(
            counts, sums, squares, lower=frac(entry["lower"]), upper=frac(entry["upper"]),
            granularity=frac(entry["granularity"]), mechanism=mechanism,
            epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, rng=rng, confidence=frac(confidence),
        )  # fmt: skip
        out["values"] = [cell[self.value_key] for cell in result.cells(frac(confidence))]
        out["explanation"] = result.to_dict()
        return out

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        half = granularity / 2
        return [("count", "rows", Fraction(1)), ("sum", "value", half),
                ("squares", "value²", half * half)]  # fmt: skip

    def explanation_parts(self, explanation: dict[str, Any]):
        yield explanation["count"]
        yield explanation["sum"]
        yield explanation["squares"]

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """Each cell's interval at `confidence`; a cell flagged UNINFORMATIVE by
        base.uninformative at the release's own confidence (the widest a spread can be:
        half the declared range for the standard deviation, its square for the variance),
        else "clamped_low" where a negative variance was clamped to 0."""
        key = self.value_key
        explanation = entry["explanation"]
        cells = spread_intervals(explanation, confidence=confidence, simultaneous=simultaneous)
        stored = exact_fraction(explanation.get("confidence") or confidence)
        if not simultaneous and exact_fraction(confidence) == stored:
            at_stored = cells
        else:
            at_stored = explanation.get("cells") or spread_intervals(explanation, confidence=stored)
        widest = frac(explanation["w_bound"]) * frac(explanation["granularity"]) / 2
        highest = float(widest if key == "sd" else widest * widest)
        out = []
        for cell, own, count in zip(cells, at_stored, explanation["count"]["values"], strict=True):
            low, high = cell[f"{key}_interval"]
            own_low, own_high = own[f"{key}_interval"]
            flag = f"clamped_{cell['clamped']}" if cell["clamped"] else None
            if uninformative(
                noisy_count=int(count), count_explanation=explanation["count"],
                confidence=stored, low=float(frac(own_low)), high=float(frac(own_high)),
                lowest=0.0, highest=highest,
            ):  # fmt: skip
                flag = UNINFORMATIVE
            out.append(Cell(float(frac(cell[key])), float(frac(low)), float(frac(high)),
                            flag=flag))  # fmt: skip
        return out

    def value_title(self, columns: list[str]) -> str:
        return f"standard deviation of {columns[0] if columns else ''}"

    def layout(self, entry: dict[str, Any]) -> str:
        if entry.get("shape"):
            return "grouped_bars"
        return "figure" if len(entry.get("cells") or []) == 1 else "bars"


class VarianceKind(SpreadKind):
    name = "variance"
    value_key = "variance"

    def value_title(self, columns: list[str]) -> str:
        return f"variance of {columns[0] if columns else ''}"


KINDS = (SpreadKind(), VarianceKind())
