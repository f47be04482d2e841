"""Accuracy previews for grouped statistics, quantiles and spread, and their inverses.

From public parameters and owner-supplied planning guesses only (never the
data), by building the very NoiseSpecs the mechanisms will use:

- grouped count / sum: the half-width of each cell's noise (value units), per
  cell or for all G cells at once (beta/G each); sums on the released-sum grid
  gamma = sensitivity.sum_granularity(lo, hi, epsilon, L, rows_bound=MAX_ROWS)
  (the rule the worker uses) plus the rounding bound their spec records;
- grouped mean: as planning's mean (mean_pivot.mean_pivot_halfwidth, the pivot
  each cell's interval inverts), with a guess n of the SMALLEST group's rows, at
  1 - beta per cell or 1 - beta/G for all cells at once; the grid uses the sum
  part's epsilon;
- quantiles: quantiles.rank_error_bound (ranks; no guess needed);
- spread: half the width of the standard deviation's interval for a column of n
  rows whose sd is `sd_guess` (default (hi - lo)/4) with its mean at the centre
  of the range, read when every noisy part sits at its true value
  (spread_parts.variance_interval, the released interval's construction);
- epsilon_for_target: the smallest epsilon (3 significant digits, rounded up)
  whose preview meets a target, by bisection in log(epsilon) over
  planning.EPSILON_RANGE (previews do not increase with epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from dpportal.privacy.accuracy import spec_halfwidth
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop, record
from dpportal.privacy.grouped import grouped_count_noise, grouped_mean_noise, grouped_sum_noise
from dpportal.privacy.grouped_release import cell_confidence
from dpportal.privacy.mean_pivot import NoiseLaw, mean_pivot_halfwidth
from dpportal.privacy.params import (
    check_bounds,
    check_confidence,
    check_epsilon,
    round_up_sig,
    to_fraction,
)
from dpportal.privacy.planning import bisect_epsilon
from dpportal.privacy.sensitivity import MAX_ROWS, grid_bounds, sum_granularity
from dpportal.privacy.spread import spread_noise
from dpportal.privacy.spread_interval import variance_interval
from dpportal.privacy.spread_parts import (
    spread_granularity,
    sqrt_ceil,
    sqrt_floor,
)

__all__ = ["grouped_halfwidth", "spread_sd_halfwidth", "epsilon_for_target"]

_DIGITS = 3


def _guess(n_guess: object) -> Fraction:
    if n_guess is None:
        raise PrivacyParameterError(
            gettext_noop("this preview needs a planning guess n_guess of rows")
        )
    n = to_fraction(n_guess, "n_guess")
    if n < 1:
        raise PrivacyParameterError(
            gettext_noop("n_guess must be >= 1, got %(n_guess)s"), n_guess=repr(n_guess)
        )
    return n


def grouped_halfwidth(
    *,
    kind: str,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    confidence: object,
    contribution_bound: object = 1,
    groups: object,
    group_bound: object = None,
    lower: object = None,
    upper: object = None,
    n_guess: object = None,
    simultaneous: bool = False,
    sum_share: object = Fraction(1, 2),
) -> float:
    """Half-width (value units) of a grouped count, sum or mean cell; see the module docstring."""
    conf = check_confidence(confidence)
    eps = check_epsilon(epsilon)
    common = dict(
        mechanism=mechanism,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=groups,
        group_bound=group_bound,
    )
    if kind == "grouped_count":
        spec = grouped_count_noise(epsilon=eps, **common)
        return float(spec_halfwidth(spec, conf, spec.cells if simultaneous else 1))
    if lower is None or upper is None:
        raise PrivacyParameterError(
            gettext_noop("grouped sums and means need public bounds lower and upper")
        )
    lo, hi = check_bounds(lower, upper)
    if kind == "grouped_sum":
        gamma = sum_granularity(
            lo, hi, epsilon=eps, contribution_bound=contribution_bound, rows_bound=MAX_ROWS
        )
        spec = grouped_sum_noise(lower=lo, upper=hi, granularity=gamma, epsilon=eps, **common)
        units = spec_halfwidth(spec, conf, spec.cells if simultaneous else 1)
        return float(units * gamma + (spec.rounding_bound or 0))
    if kind != "grouped_mean":
        raise PrivacyParameterError(
            gettext_noop("unknown grouped statistic %(kind)s"), kind=repr(kind)
        )
    n = _guess(n_guess)
    share = to_fraction(sum_share, "sum_share")
    gamma = sum_granularity(lo, hi, epsilon=eps * share, contribution_bound=contribution_bound)
    sum_spec, count_spec = grouped_mean_noise(
        lower=lo, upper=hi, granularity=gamma, epsilon=eps, sum_share=share, **common
    )
    return float(
        mean_pivot_halfwidth(
            n=n,
            sum_law=NoiseLaw.of_spec(sum_spec),
            count_law=NoiseLaw.of_spec(count_spec),
            granularity=gamma,
            lower=lo,
            upper=hi,
            confidence=cell_confidence(conf, sum_spec.cells if simultaneous else 1),
        )
    )


def spread_sd_halfwidth(
    *,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    confidence: object,
    contribution_bound: object = 1,
    lower: object,
    upper: object,
    n_guess: object,
    sd_guess: object = None,
    groups: object = 1,
    group_bound: object = None,
    shares: object = None,
    simultaneous: bool = False,
) -> float:
    """Half the width of the sd interval (value units) for the guessed column (docstring)."""
    conf = check_confidence(confidence)
    lo, hi = check_bounds(lower, upper)
    n = math.floor(_guess(n_guess))
    sd = (hi - lo) / 4 if sd_guess is None else to_fraction(sd_guess, "sd_guess")
    if not 0 <= sd <= (hi - lo) / 2:
        raise PrivacyParameterError(
            gettext_noop("sd_guess must lie between 0 and (upper - lower)/2")
        )
    gamma = spread_granularity(lo, hi, epsilon=epsilon, contribution_bound=contribution_bound)
    specs = spread_noise(
        lower=lo,
        upper=hi,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=groups,
        group_bound=group_bound,
        shares=shares,
    )
    if simultaneous:
        conf = 1 - (1 - conf) / specs[0].cells
    lo_u, hi_u = grid_bounds(lo, hi, gamma)
    w_bound = hi_u - lo_u
    squares = math.floor(n * (2 * sd / gamma) ** 2)
    cell = variance_interval(
        noisy_count=n,
        noisy_sum=0,
        noisy_squares=squares,
        laws=(NoiseLaw.of_spec(specs[0]), NoiseLaw.of_spec(specs[1]), NoiseLaw.of_spec(specs[2])),
        w_bound=w_bound,
        confidence=conf,
    )
    factor = gamma**2 / 4
    return float((sqrt_ceil(cell.high * factor) - sqrt_floor(cell.low * factor)) / 2)


def epsilon_for_target(preview: Callable[[Fraction], float], target: object) -> Fraction:
    """The smallest epsilon (3 significant digits, rounded up) with preview(epsilon) <= target.

    preview must not increase with epsilon (all previews here). Raises
    PrivacyParameterError when even the largest epsilon of planning.EPSILON_RANGE fails.
    """
    goal = float(to_fraction(target, "target"))

    def refine(eps: Fraction) -> Fraction:
        while preview(eps) > goal:
            eps = round_up_sig(eps * Fraction(1001, 1000), _DIGITS)
        return eps

    return bisect_epsilon(
        preview, goal, record(gettext_noop("a target of %(target)s"), target=str(target)), refine
    )
