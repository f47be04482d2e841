"""Sensitivities of the supported statistics, and the public integer grid for sums.

Neighbouring datasets differ by adding or removing one privacy unit (unbounded
DP). With an ID column a person keeps at most L rows (the contribution bound),
so one unit changes each statistic by at most L times the one-row change
(DESIGN.md section 3; Dwork & Roth 2014, Def. 3.1 and Section 2.3 on groups):

| statistic | l1 sensitivity | l2 sensitivity |
| count | L | L |
| histogram, disjoint declared cells | L (L rows, one cell each) | L (worst: all in one cell) |
| clipped sum, bounds [lo, hi] | L max(|lo|, |hi|) | same (one coordinate) |
| argmax of counts (Report Noisy Max) | counts move by <= L, all the same way | |

Sums are computed on a public grid of granularity gamma (a power of two):
each value is clipped to [lo, hi] and rounded to the nearest grid point inside
[lo, hi], so in grid units a value lies in [ceil(lo/gamma), floor(hi/gamma)] and
the sum's sensitivity in grid units is L max(|ceil(lo/gamma)|, |floor(hi/gamma)|),
an integer (<= L max(|lo|, |hi|) / gamma). Grid values are exact in float64 as
long as they stay below 2**53, which `grid_bounds` checks.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import (
    check_bounds,
    check_contribution_bound,
    check_epsilon,
    to_fraction,
)

__all__ = [
    "GRID_BITS",
    "count_sensitivity",
    "histogram_sensitivity",
    "sum_sensitivity",
    "argmax_sensitivity",
    "check_granularity",
    "sum_granularity",
    "grid_bounds",
    "sum_sensitivity_units",
    "to_grid_units",
    "rounding_gap",
    "sum_rounding_bound",
    "exact_grid_sum",
    "MAX_ROWS",
]

GRID_BITS = 20
GAP_BITS = 10
MAX_ROWS = 2**40
_FLOAT_EXACT = 1 << 53
_FINEST_BITS = 52


def count_sensitivity(contribution_bound: object = 1) -> int:
    """l1 = l2 sensitivity of a count: L (one person adds or removes up to L rows)."""
    return check_contribution_bound(contribution_bound)


def histogram_sensitivity(contribution_bound: object = 1) -> tuple[int, int]:
    """(l1, l2) sensitivity of a histogram over disjoint cells: (L, L).

    One row touches one cell, so L rows change the count vector by v with
    ||v||_1 <= L and ||v||_2 <= L (equality when all L rows share a cell).
    """
    bound = check_contribution_bound(contribution_bound)
    return bound, bound


def sum_sensitivity(lower: object, upper: object, contribution_bound: object = 1) -> Fraction:
    """l1 = l2 sensitivity of a sum clipped to [lower, upper], in value units: L max(|lo|, |hi|)."""
    lo, hi = check_bounds(lower, upper)
    return check_contribution_bound(contribution_bound) * max(abs(lo), abs(hi))


def argmax_sensitivity(contribution_bound: object = 1) -> int:
    """Per-count sensitivity for Report Noisy Max over counts: L (counts are monotone)."""
    return check_contribution_bound(contribution_bound)


def check_granularity(granularity: object) -> Fraction:
    """Return gamma as a Fraction; it must be a positive power of two (2**k, k in Z)."""
    g = to_fraction(granularity, "granularity")
    if g <= 0:
        raise PrivacyParameterError(
            gettext_noop("granularity must be > 0, got %(granularity)s"),
            granularity=repr(granularity),
        )
    num, den = g.numerator, g.denominator
    if num & (num - 1) or den & (den - 1) or (num != 1 and den != 1):
        raise PrivacyParameterError(
            gettext_noop("granularity must be a power of two, got %(granularity)s"),
            granularity=repr(granularity),
        )
    return g


def sum_granularity(
    lower: object,
    upper: object,
    *,
    epsilon: object,
    contribution_bound=1,
    rows_bound: int | None = None,
) -> Fraction:
    """The grid granularity gamma for a clipped sum: a power of two set by public parameters.

    Rule: gamma = the largest power of two <= min(M, L M / epsilon) / 2**20, where
    M = max(|lower|, |upper|) and L M / epsilon is the sum's Laplace scale in value
    units; epsilon is the one the sum is noised with (for a mean, its sum share).
    So gamma is at most 2**-20 of the noise scale (rounding moves each value by
    at most gamma/2, far below the noise) and at most 2**-20 of the largest
    magnitude (about six significant digits per value). It depends only on the
    bounds, epsilon and L, never on the data.

    rows_bound (a released SUM): rounding n rows moves the sum by up to
    n r (r = rounding_gap, about gamma/2), which is not small when n is large (2e6
    rows of 12.3 moved a sum by a quarter of its noise scale). The row count is
    private, so the public bound MAX_ROWS stands in for it: gamma is further kept
    <= L M / epsilon / (2**10 rows_bound), making rows_bound * r about 2**-11 of the
    noise scale, and that bound is added to the sum's half-width
    (sum_rounding_bound), so the interval covers the clipped sum itself. gamma
    never goes below M / 2**52 (grid values must stay exact in float64); at very
    large epsilon / L the added bound is then a larger share of a small noise.
    """
    lo, hi = check_bounds(lower, upper)
    eps = check_epsilon(epsilon)
    bound = check_contribution_bound(contribution_bound)
    magnitude = max(abs(lo), abs(hi))
    if magnitude == 0:
        raise PrivacyParameterError(gettext_noop("lower and upper must not both be 0 for a sum"))
    target = min(magnitude, bound * magnitude / eps) / 2**GRID_BITS
    if rows_bound is not None:
        target = min(target, bound * magnitude / eps / (2**GAP_BITS * rows_bound))
        target = max(target, magnitude / 2**_FINEST_BITS)
    exponent = target.numerator.bit_length() - target.denominator.bit_length()
    while Fraction(2) ** exponent > target:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= target:
        exponent += 1
    if rows_bound is not None and magnitude / Fraction(2) ** exponent >= _FLOAT_EXACT // 2:
        exponent += 1
    return Fraction(2) ** exponent


def grid_bounds(lower: object, upper: object, granularity: object) -> tuple[int, int]:
    """(ceil(lower/gamma), floor(upper/gamma)): the grid points inside [lower, upper], in units."""
    lo, hi = check_bounds(lower, upper)
    g = check_granularity(granularity)
    lo_units, hi_units = math.ceil(lo / g), math.floor(hi / g)
    if lo_units > hi_units:
        raise PrivacyParameterError(
            gettext_noop("no grid point lies within [lower, upper]; use a finer granularity")
        )
    if max(abs(lo_units), abs(hi_units)) >= _FLOAT_EXACT:
        raise PrivacyParameterError(
            gettext_noop("granularity too fine for these bounds (grid units >= 2**53)")
        )
    return lo_units, hi_units


def sum_sensitivity_units(
    lower: object, upper: object, granularity: object, contribution_bound: object = 1
) -> int:
    """Sensitivity of the clipped sum in grid units: L max(|ceil(lo/gamma)|, |floor(hi/gamma)|)."""
    lo_units, hi_units = grid_bounds(lower, upper, granularity)
    sens = check_contribution_bound(contribution_bound) * max(abs(lo_units), abs(hi_units))
    if sens == 0:
        raise PrivacyParameterError(
            gettext_noop("the clipped sum is constant 0; nothing to release")
        )
    return sens


def to_grid_units(
    values: np.ndarray, *, lower: object, upper: object, granularity: object
) -> np.ndarray:
    """Clip float values to [lower, upper] and round them to the grid; int64 grid units.

    u = rint(clip(v / gamma, ceil(lo/gamma), floor(hi/gamma))): clipping to the
    grid points inside the bounds, then rounding half to even. v / gamma is exact
    (gamma a power of two), so the result is a deterministic function of the
    data and public parameters, and u * gamma always lies in [lower, upper].
    Callers sum chunks of the result into a Python int (no overflow). NaN is
    refused: drop missing values before summing.
    """
    lo_units, hi_units = grid_bounds(lower, upper, granularity)
    g = check_granularity(granularity)
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any():
        raise ValueError("values contain NaN; drop missing values before summing")
    exponent = g.numerator.bit_length() - g.denominator.bit_length()  # g = 2**exponent
    with np.errstate(over="ignore"):  # a value past float range in units becomes +-inf,
        scaled = np.ldexp(v, -exponent)  # which the clip below takes to a bound, as wanted
    return np.rint(np.clip(scaled, float(lo_units), float(hi_units))).astype(np.int64)


def rounding_gap(lower: object, upper: object, granularity: object) -> Fraction:
    """The most one row's grid value can differ from its clipped value: r = max(gamma/2,
    gamma ceil(lo/gamma) - lo, hi - gamma floor(hi/gamma)).

    A clipped value x in [lo, hi] becomes gamma u with u = rint(clip(x/gamma, lo_u, hi_u))
    (to_grid_units): inside [gamma lo_u, gamma hi_u] rounding moves it by <= gamma/2;
    below gamma lo_u it moves up by <= gamma lo_u - lo, above gamma hi_u down by
    <= hi - gamma hi_u. So a mean of grid values is within r of the clipped mean, and
    a sum of n rows within n r of the clipped sum.
    """
    lo, hi = check_bounds(lower, upper)
    g = check_granularity(granularity)
    lo_units, hi_units = grid_bounds(lo, hi, g)
    return max(g / 2, lo_units * g - lo, hi - hi_units * g)


def sum_rounding_bound(lower: object, upper: object, granularity: object) -> Fraction:
    """MAX_ROWS * rounding_gap: how far the grid sum of any dataset can be from its clipped sum.

    MAX_ROWS = 2**40 is a public bound on the rows of a dataset (ingest refuses
    more than 1 GiB of CSV, at least 2 bytes a row: 2**29 rows; the margin covers
    the distributed path of DESIGN.md section 7). Added to a released sum's
    half-width it makes the interval cover the clipped sum, not only the rounded one.
    """
    return MAX_ROWS * rounding_gap(lower, upper, granularity)


def exact_grid_sum(units: np.ndarray) -> int:
    """The exact sum of int64 grid units (each |u| < 2**53) as a Python int, never overflowing.

    Each u = h 2**26 + l with 0 <= l < 2**26, |h| < 2**27: chunks of 2**30 rows sum
    h and l in int64 without overflow (2**57 at most).
    """
    arr = np.asarray(units, dtype=np.int64).reshape(-1)
    total = 0
    for start in range(0, arr.size, 1 << 30):
        part = arr[start : start + (1 << 30)]
        high = int(np.sum(part >> 26, dtype=np.int64))
        low = int(np.sum(part & ((1 << 26) - 1), dtype=np.int64))
        total += (high << 26) + low
    return total
