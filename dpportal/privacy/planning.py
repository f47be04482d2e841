"""Accuracy-first planning from public parameters only (what the live preview calls).

`statistic_halfwidth` gives the half-width a statistic WILL have, by building
the very NoiseSpec the mechanism would use (dpportal.privacy.noise) and taking
the exact half-width of the noise that would be sampled (dpportal.privacy.accuracy).
`epsilon_for_halfwidth` inverts it: the smallest epsilon meeting a target
half-width, rounded UP to 3 significant digits so that it still meets it.

Per kind (h(beta) = half-width of the noise at confidence 1 - beta):
- count: h in counts; histogram: per cell, or all `cells` at once (beta/cells each);
- sum: h in grid units times the granularity gamma = sensitivity.sum_granularity
  (rows_bound=MAX_ROWS), plus the rounding bound the spec records (the interval
  covers the clipped sum);
- mean: with an owner-supplied planning guess n of the number of rows (never
  the data): q / n + r, q the exact pivot quantile of the piece of means
  farthest from 0 and r one row's rounding gap, capped at upper - lower: the
  half-width of the released interval when both noisy parts sit at their
  expectations and the mean at that bound (mean_pivot.mean_pivot_halfwidth,
  the same quantiles the release uses);
- argmax: the argmax has no interval; this returns the half-width of each noisy
  count (discrete Laplace, scale L/eps), per count or for all at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from dpportal.privacy.accuracy import (
    discrete_gaussian_halfwidth,
    gaussian_halfwidth,
    spec_halfwidth,
)
from dpportal.privacy.calibration import SIGMA_DIGITS
from dpportal.privacy.errors import PrivacyParameterError, Record, gettext_noop, record
from dpportal.privacy.mean_pivot import NoiseLaw, mean_pivot_halfwidth
from dpportal.privacy.noise import argmax_noise, count_noise, mean_noise, sum_noise
from dpportal.privacy.params import (
    check_bounds,
    check_cells,
    check_confidence,
    check_epsilon,
    decimal_exponent,
    round_down_sig,
    round_up_sig,
    to_fraction,
)
from dpportal.privacy.sensitivity import MAX_ROWS, sum_granularity

__all__ = [
    "EPSILON_RANGE",
    "statistic_halfwidth",
    "epsilon_for_halfwidth",
    "laplace_epsilon_for_halfwidth",
    "sigma_for_halfwidth",
]

EPSILON_RANGE = (Fraction(1, 10**6), Fraction(1000))
_EPSILON_DIGITS = 3


def _need_bounds(lower: object, upper: object) -> tuple[Fraction, Fraction]:
    if lower is None or upper is None:
        raise PrivacyParameterError(gettext_noop("sum and mean need public bounds lower and upper"))
    return check_bounds(lower, upper)


def statistic_halfwidth(
    *,
    kind: str,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    confidence: object,
    contribution_bound: object = 1,
    cells: object = 1,
    lower: object = None,
    upper: object = None,
    n_guess: object = None,
    simultaneous: bool = False,
    sum_share: object = Fraction(1, 2),
) -> float:
    """Half-width (value units) a statistic will have at `confidence`; see the module docstring."""
    conf = check_confidence(confidence)
    eps = check_epsilon(epsilon)
    k = check_cells(cells, "cells")
    common = dict(mechanism=mechanism, epsilon=eps, delta=delta)
    if kind == "count":
        return float(
            spec_halfwidth(count_noise(**common, contribution_bound=contribution_bound), conf)
        )
    if kind == "histogram":
        spec = count_noise(
            **common, contribution_bound=contribution_bound, cells=k, statistic="histogram"
        )
        return float(spec_halfwidth(spec, conf, k if simultaneous else 1))
    if kind == "argmax":
        if mechanism != "laplace":
            raise PrivacyParameterError(
                gettext_noop("argmax (Report Noisy Max) uses Laplace noise only")
            )
        spec = argmax_noise(epsilon=eps, contribution_bound=contribution_bound, cells=k)
        return float(spec_halfwidth(spec, conf, k if simultaneous else 1))
    if kind == "sum":
        lo, hi = _need_bounds(lower, upper)
        gamma = sum_granularity(
            lo, hi, epsilon=eps, contribution_bound=contribution_bound, rows_bound=MAX_ROWS
        )
        spec = sum_noise(
            lower=lo,
            upper=hi,
            granularity=gamma,
            contribution_bound=contribution_bound,
            **common,
        )
        return float(spec_halfwidth(spec, conf) * gamma + (spec.rounding_bound or 0))
    if kind == "mean":
        return _mean_halfwidth(
            eps, delta, mechanism, conf, contribution_bound, lower, upper, n_guess, sum_share
        )
    raise PrivacyParameterError(gettext_noop("unknown statistic kind %(kind)s"), kind=repr(kind))


def _mean_halfwidth(
    eps: Fraction,
    delta: object,
    mechanism: str,
    conf: Fraction,
    contribution_bound: object,
    lower: object,
    upper: object,
    n_guess: object,
    sum_share: object,
) -> float:
    lo, hi = _need_bounds(lower, upper)
    if n_guess is None:
        raise PrivacyParameterError(
            gettext_noop("a mean's half-width needs a planning guess n_guess of rows")
        )
    n = to_fraction(n_guess, "n_guess")
    if n < 1:
        raise PrivacyParameterError(
            gettext_noop("n_guess must be >= 1, got %(n_guess)s"), n_guess=repr(n_guess)
        )
    share = to_fraction(sum_share, "sum_share")
    gamma = sum_granularity(lo, hi, epsilon=eps * share, contribution_bound=contribution_bound)
    sum_spec, count_spec = mean_noise(
        lower=lo,
        upper=hi,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=eps,
        delta=delta,
        contribution_bound=contribution_bound,
        sum_share=share,
    )
    return float(
        mean_pivot_halfwidth(
            n=n,
            sum_law=NoiseLaw.of_spec(sum_spec),
            count_law=NoiseLaw.of_spec(count_spec),
            granularity=gamma,
            lower=lo,
            upper=hi,
            confidence=conf,
        )
    )


def epsilon_for_halfwidth(
    *,
    kind: str,
    mechanism: str,
    halfwidth: object,
    delta: object = 0,
    confidence: object,
    contribution_bound: object = 1,
    cells: object = 1,
    lower: object = None,
    upper: object = None,
    n_guess: object = None,
    simultaneous: bool = False,
    sum_share: object = Fraction(1, 2),
) -> Fraction:
    """The smallest epsilon (3 significant digits, rounded up) whose half-width is <= `halfwidth`.

    Bisection in log(epsilon) on statistic_halfwidth, which does not increase
    with epsilon, over EPSILON_RANGE = [1e-6, 1000]; the result is rounded up to
    3 significant digits, then moved by one unit of the last digit while that
    still (or first) meets the target, so it is the smallest such 3-digit value.
    Raises PrivacyParameterError if even epsilon = 1000 is not enough. For the
    Gaussian, sigma is recomputed at each epsilon at this delta.
    """
    target = float(to_fraction(halfwidth, "halfwidth"))
    if target < 0:
        raise PrivacyParameterError(
            gettext_noop("halfwidth must be >= 0, got %(halfwidth)s"), halfwidth=repr(halfwidth)
        )

    def width(eps: Fraction) -> float:
        return statistic_halfwidth(
            kind=kind,
            mechanism=mechanism,
            epsilon=eps,
            delta=delta,
            confidence=confidence,
            contribution_bound=contribution_bound,
            cells=cells,
            lower=lower,
            upper=upper,
            n_guess=n_guess,
            simultaneous=simultaneous,
            sum_share=sum_share,
        )

    def refine(eps: Fraction) -> Fraction:
        while width(eps) > target:
            eps += _digit_step(eps)
        while (smaller := _next_below(eps)) >= EPSILON_RANGE[0] and width(smaller) <= target:
            eps = smaller
        return eps

    return bisect_epsilon(
        width,
        target,
        record(gettext_noop("a half-width of %(halfwidth)s"), halfwidth=str(halfwidth)),
        refine,
    )


def bisect_epsilon(
    width: Callable[[Fraction], float],
    target: float,
    what: Record,
    refine: Callable[[Fraction], Fraction],
) -> Fraction:
    """The smallest epsilon of EPSILON_RANGE with width(epsilon) <= target, by bisection.

    width must not increase with epsilon. The lower end of the range when it
    already meets the target; else bisection in log(epsilon), rounded up to 3
    significant digits and passed through `refine` (the caller's last-digit
    adjustment). Raises PrivacyParameterError naming `what` (a record) when even the upper
    end of the range fails.
    """
    lo, hi = EPSILON_RANGE
    if width(hi) > target:
        raise PrivacyParameterError(
            gettext_noop("%(what)s is not reachable with epsilon <= %(hi)s"),
            what=what,
            hi=str(hi),
        )
    if width(lo) <= target:
        return lo
    log_lo, log_hi = math.log(lo), math.log(hi)
    while log_hi - log_lo > 1e-7:
        mid = (log_lo + log_hi) / 2
        if width(Fraction(math.exp(mid))) <= target:
            log_hi = mid
        else:
            log_lo = mid
    return refine(round_up_sig(Fraction(math.exp(log_hi)), _EPSILON_DIGITS))


def _next_below(eps: Fraction) -> Fraction:
    """The largest value with 3 significant digits that is < eps."""
    return round_down_sig(eps * (1 - Fraction(1, 10**9)), _EPSILON_DIGITS)


def _digit_step(eps: Fraction) -> Fraction:
    """One unit in the last of the 3 significant digits of eps."""
    return Fraction(10) ** (decimal_exponent(eps) - _EPSILON_DIGITS + 1)


def sigma_for_halfwidth(halfwidth: object, confidence: object, k: object = 1) -> Fraction:
    """The largest sigma (4 significant digits) whose discrete Gaussian half-width is <= h.

    h in units (counts or grid units), per cell (k = 1) or for k cells at once.
    Accuracy-first Gaussian planning: pick sigma here, then the epsilon it costs
    at a given delta comes from epsilon_for_halfwidth (same target) or, for a
    continuous view, from calibration.continuous_gaussian_delta.
    """
    h = to_fraction(halfwidth, "halfwidth")
    if h <= 0:
        raise PrivacyParameterError(
            gettext_noop("halfwidth must be > 0, got %(halfwidth)s"), halfwidth=repr(halfwidth)
        )
    z = gaussian_halfwidth(1, confidence, k)  # the normal quantile

    def meets(sigma: Fraction) -> bool:
        return discrete_gaussian_halfwidth(sigma, confidence, k) <= h

    lo, hi = Fraction(1, 10**6), h / Fraction(z) + 1  # meets(lo) holds for h >= 1
    if not meets(lo):
        raise PrivacyParameterError(
            gettext_noop("a half-width of %(halfwidth)s units is below any sigma's"),
            halfwidth=str(halfwidth),
        )
    while hi - lo > hi * Fraction(1, 10**7):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    sigma = round_down_sig(lo, SIGMA_DIGITS)
    while not meets(sigma):
        sigma = round_down_sig(sigma * (1 - Fraction(1, 10**9)), SIGMA_DIGITS)
    return sigma


def laplace_epsilon_for_halfwidth(
    halfwidth: object, confidence: object, l1_sensitivity: object, k: object = 1
) -> float:
    """Continuous-Laplace inverse of laplace_halfwidth: eps = Delta1 ln(k / beta) / h."""
    h = to_fraction(halfwidth, "halfwidth")
    if h <= 0:
        raise PrivacyParameterError(
            gettext_noop("halfwidth must be > 0, got %(halfwidth)s"), halfwidth=repr(halfwidth)
        )
    beta = (1 - check_confidence(confidence)) / check_cells(k)
    return float(to_fraction(l1_sensitivity, "l1_sensitivity")) * -math.log(beta) / float(h)
