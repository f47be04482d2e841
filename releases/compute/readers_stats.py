"""Grouped, quantile and spread readers: row groups to true per-cell aggregates (in memory).

- grouped sum / mean: per group, the clipped sum on the public grid (grid units)
  and the number of rows summed (dpportal.privacy.grouped.GroupedAggregator);
- spread (stddev, variance): per group N, S = sum w, Q = sum w**2 in centred
  half-grid units (dpportal.privacy.spread_parts.SpreadAggregator);
- quantiles: the count of values in each cell of the public candidate grid
  (-inf, c_1), [c_1, c_2), ..., [c_m, inf), the comparison made exactly as
  dpportal.privacy.quantiles.RankCounter makes it (dpportal.privacy.grid_cells:
  searchsorted's cells, arithmetically on an evenly spaced grid, read straight
  from the column's buffers when nothing is dropped); rank counts are their
  cumulative sums (`quantile_aggregate`).

Groups are cells as a histogram's (releases.compute.readers.Axis: declared
categories, "Other", "Missing" when the policy says so; bins); rows whose group
is dropped (missing, policy "drop") or whose value is missing (null or NaN) are
left out of every part, so a mean's count counts exactly the rows summed. The
privacy unit's row selection (at most L rows per person) happens before, in
releases.compute.reading. Memory is O(cells) plus one row group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datasets.domains import as_float64
from dpportal.privacy.grid_cells import GridCells
from dpportal.privacy.grouped import GroupedAggregator
from dpportal.privacy.spread_parts import SpreadAggregator
from releases import kinds
from releases.kinds.quantiles import grid_of


class Partial(tuple):
    """Per-cell integer parts of one new-kind aggregate (Python ints: exact); adds elementwise."""

    def merge(self, other: Partial) -> Partial:
        pairs = zip(self, other, strict=True)
        return Partial([x + int(y) for x, y in zip(a, b, strict=True)] for a, b in pairs)


@dataclass
class StatsReader:
    """Same interface as readers.StatisticReader: spec, axes (grouping cells), aggregate."""

    spec: dict[str, Any]
    axes: list
    edges: np.ndarray | None = None
    grid: GridCells | None = None

    @classmethod
    def from_spec(cls, spec: dict[str, Any], axis_from_domain) -> StatsReader:
        axes = [axis_from_domain(d) for d in spec.get("groups", [])]
        edges = grid = None
        if spec["kind"] == "quantiles":
            edges = np.array([float(c) for c in grid_of(spec)], dtype=np.float64)
            if np.any(np.diff(edges) <= 0):
                raise ValueError("candidates too close to tell apart in float64")
            grid = GridCells(edges)
        return cls(spec=spec, axes=axes, edges=edges, grid=grid)

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    @property
    def column_names(self) -> list[str]:
        names = [d["name"] for d in self.spec["columns"]]
        return names + [a.name for a in self.axes if a.name not in names]

    @property
    def cells(self) -> int:
        return int(np.prod([a.size for a in self.axes])) if self.axes else 1

    def empty(self) -> Any:
        if self.kind == "quantiles":
            return np.zeros(self.edges.size + 1, dtype=np.int64)
        parts = {"grouped_sum": 1, "grouped_mean": 2}.get(self.kind, 3)
        return Partial([0] * self.cells for _ in range(parts))

    def _values_and_cells(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        column = table.column(self.spec["columns"][0]["name"])
        values = as_float64(column).to_numpy(zero_copy_only=False)  # null: NaN
        keep = ~np.isnan(values)
        if not self.axes:
            return values[keep], np.zeros(int(keep.sum()), dtype=np.int64)
        codes = self.axes[0].codes(table.column(self.axes[0].name))
        keep &= codes >= 0
        if len(self.axes) == 2:
            codes2 = self.axes[1].codes(table.column(self.axes[1].name))
            keep &= codes2 >= 0
            codes = codes * self.axes[1].size + codes2
        return values[keep], codes[keep]

    def _quantile_counts(self, table: pa.Table) -> np.ndarray:
        """Counts per grid cell of the kept values; without groups straight from the
        column's buffers (nulls dropped first; GridCells skips NaN), no mask, no copy."""
        if self.axes:
            return self.grid.counts(self._values_and_cells(table)[0])
        column = table.column(self.spec["columns"][0]["name"])
        if column.null_count:
            column = pc.drop_null(column)
        counts = np.zeros(self.edges.size + 1, dtype=np.int64)
        for chunk in as_float64(column).chunks:
            counts += self.grid.counts(chunk.to_numpy(zero_copy_only=False))
        return counts

    def aggregate(self, table: pa.Table | None, n_rows: int) -> Any:
        if self.kind == "quantiles":
            return self._quantile_counts(table)
        values, cells = self._values_and_cells(table)
        grid = {
            "lower": self.spec["lower"],
            "upper": self.spec["upper"],
            "granularity": self.spec["granularity"],
        }
        if kinds.get(self.kind).aggregate == "spread":
            spread = SpreadAggregator(**grid, groups=self.cells)
            spread.add(values, cells)
            return Partial([spread.counts, spread.sums, spread.squares])
        grouped = GroupedAggregator(self.cells, **grid)
        grouped.add(cells, values)
        if self.kind == "grouped_sum":
            return Partial([grouped.sum_units])
        return Partial([grouped.sum_units, grouped.counts])
