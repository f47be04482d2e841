"""A quantile's rank error in the data's units: an estimate under a stated assumption.

A rank error t says how many values may lie between a released candidate and the
true quantile; how far that is in the data's units depends on how densely the
values lie there, which only the data knows. Both figures below are therefore
estimates under an assumption each surface states beside them, never guarantees:
the rank statement stays the guarantee. Neither reads the data: before the release
the owner's planning guess n and the public grid (values spread evenly over it);
after it, the same n (or a released noisy count) and the released quantiles
themselves as the shape of the distribution. Both add one grid step: the released
value is a grid point, and the candidate closest in rank to the target may lie up
to one step from the true quantile.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import to_fraction
from dpportal.privacy.quantiles import check_grid, check_quantile

__all__ = ["grid_step", "planning_value_error", "value_range_from_released"]


def grid_step(candidates: Sequence[object]) -> Fraction:
    """The largest gap between adjacent candidates of a public grid (0 for one candidate)."""
    return check_grid(candidates).largest_step


def _positive_count(n: object) -> Fraction:
    count = to_fraction(n, "n")
    if count < 1:
        raise PrivacyParameterError(gettext_noop("n must be >= 1, got %(n)s"), n=repr(n))
    return count


def planning_value_error(
    *, rank_error: object, n_guess: object, first: object, last: object, step: object
) -> float:
    """Before the release: about how far, in the data's units, a released quantile may be
    from the true one IF the n_guess values were spread evenly over [first, last] (the grid):

        (last - first) t / n  +  step,   at most last - first.

    A planning figure from public inputs only (the rank error t, the owner's guess n,
    the grid's ends and its largest step), never a guarantee.
    """
    lo, hi = to_fraction(first, "first"), to_fraction(last, "last")
    t, st = to_fraction(rank_error, "rank_error"), to_fraction(step, "step")
    if hi < lo or t < 0 or st < 0:
        raise PrivacyParameterError(gettext_noop("the grid or the rank error is not valid"))
    n = _positive_count(n_guess)
    return float(min(hi - lo, (hi - lo) * t / n + st))


def value_range_from_released(
    *,
    quantiles: Sequence[object],
    values: Sequence[object],
    rank_errors: Sequence[float],
    n: object,
    first: object,
    last: object,
    step: object,
) -> list[tuple[float, float]]:
    """After the release: for each released quantile, about where the true quantile lies
    in the data's units, (low, high), from public values only.

    The shape of the data is read from the released quantiles themselves: a
    piecewise-linear distribution function through (first, 0), each released value at
    its quantile (sorted, so that it increases) and (last, 1). Quantile q with rank
    error t and n values (the owner's planning guess, or a released noisy count) then
    lies between the values this shape gives to q - t/n and q + t/n, widened by one
    grid step and kept within [first, last]. An estimate under that assumption, not a
    guarantee: the rank statement is the guarantee.
    """
    qs = [float(check_quantile(q)) for q in quantiles]
    vs = sorted(float(to_fraction(v, "value")) for v in values)
    if len(qs) != len(vs) or len(rank_errors) != len(qs):
        raise ValueError("one value and one rank error per quantile are needed")
    lo, hi = float(to_fraction(first, "first")), float(to_fraction(last, "last"))
    st = float(to_fraction(step, "step"))
    count = float(_positive_count(n))
    order = sorted(range(len(qs)), key=lambda i: qs[i])
    knots_q = [0.0, *(qs[i] for i in order), 1.0]
    knots_v = [lo, *vs, hi]
    out = []
    for q, t in zip(qs, rank_errors, strict=True):
        d = float(t) / count
        low = float(np.interp(max(0.0, q - d), knots_q, knots_v)) - st
        high = float(np.interp(min(1.0, q + d), knots_q, knots_v)) + st
        out.append((max(lo, low), min(hi, high)))
    return out
