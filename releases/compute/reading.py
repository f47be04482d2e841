"""Reading the stored dataset: only the needed columns, one row group at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.conf import settings

from datasets.domains import read_declared
from dpportal.privacy.rng import uniform_keys
from releases.compute.readers import StatisticReader, merge


def dataset_path(spec: dict[str, Any]) -> Path:
    return Path(settings.MEDIA_ROOT) / spec["parquet_file"]


def needed_columns(readers: Iterable[StatisticReader]) -> list[str]:
    names: list[str] = []
    for reader in readers:
        for name in reader.column_names:
            if name not in names:
                names.append(name)
    return names


def declared_domains(readers: Iterable[StatisticReader]) -> dict[str, dict[str, Any]]:
    """Each read column's frozen domain (the same column has the same domain everywhere)."""
    domains: dict[str, dict[str, Any]] = {}
    for reader in readers:
        for domain in [*reader.spec.get("columns", []), *reader.spec.get("groups", [])]:
            domains.setdefault(domain["name"], domain)
    return domains


def read_as_declared(table: pa.Table, domains: dict[str, dict[str, Any]]) -> pa.Table:
    """The columns read as declared: missing-value codes, numbers in text, date bins."""
    for name, domain in domains.items():
        if name in table.column_names:
            index = table.column_names.index(name)
            table = table.set_column(index, name, read_declared(table.column(index), domain))
    return table


def keep_mask(parquet: pq.ParquetFile, *, id_column: str, bound: int) -> np.ndarray:
    """Which rows the privacy unit keeps: per person, the `bound` rows with the smallest keys.

    Reads the ID column alone (memory bounded by it); keys come from the CSPRNG
    (dpportal.privacy.rng.uniform_keys). Rows with a missing ID are dropped.
    """
    pieces = [
        parquet.read_row_group(i, columns=[id_column]).column(0).combine_chunks()
        for i in range(parquet.num_row_groups)
    ]
    ids = pa.concat_arrays(pieces) if pieces else pa.array([], type=pa.string())
    n = len(ids)
    groups = pc.fill_null(pc.dictionary_encode(ids).indices, -1).to_numpy(zero_copy_only=False)
    del ids, pieces
    keys = uniform_keys(n)
    order = np.lexsort((keys, groups))
    del keys
    sorted_groups = groups[order]
    starts = np.empty(n, dtype=bool)
    if n:
        starts[0] = True
        np.not_equal(sorted_groups[1:], sorted_groups[:-1], out=starts[1:])
    positions = np.arange(n, dtype=np.int64)
    first = np.maximum.accumulate(np.where(starts, positions, 0))
    keep_sorted = ((positions - first) < bound) & (sorted_groups >= 0)
    keep = np.empty(n, dtype=bool)
    keep[order] = keep_sorted
    return keep


def aggregate_row_groups(
    *,
    parquet: pq.ParquetFile,
    readers: list[StatisticReader],
    row_groups: Iterable[int],
    mask: np.ndarray | None,
    on_chunk: Callable[[int], None] | None = None,
) -> list[Any]:
    """The true aggregates of `readers` over `row_groups` (in memory only)."""
    columns = needed_columns(readers)
    domains = declared_domains(readers)
    offsets = np.cumsum(
        [0] + [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)]
    )
    totals = [reader.empty() for reader in readers]
    for done, index in enumerate(row_groups, start=1):
        n_rows = parquet.metadata.row_group(index).num_rows
        table = parquet.read_row_group(index, columns=columns) if columns else None
        if mask is not None:
            chunk_mask = mask[offsets[index] : offsets[index] + n_rows]
            n_rows = int(np.count_nonzero(chunk_mask))
            if table is not None:
                table = table.filter(pa.array(chunk_mask))
        if table is not None:
            table = read_as_declared(table, domains)
        for i, reader in enumerate(readers):
            totals[i] = merge(totals[i], reader.aggregate(table, n_rows))
        del table
        if on_chunk is not None:
            on_chunk(done)
    return totals
