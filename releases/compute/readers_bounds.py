"""The private-bounds reader: row groups to the count of values in each cell of a public
search grid's edges e_0 < ... < e_m: (-inf, e_0], (e_0, e_1], ..., (e_m, +inf).

A value's cell is the number of edges strictly below it (numpy's searchsorted, side
"left"), compared in float64 against the same float edges the SQL plan writes as
literals, so both paths agree exactly. Missing values (null, NaN: the column's
missing rule) are dropped; the privacy unit's row selection happens before, in
releases.compute.reading. Memory is O(edges) plus one row group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datasets.domains import as_float64
from releases.kinds.bounds import grid_of


def grid_edges(spec: dict[str, Any]) -> np.ndarray:
    """The grid's edges as float64, strictly increasing (the core's SearchGrid.edges)."""
    edges = np.array(grid_of(spec).edges(), dtype=np.float64)
    if np.any(np.diff(edges) <= 0):
        raise ValueError("grid points too close to tell apart in float64")
    return edges


@dataclass
class GridCountsReader:
    """Same interface as readers.StatisticReader: spec, axes, column_names, empty, aggregate."""

    spec: dict[str, Any]
    edges: np.ndarray
    axes: tuple = ()  # no grouping cells

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> GridCountsReader:
        return cls(spec=spec, edges=grid_edges(spec))

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    @property
    def column_names(self) -> list[str]:
        return [d["name"] for d in self.spec["columns"]]

    def empty(self) -> np.ndarray:
        return np.zeros(self.edges.size + 1, dtype=np.int64)

    def aggregate(self, table: pa.Table | None, n_rows: int) -> np.ndarray:
        column = table.column(self.column_names[0])
        if column.null_count:
            column = pc.drop_null(column)
        counts = self.empty()
        for chunk in as_float64(column).chunks:
            values = chunk.to_numpy(zero_copy_only=False)
            values = values[~np.isnan(values)]
            cells = np.searchsorted(self.edges, values, side="left")
            counts += np.bincount(cells, minlength=self.edges.size + 1).astype(np.int64)
        return counts
