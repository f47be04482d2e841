"""Measuring a workload's residuals once and reconstructing every published table.

The strategy, its privacy and its variances are in dpportal.privacy.marginals. Here:

- `helmert(n)`: the integer contrasts H (rows h_j = (1, ..., 1, -j, 0, ...)),
  orthogonal, each orthogonal to the all-ones vector, ||h_j||**2 = j (j + 1).
- `release_marginals`: from the true counts of the maximal marginals (memory only),
  every residual's integer query (kron H_i) x_A plus exact discrete Gaussian noise of
  variance s_A prod j_i (j_i + 1). Only these noisy integers leave the function
  (`MarginalRelease.measurements`), with the tables reconstructed from them.
- Reconstruction (equation (1) of dpportal.privacy.marginals, in Helmert units):
  x_S = sum_{A subset of S} (kron_{i in A} H_i^T diag(1/||h_j||**2)
  kron_{i in S minus A} 1/n_i) y_A. `values` computes it in float64 for display;
  `exact` in integers over the common denominator prod_{i in S} lcm(1..n_i) (every
  j (j + 1) with j < n and n itself divide lcm(1..n)), so that consistency
  (each lower table the exact sum of each higher one) can be checked to the last
  digit and anyone holding the measurements can recompute every table.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from dpportal.privacy.marginal_workload import Marginal
from dpportal.privacy.marginals import MarginalPlan
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.samplers import discrete_gaussian_variance

__all__ = ["MarginalRelease", "MarginalTable", "helmert", "release_marginals"]


@cache
def helmert(n: int) -> np.ndarray:
    """The (n - 1) x n integer Helmert contrasts (int64, read-only)."""
    h = np.zeros((n - 1, n), dtype=np.int64)
    for j in range(1, n):
        h[j - 1, :j] = 1
        h[j - 1, j] = -j
    h.setflags(write=False)
    return h


@cache
def _norms(n: int) -> np.ndarray:
    j = np.arange(1, n, dtype=np.int64)
    return j * (j + 1)


@cache
def _lcm_upto(n: int) -> int:
    return math.lcm(*range(1, n + 1))


def _along(array: np.ndarray, axis: int, matrix: np.ndarray) -> np.ndarray:
    """Apply `matrix` (rows x len) along `axis` of `array`."""
    moved = np.moveaxis(array, axis, -1)
    return np.moveaxis(moved @ matrix.T, -1, axis)


def _sum_to(counts: np.ndarray, have: Marginal, want: Marginal) -> np.ndarray:
    """The table of `want` (a subset of `have`) summed from `have`'s table."""
    drop = tuple(k for k, i in enumerate(have) if i not in want)
    return counts.sum(axis=drop) if drop else counts


def _residual_query(table: np.ndarray, a: Marginal, sizes: tuple[int, ...]) -> np.ndarray:
    """(kron_{i in A} H_i) x_A, exact: int64 while the bound allows, Python ints beyond."""
    total = int(np.abs(table).sum()) if table.size else 0
    reach = total * math.prod((sizes[i] - 1 for i in a), start=1)
    out = table.astype(np.int64) if reach < 1 << 62 else table.astype(object)
    for axis, i in enumerate(a):
        out = _along(out, axis, helmert(sizes[i]).astype(out.dtype))
    return out


def _coordinate_weights(a: Marginal, sizes: tuple[int, ...]) -> np.ndarray:
    """prod_i j_i (j_i + 1) for every coordinate of residual A (Python ints, exact)."""
    out = np.ones((), dtype=object)
    for i in a:
        out = np.multiply.outer(out, _norms(sizes[i]).astype(object))
    return out


def _noise(plan: MarginalPlan, rng: RandomSource | None) -> dict[Marginal, np.ndarray]:
    """Independent discrete Gaussian noise for every residual coordinate, drawn once,
    grouped by equal variance (one sampler call per distinct variance)."""
    sizes = plan.workload.sizes
    where: dict[Fraction, list[tuple[Marginal, int]]] = defaultdict(list)
    shapes = {}
    for a, s in plan.variances.items():
        weights = _coordinate_weights(a, sizes)
        shapes[a] = weights.shape
        for k, w in enumerate(weights.ravel().tolist()):
            where[s * w].append((a, k))
    flat = {a: np.zeros(math.prod(shape), dtype=np.int64) for a, shape in shapes.items()}
    for variance in sorted(where):
        places = where[variance]
        draws = discrete_gaussian_variance(variance, len(places), rng)
        for (a, k), y in zip(places, draws.tolist(), strict=True):
            flat[a][k] = y
    return {a: flat[a].reshape(shapes[a]) for a in shapes}


@dataclass
class MarginalTable:
    """One published table: float values for display; the exact rational form on demand."""

    release: MarginalRelease
    marginal: Marginal
    stored: np.ndarray | None = None

    def values(self) -> np.ndarray:
        if self.stored is None:
            self.stored = self.release.reconstruct(self.marginal)
        return self.stored

    @property
    def denominator(self) -> int:
        return self.release.exact(self.marginal)[0]

    @property
    def numerators(self) -> np.ndarray:
        return self.release.exact(self.marginal)[1]


