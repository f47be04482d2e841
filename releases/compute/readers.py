"""The statistics' readers: public domains to cell codes, row groups to true aggregates.

Domains (public, from the owner): a categorical column is cast to string and
matched against the declared categories; cells are the categories, then
"Other" (values outside the list), then "Missing" (only when the column's
missing policy is "category"; otherwise missing rows are dropped). A numeric
histogram clamps values into [first edge, last edge] and bins them by the
declared edges (bins are [e_i, e_i+1), the last one closed). A cross-tabulation
(a kind whose aggregate is "marginals") is a histogram of all its columns read
through its marginals: its rows are those every column gives a cell (a row one
column drops -- missing, policy "drop" -- is in none of its tables, the total
included), so each table is an exact sum of any table containing it; the
aggregate holds, per maximal marginal of the workload
(dpportal.privacy.marginal_workload, canonical order), the rows in each cell of
that table (an int64 array shaped by its columns' cells; the total's shape is
()). Sums and means
clip to [lo, hi] and round to the public grid (dpportal.privacy.sensitivity);
missing values are dropped from sums and means. True aggregates live only in
the calling process's memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datasets.domains import as_float64
from dpportal.privacy import sensitivity
from dpportal.privacy.marginal_workload import Marginal, Workload
from releases import kinds
from releases.compute.readers_bounds import GridCountsReader
from releases.compute.readers_keys import KeyPairs, KeysReader
from releases.compute.readers_stats import Partial, StatsReader

OTHER = "Other"
MISSING = "Missing"


@dataclass
class Axis:
    """One column of a count, histogram or argmax, with its cells."""

    name: str
    categorical: bool
    labels: list[str]
    missing_cell: bool
    categories: pa.Array | None = None
    edges: np.ndarray | None = None

    @classmethod
    def from_domain(cls, domain: dict[str, Any]) -> Axis:
        missing_cell = domain["missing"] == "category"
        if domain["kind"] == "categorical":
            cats = [str(c) for c in domain["categories"]]
            labels = [*cats, OTHER] + ([MISSING] if missing_cell else [])
            return cls(
                name=domain["name"],
                categorical=True,
                labels=labels,
                missing_cell=missing_cell,
                categories=pa.array(cats, type=pa.string()),
            )
        edges = np.array([float(e) for e in domain["bin_edges"]], dtype=np.float64)
        k = len(edges) - 1
        labels = [
            f"[{domain['bin_edges'][i]}, {domain['bin_edges'][i + 1]}{']' if i == k - 1 else ')'}"
            for i in range(k)
        ] + ([MISSING] if missing_cell else [])
        return cls(
            name=domain["name"],
            categorical=False,
            labels=labels,
            missing_cell=missing_cell,
            edges=edges,
        )

    @property
    def size(self) -> int:
        return len(self.labels)

    def codes(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Cell index of every row; -1 for a row the statistic drops."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
        if self.categorical:
            k = len(self.categories)
            text = column if pa.types.is_string(column.type) else pc.cast(column, pa.string())
            index = pc.index_in(text, value_set=self.categories)
            codes = pc.fill_null(index, k).to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            k = len(self.edges) - 1
            values = as_float64(column).to_numpy(zero_copy_only=False)
            if nulls is not None:
                values = np.where(nulls, self.edges[0], values)
            clamped = np.clip(values, self.edges[0], self.edges[-1])
            codes = np.searchsorted(self.edges, clamped, side="right").astype(np.int64) - 1
            np.minimum(codes, k - 1, out=codes)
        if nulls is not None:
            codes[nulls] = (self.size - 1) if self.missing_cell else -1
        return codes


def maximal_marginals(spec: dict[str, Any], axes: list[Axis]) -> tuple[Marginal, ...]:
    """The tables a cross-tabulation's aggregate holds, in canonical order: the maximal
    marginals of its workload (every published table is an exact sum of one of them)."""
    return Workload.of([axis.size for axis in axes], spec["marginals"]).maximal


def marginal_counts(
    codes: list[np.ndarray], axes: list[Axis], marginals: tuple[Marginal, ...], n_rows: int
) -> list[np.ndarray]:
    """Each table's cell counts from the rows' cell codes per column (-1: dropped), over
    the rows no column drops."""
    keep = None
    for axis, column in zip(axes, codes, strict=True):
        if not axis.missing_cell:  # only a dropped missing value has code -1
            keep = column >= 0 if keep is None else keep & (column >= 0)
    if keep is not None and keep.all():
        keep = None
    out = []
    for marginal in marginals:
        shape = tuple(axes[i].size for i in marginal)
        if not marginal:
            out.append(np.array(n_rows if keep is None else np.count_nonzero(keep), np.int64))
            continue
        flat = codes[marginal[0]]
        for i in marginal[1:]:
            flat = flat * axes[i].size + codes[i]
        counts = np.bincount(flat if keep is None else flat[keep], minlength=math.prod(shape))
        out.append(counts.astype(np.int64, copy=False).reshape(shape))
    return out


@dataclass
class StatisticReader:
    """Turns row groups into the true aggregate of one statistic (memory only)."""

    spec: dict[str, Any]
    axes: list[Axis]
    marginals: tuple[Marginal, ...] | None = None  # a cross-tabulation's maximal tables

    @classmethod
    def from_spec(
        cls, spec: dict[str, Any], *, id_column: str | None = None
    ) -> StatisticReader | StatsReader | KeysReader | GridCountsReader:
        kind = kinds.get(spec["kind"])
        if kind.aggregate == "keys":
            return KeysReader(spec=spec, id_column=id_column or None)
        if kind.aggregate == "marginals":
            axes = [Axis.from_domain(d) for d in spec["columns"]]
            return cls(spec=spec, axes=axes, marginals=maximal_marginals(spec, axes))
        if kind.fields == "grouped":
            return StatsReader.from_spec(spec, Axis.from_domain)
        if kind.aggregate == "grid_counts":
            return GridCountsReader.from_spec(spec)
        axes = []
        if spec["kind"] in ("histogram", "argmax") or (spec["kind"] == "count" and spec["columns"]):
            axes = [Axis.from_domain(d) for d in spec["columns"]]
        return cls(spec=spec, axes=axes)

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    @property
    def column_names(self) -> list[str]:
        return [d["name"] for d in self.spec["columns"]]

    def empty(self) -> Any:
        if self.marginals is not None:
            return [
                np.zeros(tuple(self.axes[i].size for i in m), dtype=np.int64)
                for m in self.marginals
            ]
        if self.kind == "histogram":
            return np.zeros(int(np.prod([a.size for a in self.axes])), dtype=np.int64)
        if self.kind == "argmax":
            return np.zeros(len(self.axes[0].categories), dtype=np.int64)
        if self.kind == "mean":
            return [0, 0]
        return 0

    def aggregate(self, table: pa.Table | None, n_rows: int) -> Any:
        kind = self.kind
        if self.marginals is not None:
            codes = [axis.codes(table.column(axis.name)) for axis in self.axes]
            return marginal_counts(codes, self.axes, self.marginals, n_rows)
        if kind == "count" and not self.axes:
            return int(n_rows)
        if kind == "count":
            codes = self.axes[0].codes(table.column(self.axes[0].name))
            target = self.axes[0].labels.index(self.spec["category"])
            return int(np.count_nonzero(codes == target))
        if kind == "histogram":
            codes = self.axes[0].codes(table.column(self.axes[0].name))
            if len(self.axes) == 2:
                codes2 = self.axes[1].codes(table.column(self.axes[1].name))
                keep = (codes >= 0) & (codes2 >= 0)
                codes = codes[keep] * self.axes[1].size + codes2[keep]
                size = self.axes[0].size * self.axes[1].size
            else:
                codes = codes[codes >= 0]
                size = self.axes[0].size
            return np.bincount(codes, minlength=size).astype(np.int64)
        if kind == "argmax":
            codes = self.axes[0].codes(table.column(self.axes[0].name))
            k = len(self.axes[0].categories)
            return np.bincount(codes[(codes >= 0) & (codes < k)], minlength=k).astype(np.int64)
        # sum and mean: clip to the bounds, round to the public grid, sum exactly
        column = table.column(self.column_names[0])
        values = as_float64(column)
        if values.null_count:
            values = pc.drop_null(values)
        array = values.to_numpy()
        units = sensitivity.to_grid_units(
            array,
            lower=self.spec["lower"],
            upper=self.spec["upper"],
            granularity=self.spec["granularity"],
        )
        total = sensitivity.exact_grid_sum(units)  # a released sum's grid units reach 2**52
        if kind == "sum":
            return total
        return [total, int(units.size)]


def merge(a: Any, b: Any) -> Any:
    """Add two partial aggregates of the same statistic."""
    if isinstance(a, Partial | KeyPairs):
        return a.merge(b)
    if isinstance(a, np.ndarray):
        return a + np.asarray(b, dtype=np.int64)
    if isinstance(a, list) and a and isinstance(a[0], np.ndarray):  # a cross-tabulation's tables
        return [np.asarray(x + np.asarray(y, dtype=np.int64)) for x, y in zip(a, b, strict=True)]
    if isinstance(a, list):
        return [a[0] + int(b[0]), a[1] + int(b[1])]
    return int(a) + int(b)
