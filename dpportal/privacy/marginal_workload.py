"""A workload of marginal tables over a few categorical attributes, checked once.

A marginal is a sorted tuple of attribute indices: (0, 2) is the table of
attribute 0 by attribute 2, () the total count. A `Workload` holds the attributes'
domain sizes (public: declared categories or bins, never read from the data) and the
marginals to publish. Two derived sets drive everything downstream:

- `closure`: every subset of a published marginal. These are the residuals the
  strategy measures (dpportal.privacy.marginals): marginal S is the sum of the
  residuals of the subsets of S, so a published table needs exactly these.
- `maximal`: the published marginals contained in no other published one. The
  compute path aggregates the data on these only (one GROUPING SETS pass); every
  lower table is an exact sum of a maximal one.

Orders are canonical (by size, then lexicographically) so that a stored
aggregate, a frozen spec and a result list their tables in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_WAY",
    "MAX_SIZE",
    "Marginal",
    "Workload",
    "all_marginals",
    "canonical",
]

Marginal = tuple[int, ...]

#: the most attributes one workload may name
MAX_ATTRIBUTES = 10
#: the most attributes one published marginal may cross
MAX_WAY = 3
#: the largest domain size of one attribute
MAX_SIZE = 1000


def canonical(marginals: Iterable[Marginal]) -> tuple[Marginal, ...]:
    """Marginals sorted by size, then lexicographically, without repeats."""
    return tuple(sorted({tuple(sorted(m)) for m in marginals}, key=lambda m: (len(m), m)))


def all_marginals(attributes: int, way: int, *, total: bool = False) -> tuple[Marginal, ...]:
    """Every marginal of 1 to `way` attributes out of `attributes` (and the total if asked)."""
    out = [m for k in range(1, way + 1) for m in combinations(range(attributes), k)]
    return canonical(([()] if total else []) + out)


@dataclass(frozen=True)
class Workload:
    """Domain sizes and the marginals to publish; build with `Workload.of` (validates)."""

    sizes: tuple[int, ...]
    marginals: tuple[Marginal, ...]

    @classmethod
    def of(cls, sizes: Iterable[int], marginals: Iterable[Iterable[int]]) -> Workload:
        """Check sizes and marginals once; refuse what the math cannot take."""
        sizes = tuple(int(n) for n in sizes)
        if not 1 <= len(sizes) <= MAX_ATTRIBUTES:
            raise PrivacyParameterError(
                gettext_noop("a cross-tabulation has 1 to %(limit)s columns, got %(value)s"),
                limit=MAX_ATTRIBUTES,
                value=len(sizes),
            )
        for n in sizes:
            if not 2 <= n <= MAX_SIZE:
                raise PrivacyParameterError(
                    gettext_noop(
                        "each column of a cross-tabulation has 2 to %(limit)s categories, "
                        "got %(value)s"
                    ),
                    limit=MAX_SIZE,
                    value=n,
                )
        listed = [tuple(int(i) for i in m) for m in marginals]
        for m in listed:
            if len(set(m)) != len(m) or any(not 0 <= i < len(sizes) for i in m):
                raise PrivacyParameterError(
                    gettext_noop("a marginal names each of the columns at most once")
                )
            if len(m) > MAX_WAY:
                raise PrivacyParameterError(
                    gettext_noop("a marginal crosses at most %(limit)s columns, got %(value)s"),
                    limit=MAX_WAY,
                    value=len(m),
                )
        out = canonical(listed)
        if not out:
            raise PrivacyParameterError(gettext_noop("a cross-tabulation publishes a table"))
        return cls(sizes, out)

    @cached_property
    def closure(self) -> tuple[Marginal, ...]:
        """Every subset of a published marginal (the empty one included): the residuals."""
        return canonical(
            sub for m in self.marginals for k in range(len(m) + 1) for sub in combinations(m, k)
        )

    @cached_property
    def maximal(self) -> tuple[Marginal, ...]:
        """The published marginals contained in no other published one."""
        return tuple(
            m
            for m in self.marginals
            if not any(m != other and set(m) <= set(other) for other in self.marginals)
        )

    def shape(self, marginal: Marginal) -> tuple[int, ...]:
        """The table's shape: the domain size of each of its attributes, in order."""
        return tuple(self.sizes[i] for i in marginal)

    def cells(self, marginal: Marginal) -> int:
        return math.prod(self.shape(marginal))

    @cached_property
    def published_cells(self) -> int:
        """Cells of every published table together."""
        return sum(self.cells(m) for m in self.marginals)

    @cached_property
    def measured_values(self) -> int:
        """Noisy values the strategy draws: one per residual coordinate."""
        return sum(math.prod(self.sizes[i] - 1 for i in a) for a in self.closure)

    def container(self, marginal: Marginal) -> Marginal:
        """The first maximal marginal containing `marginal` (its table is a sum of that one)."""
        for m in self.maximal:
            if set(marginal) <= set(m):
                return m
        raise KeyError(marginal)
