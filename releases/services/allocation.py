"""The epsilon and delta split of a release (documented for the builder page).

- a statistic with a target half-width gets the epsilon solved from it;
- a statistic marked "hold" keeps the epsilon given for it;
- every other statistic shares what remains of the total in proportion to its
  weight (equal weights: an equal split).
If every statistic is fixed, the release's total is their sum. Delta (Gaussian
only) is split over the statistics in proportion to their weights (the most
common category uses Report Noisy Max with Laplace noise and takes no delta).
Shares are rounded DOWN to the ledger's precision, so the cost never exceeds
the total asked for; an epsilon solved from a target is rounded UP (the target
must still be met).
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from budgets.amounts import fmt
from budgets.models import DELTA_FIELD, EPSILON_FIELD
from dpportal.errors import ValidationFailed
from releases import dp

if TYPE_CHECKING:
    from releases.services.plan import ReleasePlan
EPS_QUANTUM = Decimal(1).scaleb(-EPSILON_FIELD["decimal_places"])
DELTA_QUANTUM = Decimal(1).scaleb(-DELTA_FIELD["decimal_places"])


def _quantize_eps(value: Fraction | Decimal) -> Decimal:
    if isinstance(value, Fraction):
        value = Decimal(value.numerator) / Decimal(value.denominator)
    return Decimal(value).quantize(EPS_QUANTUM, rounding=ROUND_DOWN)


def _share(total: Decimal, weight: Decimal, weights: Decimal, quantum: Decimal) -> Decimal:
    exact = Fraction(total) * Fraction(weight) / Fraction(weights)
    return (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(
        quantum, rounding=ROUND_DOWN
    )


def allocate(plan: ReleasePlan) -> None:
    stats = plan.statistics
    # delta first (targets for Gaussian statistics need their delta share)
    if plan.mechanism == "gaussian":
        takers = [s for s in stats if s.kind != "argmax"]
        weights = sum((s.weight for s in takers), Decimal(0))
        for s in takers:
            s.delta = _share(plan.delta, s.weight, weights, DELTA_QUANTUM)
            if s.delta <= 0:
                raise ValidationFailed("Delta is too small to share between the statistics.")
        if not takers:
            plan.delta = Decimal(0)
    for s in stats:
        if s.target_halfwidth is not None:
            solved = dp.epsilon_for_target(plan=plan, stat=s)
            # round UP to the ledger's precision: the target must still be met
            s.epsilon = _quantize_eps(solved)
            if s.epsilon < Fraction(solved):
                s.epsilon += EPS_QUANTUM
        elif s.hold:
            s.epsilon = s.epsilon_given
    fixed = [s for s in stats if s.target_halfwidth is not None or s.hold]
    rest = [s for s in stats if s not in fixed]
    fixed_total = sum((s.epsilon for s in fixed), Decimal(0))
    if rest:
        remaining = plan.epsilon - fixed_total
        if remaining <= 0:
            raise ValidationFailed(
                f"The held and targeted statistics already use epsilon {fmt(fixed_total)}, "
                f"all of the total {fmt(plan.epsilon)}: raise the total or release a hold."
            )
        weights = sum((s.weight for s in rest), Decimal(0))
        for s in rest:
            s.epsilon = _share(remaining, s.weight, weights, EPS_QUANTUM)
            if s.epsilon <= 0:
                raise ValidationFailed("Epsilon is too small to share between the statistics.")
    else:
        plan.epsilon = fixed_total
    if plan.mechanism != "gaussian" or all(s.kind == "argmax" for s in stats):
        plan.delta = Decimal(0)
