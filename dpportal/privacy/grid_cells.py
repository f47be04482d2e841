"""Counts per cell of a public grid at memory speed, exactly as numpy.searchsorted makes them.

A quantile release counts its values per cell (-inf, c_1), [c_1, c_2), ..., [c_m, inf) of
the public candidate grid c_1 < ... < c_m (float64 edges, `float(c_j)`): the cell of x is

    g(x) = #{j : c_j <= x} = searchsorted(edges, x, side="right"),

so that x < c_j is decided in float64 against float(c_j), a deterministic function of the
row and the public grid (dpportal.privacy.quantiles.RankCounter: all the sensitivity
argument needs). A binary search costs about log2 m unpredictable branches per value. On
an evenly spaced grid `GridCells` instead ESTIMATES the cell arithmetically and corrects
it with one comparison, and the result is the same integer, value for value.

The estimate. f(x) = min(max(floor(x a + b), 0), m) with a = (m - 1) / (c_m - c_1) and
b = 3/2 - c_1 a, each step a correctly rounded float64 operation (IEEE 754 multiply and
add; fmax, fmin; conversion of a non-negative float to an integer), each monotone
non-decreasing in its argument (a > 0), so f is monotone. Ideally x a + b lies half a cell
above g(x), so its floor is g(x) or g(x) + 1.

Why the result is exact (checked, not assumed). g is constant on each cell and f is
monotone, so on a cell f lies between its values at the cell's two ends: c_j and the
largest float below c_{j+1} (for the outer cells, -inf and the float below c_1; c_m and
+inf). At construction f(x) - g(x) is evaluated at all 2m + 2 ends with the very code
the counting runs; only if it is 0 or 1 at every one is the estimate used, and then
f(x) - g(x) is 0 or 1 for EVERY float x. When it is 1, exactly f(x) - 1 edges are <= x,
so x < c_{f(x)}; when it is 0, c_{f(x)} <= x (or f(x) = 0). Hence, with c_0 := -inf,

    g(x) = f(x) - 1 + [x >= c_{f(x)}]:      one gather, one comparison.

NaN has no cell: fmax sends it to f = 0 and the comparison is false, so it lands at -1,
an extra bin that is dropped (callers drop or refuse missing values first). A grid that
fails the check (unevenly spaced, such as an owner's edges or an open grid, or too fine
for float64 at its offset) is counted by searchsorted. Memory: three buffers of `block`
values, whatever the input size.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GridCells"]

#: Values per block: a block's buffers (float64, intp, bool) stay in the core's cache.
BLOCK = 32_768


class GridCells:
    """Counts of float64 values per cell of strictly increasing float64 edges (see the module).

    `counts(values)` is exactly np.bincount(np.searchsorted(edges, v, side="right"),
    minlength=m + 1) for the non-NaN values v; `fast` says whether the arithmetic
    estimate passed its check (else searchsorted is used).
    """

    def __init__(self, edges: np.ndarray, *, block: int = BLOCK) -> None:
        self.edges = np.ascontiguousarray(edges, dtype=np.float64).reshape(-1)
        if self.edges.size == 0 or not np.all(np.isfinite(self.edges)):
            raise ValueError("edges must be finite and non-empty")
        if np.any(np.diff(self.edges) <= 0):
            raise ValueError("edges must be strictly increasing")
        self.m = int(self.edges.size)
        self.block = int(block)
        self._below = np.concatenate([[-np.inf], self.edges])  # _below[k] = c_k, c_0 = -inf
        self.fast = False
        if self.m >= 2:
            span = float(self.edges[-1] - self.edges[0])
            self._a = (self.m - 1) / span
            self._b = 1.5 - float(self.edges[0]) * self._a
            self.fast = bool(np.isfinite(self._a) and np.isfinite(self._b) and self._a > 0)
            self.fast = self.fast and self._estimate_is_close()

    def estimate_coefficients(self) -> tuple[float, float] | None:
        """(a, b) of the checked estimate f(x) = min(max(floor(x a + b), 0), m), for an
        engine that counts the same cells in SQL with the same float64 operations (a
        multiply, then an add: never fused); None when the grid is counted by searchsorted."""
        return (self._a, self._b) if self.fast else None

    def _estimate(self, values: np.ndarray, out: np.ndarray, cells: np.ndarray) -> None:
        """cells = f(values) (module docstring), NaN to 0; `out`: float64 scratch, same size."""
        with np.errstate(over="ignore"):  # a huge value overflows to inf: cell m, as it should
            np.multiply(values, self._a, out=out)
            out += self._b
        np.fmax(out, 0.0, out=out)  # fmax, fmin: NaN gives the bound, never an undefined cast
        np.fmin(out, float(self.m), out=out)
        cells[...] = out  # non-negative: truncation is floor

    def _estimate_is_close(self) -> bool:
        """f - g in {0, 1} at both ends of every cell: then at every float (module docstring)."""
        inf = np.array([np.inf])
        ends = np.concatenate([-inf, np.nextafter(self.edges, -np.inf), self.edges, inf])
        f = np.empty(ends.size, dtype=np.intp)
        self._estimate(ends, np.empty(ends.size), f)
        g = np.searchsorted(self.edges, ends, side="right")
        d = f - g
        return bool(np.all((d == 0) | (d == 1)))

    def cells(self, values: np.ndarray) -> np.ndarray:
        """g(x) of every value (intp; -1 for NaN, which has no cell), by the same route as
        `counts` (for tests and callers that need the index itself)."""
        v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        if not self.fast:
            out = np.searchsorted(self.edges, v, side="right")
            out[np.isnan(v)] = -1
            return out
        out = np.empty(v.size, dtype=np.intp)
        scratch = np.empty(v.size)
        self._estimate(v, scratch, out)
        out += v >= np.take(self._below, out, out=scratch, mode="clip")
        return out - 1

    def counts(self, values: np.ndarray) -> np.ndarray:
        """int64 counts per cell (m + 1 of them) of the non-NaN values (1-D float64)."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if not self.fast:
            v = v[~np.isnan(v)] if np.isnan(v).any() else v
            cells = np.searchsorted(self.edges, v, side="right")
            return np.bincount(cells, minlength=self.m + 1).astype(np.int64)
        total = np.zeros(self.m + 2, dtype=np.int64)  # bin 0: NaN; bin k + 1: cell k
        size = min(self.block, v.size)
        scratch = np.empty(size)
        cells = np.empty(size, dtype=np.intp)
        right = np.empty(size, dtype=bool)
        for start in range(0, v.size, self.block):
            chunk = v[start : start + self.block]
            n = chunk.size
            f, ok = cells[:n], right[:n]
            self._estimate(chunk, scratch[:n], f)
            # f is in [0, m] by construction: "clip" never clips, and skips take's buffering
            below = np.take(self._below, f, out=scratch[:n], mode="clip")
            np.greater_equal(chunk, below, out=ok)
            f += ok
            total += np.bincount(f, minlength=self.m + 2)
        return total[1:]
