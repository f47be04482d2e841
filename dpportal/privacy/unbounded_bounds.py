"""Private bounds of a numeric column by AboveThreshold on a public geometric grid.

A local stand-in with the API of the privacy core's module (Durfee 2023: unbounded
quantile estimation): each end is searched outward from the public centre over the
points centre +- unit * (ratio**i - 1); the first point beyond which at most `outside`
values lie (by a noisy comparison) is the bound. Each end spends epsilon / ends_count,
half on the noisy threshold, half on the queries (Dwork & Roth 2014, Thm 3.23).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import exact_str
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.samplers import discrete_laplace

MAX_STEPS = 2000
ENDS = ("both", "upper", "lower")


def _fraction(value: object, name: str) -> Fraction:
    try:
        return value if isinstance(value, Fraction) else Fraction(str(value))
    except (TypeError, ValueError, ZeroDivisionError):
        raise PrivacyParameterError("%(name)s must be a number", name=name) from None


@dataclass(frozen=True)
class SearchGrid:
    """Public points an unbounded search visits: centre +- unit * (ratio**i - 1), i = 0..steps."""

    centre: Fraction
    unit: Fraction
    ratio: Fraction
    limit: Fraction

    @classmethod
    def of(cls, *, centre=0, unit=1, ratio=Fraction(105, 100), limit=10**12) -> SearchGrid:
        grid = cls(
            _fraction(centre, "centre"),
            _fraction(unit, "unit"),
            _fraction(ratio, "ratio"),
            _fraction(limit, "limit"),
        )
        if grid.unit <= 0:
            raise PrivacyParameterError("the unit must be greater than 0")
        if grid.ratio <= 1:
            raise PrivacyParameterError("the ratio must be greater than 1")
        if grid.limit < grid.unit:
            raise PrivacyParameterError("the limit must be at least the unit")
        if grid.steps() > MAX_STEPS:
            raise PrivacyParameterError(
                "the search needs %(steps)s steps, more than %(limit)s", steps=grid.steps(),
                limit=MAX_STEPS,
            )  # fmt: skip
        return grid

    def steps(self) -> int:
        return math.ceil(math.log(1 + float(self.limit / self.unit)) / math.log(float(self.ratio)))

    def offsets(self) -> list[Fraction]:
        out, power = [], Fraction(1)
        for _ in range(self.steps() + 1):
            out.append(min(self.unit * (power - 1), self.limit))
            power *= self.ratio
        return out

    def points(self) -> list[Fraction]:
        offsets = self.offsets()
        below = [self.centre - d for d in reversed(offsets[1:])]
        return [*below, *(self.centre + d for d in offsets)]

    def edges(self) -> list[float]:
        return sorted({float(p) for p in self.points()})

    def to_dict(self) -> dict[str, Any]:
        return {k: exact_str(getattr(self, k)) for k in ("centre", "unit", "ratio", "limit")}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SearchGrid:
        return cls.of(**{k: Fraction(str(d[k])) for k in ("centre", "unit", "ratio", "limit")})


@dataclass(frozen=True)
class BoundsEstimate:
    lower: Fraction | None
    upper: Fraction | None
    epsilon_per_end: Fraction
    contribution_bound: int
    grid: SearchGrid
    outside: int
    ends: str

    def explanation(self) -> dict[str, Any]:
        return {
            "mechanism": "above_threshold",
            "epsilon_per_end": exact_str(self.epsilon_per_end),
            "threshold_scale": exact_str(2 * self.contribution_bound / self.epsilon_per_end),
            "query_scale": exact_str(4 * self.contribution_bound / self.epsilon_per_end),
            "grid": self.grid.to_dict(),
            "outside": self.outside,
            "ends": self.ends,
            "steps": self.grid.steps(),
        }


def _ends_count(ends: str) -> int:
    if ends not in ENDS:
        raise PrivacyParameterError("ends must be both, upper or lower")
    return 2 if ends == "both" else 1


def bounds_records(*, epsilon: Fraction, ends: str) -> list[MechanismRecord]:
    n = _ends_count(ends)
    return [MechanismRecord.generic(epsilon=Fraction(epsilon) / n) for _ in range(n)]


def estimate_bounds(
    cell_counts: Sequence[int], *, grid: SearchGrid, ends: str, outside: int,
    epsilon: Fraction, contribution_bound: int, rng: RandomSource | None = None,
) -> BoundsEstimate:  # fmt: skip
    n = _ends_count(ends)
    per_end = Fraction(epsilon) / n
    edges = grid.edges()
    counts = [int(c) for c in cell_counts]
    if len(counts) != len(edges) + 1:
        raise PrivacyParameterError("one count per cell of the grid")
    total = sum(counts)
    threshold_scale = 2 * contribution_bound / per_end
    query_scale = 4 * contribution_bound / per_end
    exact_points = sorted(set(grid.points()))

    def search(order: list[int], beyond) -> Fraction | None:
        t = int(discrete_laplace(threshold_scale, 1, rng)[0])
        for i in order:
            # the values beyond edge i at most `outside`: -(beyond) >= -outside
            noisy = -beyond(i) + int(discrete_laplace(query_scale, 1, rng)[0])
            if noisy >= -outside + t:
                return exact_points[i]
        return None

    prefix = [0]
    for c in counts:
        prefix.append(prefix[-1] + c)
    centre_index = exact_points.index(grid.centre)
    upper = lower = None
    if ends in ("both", "upper"):
        upper = search(list(range(centre_index, len(edges))), lambda i: total - prefix[i + 1])
    if ends in ("both", "lower"):
        lower = search(list(range(centre_index, -1, -1)), lambda i: prefix[i])
    return BoundsEstimate(lower, upper, per_end, contribution_bound, grid, outside, ends)


def outside_at_most(*, epsilon, ends, outside, steps, contribution_bound, confidence) -> int:
    """With probability >= confidence at most this many values lie beyond each bound."""
    per_end = Fraction(epsilon) / _ends_count(ends)
    beta = 1 - float(Fraction(str(confidence)))
    b = 4 * contribution_bound / float(per_end)
    return int(outside + math.ceil(2 * b * math.log((steps + 2) / beta)))
