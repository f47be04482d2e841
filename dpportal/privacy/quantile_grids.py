"""Public candidate grids for quantiles: declared, never read from the data.

A grid is a strictly increasing tuple of exact Fractions: a step within declared
bounds (`candidate_grid`), the owner's bin edges (`check_grid`), or, for a column with
no declared upper bound, an open grid of three-significant-digit offsets from the
lower bound (`open_grid`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import to_fraction
from dpportal.privacy.permute_flip import MAX_CANDIDATES

__all__ = ["Grid", "candidate_grid", "open_grid", "check_grid", "OPEN_GRID_DECADES"]


class Grid(tuple):
    """A grid that passed `check_grid`: strictly increasing exact Fractions, at most
    MAX_CANDIDATES. Checking again returns it as it is, so a grid of tens of thousands
    of candidates is compared once, not at every selection that reads it."""

    @functools.cached_property
    def largest_step(self) -> Fraction:
        """The largest gap between adjacent candidates (0 for one candidate)."""
        return max((b - a for a, b in zip(self, self[1:], strict=False)), default=Fraction(0))


def candidate_grid(lower: object, upper: object, step: object) -> Grid:
    """The public grid lower, lower + step, ..., up to upper (inclusive), as exact Fractions."""
    lo, hi, st = to_fraction(lower, "lower"), to_fraction(upper, "upper"), to_fraction(step, "step")
    if st <= 0:
        raise PrivacyParameterError(gettext_noop("step must be > 0, got %(step)s"), step=repr(step))
    if lo > hi:
        msgid = gettext_noop("lower must be <= upper, got %(lower)s and %(upper)s")
        raise PrivacyParameterError(msgid, lower=repr(lower), upper=repr(upper))
    m = math.floor((hi - lo) / st) + 1
    if m > MAX_CANDIDATES:
        msgid = gettext_noop("the grid has %(n)s candidates, at most %(most)s: use a larger step")
        raise PrivacyParameterError(msgid, n=str(m), most=str(MAX_CANDIDATES))
    return check_grid([lo + j * st for j in range(m)])


#: How many decades an open grid reaches past its step: values up to 10**12 steps away.
OPEN_GRID_DECADES = 12


@functools.lru_cache(maxsize=16)
def open_grid(lower: object | None, step: object) -> Grid:
    """A public grid for a column with no declared upper bound (and maybe no lower one).

    With a lower bound l: l, then l + d for every d in step x {1.00, 1.01, ..., 9.99,
    10.0, 10.1, ..., 99.9, 100, 101, ...} up to step x 10**12: three significant digits,
    so neighbours are at most 1 % apart, and 900 candidates per decade (10,802 in
    all). Without one the grid is mirrored around 0 (21,603 candidates). Every
    candidate is an exact decimal fixed by (lower, step) alone, never by the data;
    values past the last candidate count as above it (their rank is still right).
    Cached: the grid is a pure function of (lower, step), asked for on every read.
    """
    st = to_fraction(step, "step")
    if st <= 0:
        raise PrivacyParameterError(gettext_noop("step must be > 0, got %(step)s"), step=repr(step))
    offsets = [
        st * Fraction(m, 100) * 10**e for e in range(OPEN_GRID_DECADES) for m in range(100, 1000)
    ]
    offsets.append(st * 10**OPEN_GRID_DECADES)
    if lower is None:
        return check_grid([-d for d in reversed(offsets)] + [Fraction(0)] + offsets)
    lo = to_fraction(lower, "lower")
    return check_grid([lo] + [lo + d for d in offsets])


def check_grid(candidates: Sequence[object]) -> Grid:
    """A public grid as exact fractions: non-empty, bounded, strictly increasing."""
    if isinstance(candidates, Grid):
        return candidates
    grid = tuple(to_fraction(c, "candidate") for c in candidates)
    if not grid:
        raise PrivacyParameterError(gettext_noop("the candidate grid must not be empty"))
    if len(grid) > MAX_CANDIDATES:
        msgid = gettext_noop("at most %(most)s candidates, got %(count)s")
        raise PrivacyParameterError(msgid, most=str(MAX_CANDIDATES), count=str(len(grid)))
    if any(a >= b for a, b in zip(grid, grid[1:], strict=False)):
        raise PrivacyParameterError(gettext_noop("candidates must be strictly increasing"))
    return Grid(grid)
