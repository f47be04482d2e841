"""The releases app's one doorway into dpportal.privacy: it loops over the statistic kinds.

Each statistic is costed, previewed, noised and recorded by its kind
(releases.kinds); this module composes them into a release. Planning and the
mechanisms receive the same parameters from the kind, so a preview and a
release cannot disagree. Nothing here sees data except `noisy_entry`, which
receives a true aggregate in memory, draws the noise once and returns only
public, noisy numbers.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpportal.privacy import accounting
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.rng import RandomSource
from releases import kinds

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan


def release_cost(*, plan: ReleasePlan) -> tuple[Decimal, Decimal]:
    """The release's (epsilon, delta) by sequential composition (accounting.release_cost)."""
    total = accounting.release_cost(
        [kinds.get(s.kind).cost(plan=plan, stat=s) for s in plan.statistics]
    )
    # shares are decimals, so the exact total is a finite decimal
    return (
        Decimal(total.epsilon.numerator) / Decimal(total.epsilon.denominator),
        Decimal(total.delta.numerator) / Decimal(total.delta.denominator),
    )


def statistic_accuracy(*, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
    """The preview of one statistic: cells and half-widths per cell and all at once."""
    return kinds.get(stat.kind).accuracy(plan=plan, stat=stat)


def statistic_noise(*, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
    """The exact noise the mechanism will give `stat` (public only)."""
    return kinds.get(stat.kind).noise(plan=plan, stat=stat)


def statistic_records(*, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
    """One statistic's mechanism records for the tight accountant."""
    return list(kinds.get(stat.kind).records(plan=plan, stat=stat))


def release_mechanisms(*, plan: ReleasePlan) -> list[dict[str, Any]]:
    """The release's mechanism records (exact parameters) for the tight accountant,
    equal mechanisms merged (self-composition), as JSON dicts (MechanismRecord.to_dict)."""
    records = [r for stat in plan.statistics for r in statistic_records(plan=plan, stat=stat)]
    return [r.to_dict() for r in merge_records(records)]


def planning_key(*, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
    """Everything the kind's accuracy, noise and records read of (plan, stat), hashable."""
    return kinds.get(stat.kind).planning_key(plan=plan, stat=stat)


def epsilon_for_target(*, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
    """The smallest epsilon whose per-cell half-width (or rank error) meets the target."""
    return kinds.get(stat.kind).epsilon_for_target(plan=plan, stat=stat)


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
    the explanation (public parameters) only. `cells`: the grouping axes
    (releases.compute.Axis). `rng`: the OS CSPRNG when None; tests alone pass a
    seeded source (dpportal.privacy.rng.SeededTestRandom).
    """
    return kinds.get(entry["kind"]).noisy_entry(
        entry=entry, aggregate=aggregate, mechanism=mechanism, confidence=confidence,
        contribution_bound=contribution_bound, axes=cells, rng=rng,
    )  # fmt: skip
