"""The public points a private bounds search visits (dpportal.privacy.unbounded_bounds).

From a start point c the owner knows lies inside the range without looking at the data,
the points c +- s (r^i - 1), i = 0..steps: the first step's unit s, the ratio r > 1 (steps
grow geometrically, so any magnitude is reached in O(log) steps), up to a public limit.
One float64 formula, rounded to 12 significant digits, gives the points every engine,
the readers and the mechanism count against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop

__all__ = ["DEFAULT_RATIO", "MAX_STEPS", "SearchGrid"]

#: the most points one search visits (each side): bounds the grid, the compute's cells
#: (2 * MAX_STEPS + 2) and the noise drawn
MAX_STEPS = 4000
#: the defaults a request starts from (bench/discovery.py --sweep shows how they compare)
DEFAULT_RATIO = Fraction(101, 100)


def fraction_of(value: object, name: str) -> Fraction:
    """`value` as an exact Fraction, or a PrivacyParameterError naming `name`."""
    try:
        out = value if isinstance(value, Fraction) else Fraction(Decimal(str(value)))
    except (ArithmeticError, ValueError, TypeError):
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be a number, got %(value)s"), name=name, value=repr(value)
        ) from None
    return out


@dataclass(frozen=True)
class SearchGrid:
    """The public points a search visits: centre +- unit * (ratio**i - 1), i = 0..steps.

    Points are computed in float64 by one formula (`_offsets`), so every engine, the
    readers and the mechanism count against the very same edges.
    """

    centre: Fraction
    unit: Fraction
    ratio: Fraction
    limit: Fraction

    @classmethod
    def of(
        cls,
        *,
        centre: object = 0,
        unit: object = 1,
        ratio: object = DEFAULT_RATIO,
        limit: object = 10**12,
    ) -> SearchGrid:
        c = fraction_of(centre, "centre")
        s, r, lim = (
            fraction_of(unit, "unit"),
            fraction_of(ratio, "ratio"),
            fraction_of(limit, "limit"),
        )
        if s <= 0:
            raise PrivacyParameterError(
                gettext_noop("the search's first step must be > 0, got %(value)s"), value=str(s)
            )
        if not Fraction(1) < r <= 2:
            raise PrivacyParameterError(
                gettext_noop("the search's ratio must be above 1 and at most 2, got %(value)s"),
                value=str(r),
            )
        if lim < s:
            raise PrivacyParameterError(
                gettext_noop(
                    "the search's limit (%(limit)s) must be at least its first step (%(unit)s)"
                ),
                limit=str(lim),
                unit=str(s),
            )
        if abs(c) + lim > Fraction(10) ** 15:
            raise PrivacyParameterError(
                gettext_noop(
                    "the search must stay within 1e15 of zero (start %(centre)s, limit %(limit)s)"
                ),
                centre=str(c),
                limit=str(lim),
            )
        grid = cls(c, s, r, lim)
        if grid.steps() > MAX_STEPS:
            raise PrivacyParameterError(
                gettext_noop(
                    "the search would visit %(steps)s points on each side, more than the limit "
                    "of %(limit)s: use a larger ratio, a larger first step or a smaller limit"
                ),
                steps=str(grid.steps()),
                limit=str(MAX_STEPS),
            )
        return grid

    def steps(self) -> int:
        """The largest i with unit * (ratio**i - 1) <= limit."""
        span = float(self.limit / self.unit)
        i = int(math.log1p(span) / math.log(float(self.ratio)))
        offsets = self._offsets(i + 2)
        while i > 0 and offsets[i] > float(self.limit):
            i -= 1
        while i + 1 < len(offsets) and offsets[i + 1] <= float(self.limit):
            i += 1
        return i

    def _offsets(self, count: int) -> np.ndarray:
        return _offsets(float(self.unit), float(self.ratio), count)

    def upward(self) -> np.ndarray:
        """u_0 = centre, u_1, ..., u_steps (ascending)."""
        return float(self.centre) + self._offsets(self.steps() + 1)

    def downward(self) -> np.ndarray:
        """l_0 = centre, l_1, ..., l_steps (descending)."""
        return float(self.centre) - self._offsets(self.steps() + 1)

    def edges(self) -> list[float]:
        """Every point ascending (2 * steps + 1): the cell edges the compute counts against.

        Cells: (-inf, e_0], (e_0, e_1], ..., (e_last, +inf): len(edges) + 1 counts."""
        return [*self.downward()[:0:-1].tolist(), *self.upward().tolist()]

    def to_dict(self) -> dict[str, str]:
        return {
            "centre": exact_text(self.centre),
            "unit": exact_text(self.unit),
            "ratio": exact_text(self.ratio),
            "limit": exact_text(self.limit),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchGrid:
        return cls.of(
            centre=Fraction(data["centre"]),
            unit=Fraction(data["unit"]),
            ratio=Fraction(data["ratio"]),
            limit=Fraction(data["limit"]),
        )


@lru_cache(maxsize=64)
def _offsets(unit: float, ratio: float, count: int) -> np.ndarray:
    """unit * (ratio**i - 1), i < count, rounded to 12 significant digits: readable points
    (7, not 6.999999999999998), the same on every engine (one float64 formula)."""
    raw = unit * np.expm1(np.arange(count, dtype=np.float64) * math.log(ratio))
    out = np.array([float(f"{x:.12g}") for x in raw.tolist()])
    out.setflags(write=False)
    return out


def exact_text(value: Fraction) -> str:
    """An exact Fraction as text: "3", "1/10"."""
    return str(value.numerator) if value.denominator == 1 else str(value)
