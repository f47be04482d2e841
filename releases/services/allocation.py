"""The epsilon and delta split of a release (documented for the builder page).

- a statistic with a target half-width gets the epsilon solved from it;
- a statistic marked "hold" keeps the epsilon given for it;
- every other statistic shares what remains of the total in proportion to its
  weight (equal weights: an equal split).
If every statistic is fixed, the release's total is their sum. Delta (Gaussian
only) is split over the statistics in proportion to their weights (the most
common category uses Report Noisy Max with Laplace noise and quantiles use
permute-and-flip: both are pure epsilon and take no delta).

The shares add up EXACTLY to the total the owner typed: each proportional share
is rounded down to the ledger's precision and the rounding remainder (fewer
quanta than there are statistics) goes to the largest share (the first of
equals), so a total of 1 over three statistics is 0.333333333334 +
0.333333333333 + 0.333333333333, never 0.999999999999. An epsilon solved from
a target is rounded UP (the target must still be met).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_DOWN, Decimal
from fractions import Fraction

from django.utils.translation import gettext

from budgets.amounts import EXACT, add, sub, text, total
from budgets.models import DELTA_FIELD, EPSILON_FIELD
from dpportal.errors import ValidationFailed
from releases import dp, kinds
from releases.plans import ReleasePlan

EPS_QUANTUM = Decimal(1).scaleb(-EPSILON_FIELD["decimal_places"])
DELTA_QUANTUM = Decimal(1).scaleb(-DELTA_FIELD["decimal_places"])


def _quantize_eps(value: Fraction | Decimal) -> Decimal:
    if isinstance(value, Fraction):
        value = EXACT.divide(Decimal(value.numerator), Decimal(value.denominator))
    return Decimal(value).quantize(EPS_QUANTUM, rounding=ROUND_DOWN, context=EXACT)


def split_exactly(
    total_amount: Decimal, weights: Sequence[Decimal], quantum: Decimal
) -> list[Decimal]:
    """`total_amount` split in proportion to `weights`, on multiples of `quantum`, summing EXACTLY.

    Each share is its exact proportional value rounded down to the quantum; the
    remainder (less than one quantum per share) is added to the largest share
    (the first of equals). `total_amount` must itself be a multiple of `quantum`.
    """
    if total_amount != total_amount.quantize(quantum, context=EXACT):
        raise ValueError("the total is finer than the quantum")
    whole = sum((Fraction(w) for w in weights), Fraction(0))
    shares = []
    for weight in weights:
        exact = Fraction(total_amount) * Fraction(weight) / whole
        shares.append(_round_down(exact, quantum))
    remainder = sub(total_amount, total(shares))
    if shares and remainder:
        largest = max(range(len(shares)), key=lambda i: (shares[i], -i))
        shares[largest] = add(shares[largest], remainder)
    return shares


def _round_down(value: Fraction, quantum: Decimal) -> Decimal:
    units = Fraction(value) / Fraction(quantum)
    return EXACT.multiply(Decimal(units.numerator // units.denominator), quantum)


def _check_places(value: Decimal, *, quantum: Decimal, what: str) -> None:
    """The ledger holds `quantum` steps: a finer amount could never be split exactly."""
    if value != value.quantize(quantum, context=EXACT):
        places = -quantum.as_tuple().exponent
        raise ValidationFailed(
            gettext("%(field)s may have at most %(places)s decimal places.")
            % {"field": what, "places": places}
        )


def allocate(plan: ReleasePlan) -> None:
    stats = plan.statistics
    # delta first (targets for Gaussian statistics need their delta share)
    if plan.mechanism == "gaussian":
        takers = [s for s in stats if not kinds.get(s.kind).pure]
        if takers:
            _check_places(plan.delta, quantum=DELTA_QUANTUM, what=gettext("The total delta"))
            shares = split_exactly(plan.delta, [s.weight for s in takers], DELTA_QUANTUM)
            for s, share in zip(takers, shares, strict=True):
                if share <= 0:
                    raise ValidationFailed(
                        gettext("Delta is too small to share between the statistics.")
                    )
                s.delta = share
        else:
            plan.delta = Decimal(0)
    for s in stats:
        if s.target_halfwidth is not None:
            solved = dp.epsilon_for_target(plan=plan, stat=s)
            # round UP to the ledger's precision: the target must still be met
            s.epsilon = _quantize_eps(solved)
            if s.epsilon < Fraction(solved):
                s.epsilon += EPS_QUANTUM
        elif s.hold:
            what = gettext("The epsilon held by statistic %(number)s") % {"number": s.position + 1}
            _check_places(s.epsilon_given, quantum=EPS_QUANTUM, what=what)
            s.epsilon = s.epsilon_given
    fixed = [s for s in stats if s.target_halfwidth is not None or s.hold]
    rest = [s for s in stats if s not in fixed]
    fixed_total = total(s.epsilon for s in fixed)
    if rest:
        _check_places(plan.epsilon, quantum=EPS_QUANTUM, what=gettext("The total epsilon"))
        remaining = sub(plan.epsilon, fixed_total)
        if remaining <= 0:
            raise ValidationFailed(
                gettext(
                    "The held and targeted statistics already use epsilon %(used)s, all of the "
                    "total %(total)s: raise the total or release a hold."
                )
                % {"used": text(fixed_total), "total": text(plan.epsilon)}
            )
        shares = split_exactly(remaining, [s.weight for s in rest], EPS_QUANTUM)
        for s, share in zip(rest, shares, strict=True):
            if share <= 0:
                raise ValidationFailed(
                    gettext("Epsilon is too small to share between the statistics.")
                )
            s.epsilon = share
    else:
        plan.epsilon = fixed_total
    if plan.mechanism != "gaussian" or all(kinds.get(s.kind).pure for s in stats):
        plan.delta = Decimal(0)