@dataclass
class MarginalRelease:
    """The noisy measurements of one workload (public) and the tables they determine."""

    plan: MarginalPlan
    measurements: dict[Marginal, np.ndarray]
    tables: dict[Marginal, MarginalTable] = field(default_factory=dict)
    _exact: dict[Marginal, tuple[int, np.ndarray]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for m in self.plan.workload.marginals:
            self.tables.setdefault(m, MarginalTable(self, m))

    def reconstruct(self, marginal: Marginal) -> np.ndarray:
        """The unbiased table of `marginal` in float64 (equation (1), Helmert units)."""
        sizes = self.plan.workload.sizes
        out = np.zeros(tuple(sizes[i] for i in marginal), dtype=np.float64)
        for a, y in self.measurements.items():
            if not set(a) <= set(marginal):
                continue
            term = y.astype(np.float64)
            for axis, i in enumerate(a):
                back = helmert(sizes[i]).T / _norms(sizes[i])
                term = _along(term, axis, back.astype(np.float64))
            out += _expand(term, a, marginal, sizes, lambda n: 1.0 / n)
        return out

    def exact(self, marginal: Marginal) -> tuple[int, np.ndarray]:
        """The same table exactly: (denominator D, integer numerators), in lowest terms."""
        if marginal in self._exact:
            return self._exact[marginal]
        sizes = self.plan.workload.sizes
        scale = {i: _lcm_upto(sizes[i]) for i in marginal}
        out = np.zeros(tuple(sizes[i] for i in marginal), dtype=object)
        for a, y in self.measurements.items():
            if not set(a) <= set(marginal):
                continue
            term = y.astype(object)
            for axis, i in enumerate(a):
                back = (
                    helmert(sizes[i]).T.astype(object) * scale[i] // _norms(sizes[i]).astype(object)
                )
                term = _along(term, axis, back)
            out = out + _expand(term, a, marginal, sizes, lambda n: _lcm_upto(n) // n)
        denominator = math.prod((scale[i] for i in marginal), start=1)
        out = np.asarray(out, dtype=object).reshape(tuple(sizes[i] for i in marginal))
        common = math.gcd(denominator, *out.ravel().tolist())
        result = (denominator // common, np.asarray(out // common, dtype=object).reshape(out.shape))
        self._exact[marginal] = result
        return result

    def to_dict(self) -> dict[str, Any]:
        workload = self.plan.workload
        return {
            "plan": self.plan.to_dict(),
            "measurements": [
                {"marginal": list(a), "values": [int(v) for v in y.ravel().tolist()]}
                for a, y in self.measurements.items()
            ],
            "tables": [
                {
                    "marginal": list(m),
                    "shape": list(workload.shape(m)),
                    "values": [float(v) for v in self.tables[m].values().ravel().tolist()],
                }
                for m in workload.marginals
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MarginalRelease:
        plan = MarginalPlan.from_dict(data["plan"])
        sizes = plan.workload.sizes
        measurements = {
            tuple(r["marginal"]): np.asarray(r["values"], dtype=np.int64).reshape(
                tuple(sizes[i] - 1 for i in r["marginal"])
            )
            for r in data["measurements"]
        }
        out = cls(plan, measurements)
        for t in data.get("tables", []):
            m = tuple(t["marginal"])
            out.tables[m].stored = np.asarray(t["values"], dtype=np.float64).reshape(
                plan.workload.shape(m)
            )
        return out


def _expand(
    term: np.ndarray, a: Marginal, marginal: Marginal, sizes, factor: Callable[[int], Any]
) -> np.ndarray:
    """Spread a term on A's axes over `marginal`'s: each attribute of `marginal` not in A
    gets an axis of n_i equal entries factor(n_i) (1/n_i in float; lcm(1..n_i)/n_i exact)."""
    out = np.asarray(term)
    for i in marginal:
        if i not in a:
            out = np.multiply.outer(out, np.full(sizes[i], factor(sizes[i]), dtype=out.dtype))
    # the axes are A's (in A's order), then the others (in marginal's order): reorder
    order = list(a) + [i for i in marginal if i not in a]
    return np.transpose(out, [order.index(i) for i in marginal]) if order else out


def release_marginals(
    plan: MarginalPlan, counts: Sequence[np.ndarray], rng: RandomSource | None = None
) -> MarginalRelease:
    """Measure every residual of the plan's workload once from the true counts of its
    maximal marginals (in `Workload.maximal` order); return only noisy values."""
    workload = plan.workload
    if len(counts) != len(workload.maximal):
        raise ValueError("one count table per maximal marginal is expected")
    tables = {}
    for m, table in zip(workload.maximal, counts, strict=True):
        array = np.asarray(table)
        if array.shape != workload.shape(m) or (array.size and int(array.min()) < 0):
            raise ValueError("a count table has the wrong shape or a negative count")
        tables[m] = array
    noise = _noise(plan, rng)
    measurements = {}
    for a in workload.closure:
        have = workload.container(a)
        query = _residual_query(_sum_to(tables[have], have, a), a, workload.sizes)
        measurements[a] = np.asarray(query + noise[a])
    return MarginalRelease(plan, measurements)
