"""The parts of a spread: centred grid, streaming aggregates, the estimate's record, roots.

Grid and aggregates: see dpportal.privacy.spread (spread_granularity,
centred_units, SpreadAggregator live here so that module stays small).

The interval itself is in dpportal.privacy.spread_interval; VarianceEstimate
(what it returns) and the outward-rounded square roots live here.

Standard deviation: sqrt is increasing, so [sqrt(low), sqrt(high)] covers the
standard deviation exactly when [low, high] covers v; its ends are rounded
outward (`sqrt_floor`, `sqrt_ceil`) at about 12 significant digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import (
    check_bounds,
    check_cells,
    check_contribution_bound,
    check_epsilon,
)
from dpportal.privacy.sensitivity import grid_bounds, to_grid_units

__all__ = [
    "SPREAD_BITS",
    "spread_granularity",
    "centred_units",
    "SpreadAggregator",
    "VarianceEstimate",
    "sqrt_floor",
    "sqrt_ceil",
]

SQRT_DIGITS = 12
SPREAD_BITS = 16
_SCALE_LIMIT = 1 << 52
_FLOAT_EXACT = 1 << 53


def spread_granularity(
    lower: object, upper: object, *, epsilon: object, contribution_bound: object = 1
) -> Fraction:
    """The public grid gamma for a spread (module docstring), a power of two."""
    lo, hi = check_bounds(lower, upper)
    eps = check_epsilon(epsilon)
    bound = check_contribution_bound(contribution_bound)
    h = (hi - lo) / 2
    if h == 0:
        raise PrivacyParameterError(gettext_noop("lower and upper must differ for a variance"))
    target = h / 2**SPREAD_BITS
    gamma = Fraction(2) ** (target.numerator.bit_length() - target.denominator.bit_length() + 1)
    while gamma > target:
        gamma /= 2
    while True:
        lo_u, hi_u = grid_bounds(lo, hi, gamma)
        if bound * (hi_u - lo_u) ** 2 / eps <= _SCALE_LIMIT and hi_u > lo_u:
            return gamma
        gamma *= 2


def centred_units(
    values: np.ndarray, *, lower: object, upper: object, granularity: object
) -> np.ndarray:
    """w = 2 u - (u_lo + u_hi) for u = to_grid_units(values): int64 in [-W, W]."""
    lo_u, hi_u = grid_bounds(lower, upper, granularity)
    u = to_grid_units(values, lower=lower, upper=upper, granularity=granularity)
    return 2 * u - (lo_u + hi_u)


class SpreadAggregator:
    """Streaming per-cell N, S = sum w and Q = sum w**2 (exact Python ints), O(G) memory.

    add(values, group_index=None): values are floats without NaN (drop missing
    first); group_index in [0, G) or None for one cell. Per block of rows the
    sums use np.bincount on float64 weights, exact because a block's |sum| stays
    below 2**53 (blocks hold at most 2**53 / W**2 rows), then add as Python ints.
    """

    def __init__(
        self, *, lower: object, upper: object, granularity: object, groups: int = 1
    ) -> None:
        self.groups = check_cells(groups, "groups")
        self._grid = dict(lower=lower, upper=upper, granularity=granularity)
        lo_u, hi_u = grid_bounds(lower, upper, granularity)
        self._block = int(max(1, min(1 << 20, _FLOAT_EXACT // max((hi_u - lo_u) ** 2, 1))))
        self.counts = [0] * self.groups
        self.sums = [0] * self.groups
        self.squares = [0] * self.groups

    def add(self, values: np.ndarray, group_index: np.ndarray | None = None) -> None:
        """Accumulate one chunk."""
        w = centred_units(np.asarray(values).reshape(-1), **self._grid)
        if group_index is None:
            idx = np.zeros(w.size, dtype=np.int64)
        else:
            idx = np.asarray(group_index, dtype=np.int64).reshape(-1)
        if idx.size != w.size:
            raise ValueError("one group index per value is needed")
        if idx.size and (idx.min() < 0 or idx.max() >= self.groups):
            raise ValueError("group index outside [0, groups)")
        for start in range(0, w.size, self._block):
            part = w[start : start + self._block].astype(np.float64)
            cell = idx[start : start + self._block]
            for name, weights in (("counts", None), ("sums", part), ("squares", part * part)):
                totals = np.bincount(cell, weights=weights, minlength=self.groups)
                old = getattr(self, name)
                setattr(self, name, [a + int(b) for a, b in zip(old, totals, strict=True)])


@dataclass(frozen=True)
class VarianceEstimate:
    """Variance in w**2 units: estimate, interval, and the flags to tell the reader."""

    estimate: Fraction
    low: Fraction
    high: Fraction
    clamped: str | None  # None, "low" (negative estimate set to 0) or "high"
    count_nonpositive: bool


def _scale(x: Fraction) -> int:
    """Decimal places giving SQRT_DIGITS significant digits to sqrt(x) (x > 0)."""
    magnitude = (x.numerator.bit_length() - x.denominator.bit_length()) * 0.30103 / 2
    return max(0, SQRT_DIGITS - math.floor(magnitude) - 1)


def sqrt_floor(x: Fraction) -> Fraction:
    """The largest multiple of 10**-k that is <= sqrt(x) (k for ~12 significant digits)."""
    if x <= 0:
        return Fraction(0)
    k = _scale(x)
    scaled = x * 10 ** (2 * k)
    return Fraction(math.isqrt(scaled.numerator // scaled.denominator), 10**k)


def sqrt_ceil(x: Fraction) -> Fraction:
    """The smallest multiple of 10**-k that is >= sqrt(x) (k for ~12 significant digits)."""
    if x <= 0:
        return Fraction(0)
    k = _scale(x)
    scaled = x * 10 ** (2 * k)
    top = -(-scaled.numerator // scaled.denominator)  # ceil
    root = math.isqrt(top)
    if root * root < top:
        root += 1
    return Fraction(root, 10**k)
