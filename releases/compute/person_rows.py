"""The person bound through the dataset's person-rows copy (datasets.person_rows).

The copy gives each row its person's row count N, and holds one person's rows
adjacent, in row order, under a person number PID ordered by N. So a release
with bound L needs no grouping of all rows by person:

- rows with N <= L are all kept: a filter (Parquet row groups are skipped by
  their N statistics, since the file is in N order);
- rows with N > L (one contiguous run at the end of the file) are read IN FILE
  ORDER (DuckDB's preserve_insertion_order) with their person number, their
  keyed hash h(person, the row's read columns, K) and their cells and grid units
  (Plan.rows_sql), a batch at a time; per person (a run of equal PID) numpy keeps
  the L rows with the smallest (h, row number), the row number being the file
  order within a person. The order is checked, not assumed: a PID smaller than
  the one before stops the computation (OutOfOrder) before any aggregate exists.
- the kept rows of both go into the plan's one GROUPING SETS aggregation, the
  kept heavy rows streamed to DuckDB as Arrow batches.

The choice is the same as duckdb_engine's without the copy (same h, same K, same
tie-break), so it depends only on the person's own rows and K; rows without an
ID have no N and are dropped. Memory: one batch (and one person's rows spanning
two batches) at a time in numpy, DuckDB under its memory limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from datasets import person_rows
from releases.compute.plan import Dialect, Plan

BATCH_ROWS = 65_536
HASH = "__dpportal_h"


class OutOfOrder(Exception):
    """The copy's rows did not arrive in person order (the bound cannot be applied)."""


@dataclass
class Heavy:
    """What the aggregation reads while it runs: keep it until the query is done."""

    cursor: Any  # the cursor reading the copy's heavy rows in file order
    stream: pa.RecordBatchReader  # its batches
    kept: pa.RecordBatchReader | None = None  # the kept rows, registered as `heavy`
    out_of_order: bool = False  # set (before OutOfOrder is raised inside DuckDB's read)


def copy_for(spec: dict[str, Any]) -> str | None:
    """The local path of the spec's dataset's person-rows copy, if fresh for this spec."""
    unit = spec["privacy_unit"]
    if not unit["id_column"]:
        return None
    try:
        identity = person_rows.source_identity(
            parquet_file=spec.get("parquet_file", ""), external=spec.get("external")
        )
    except (OSError, ValueError):
        return None
    return person_rows.fresh_path(
        dataset_id=spec.get("dataset"), id_column=unit["id_column"], identity=identity
    )


def aggregate_sql(
    con, plan: Plan, path: str, *, id_column: str, bound: int, key: int, keyed_hash: str
) -> tuple[str, Heavy]:
    """The aggregation query over the kept rows, and what it reads while it runs (the
    Arrow stream of the kept rows of people with more than `bound` rows, registered on
    `con` as `heavy`).

    `con` must preserve insertion order (the heavy rows are read in file order);
    `keyed_hash` is the SQL of h over the relation `s` with the key as $key.
    """
    d = plan.dialect
    source = f"read_parquet({d.text(path)})"
    n = d.ident(person_rows.N)
    light = plan.rows_sql(f"(SELECT * FROM {source} WHERE {n} <= {bound}) AS s")  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
    names = list(plan.selects) or ["one"]
    extra = {"one": "1"} if not plan.selects else {}
    extra.update({person_rows.PID: d.ident(person_rows.PID), HASH: keyed_hash})
    heavy_sql = plan.rows_sql(f"(SELECT * FROM {source} WHERE {n} > {bound}) AS s", extra)  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
    cursor = con.cursor()
    heavy = Heavy(cursor, cursor.sql(heavy_sql, params={"key": key}).to_arrow_reader(BATCH_ROWS))
    schema = pa.schema([heavy.stream.schema.field(name) for name in names])
    heavy.kept = pa.RecordBatchReader.from_batches(schema, _kept(heavy, names, bound))
    con.register("heavy", heavy.kept)
    rows = f"({light} UNION ALL SELECT {', '.join(names)} FROM heavy)"  # noqa: S608 - plan's names
    return plan.grouping_sql(rows), heavy


def _kept(heavy: Heavy, names: list[str], bound: int) -> Iterator[pa.RecordBatch]:
    """The kept rows of each complete person in the stream (a person's last rows in a
    batch wait for the next one)."""
    carry: pa.Table | None = None
    last = None
    for batch in heavy.stream:
        table = pa.Table.from_batches([batch])
        if carry is not None and carry.num_rows:
            table = pa.concat_tables([carry, table])
        table = table.combine_chunks()
        pid = table.column(person_rows.PID).to_numpy()
        if not len(pid):
            continue
        if np.any(pid[1:] < pid[:-1]) or (last is not None and pid[0] < last):
            heavy.out_of_order = True
            raise OutOfOrder("The person-rows copy was not read in person order.")
        last = pid[-1]
        end = int(np.searchsorted(pid, pid[-1]))  # where the last person's rows begin
        carry = table.slice(end)
        if end:
            yield from _select(table.slice(0, end), names, bound).to_batches()
    if carry is not None and carry.num_rows:
        yield from _select(carry, names, bound).to_batches()


def _select(table: pa.Table, names: list[str], bound: int) -> pa.Table:
    pid = table.column(person_rows.PID).to_numpy()
    h = table.column(HASH).to_numpy()
    return table.filter(pa.array(keep_lowest(pid, h, bound))).select(names)


def keep_lowest(pid: np.ndarray, h: np.ndarray, bound: int) -> np.ndarray:
    """Per run of equal `pid` (whole people), the `bound` rows with the smallest (h,
    position): ties in h go to the earlier row, as ORDER BY h, row number does."""
    size = len(pid)
    if not size:
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.concatenate(([True], pid[1:] != pid[:-1])))
    lengths = np.diff(np.append(starts, size))
    if bound == 1:  # O(n): the first row holding its person's smallest h
        lowest = h == np.repeat(np.minimum.reduceat(h, starts), lengths)
        seen = np.cumsum(lowest)
        before = np.repeat(np.concatenate(([0], seen[starts[1:] - 1])), lengths)
        return lowest & (seen - before == 1)
    person = np.repeat(np.arange(len(starts)), lengths)
    order = np.lexsort((h, person))  # stable: equal h stay in row order
    rank = np.empty(size, dtype=np.int64)
    rank[order] = np.arange(size) - np.repeat(starts, lengths)
    return rank < bound


def keyed_hash_sql(d: Dialect, id_column: str, columns: list[str]) -> str:
    """h(person, the row's read columns, K) over the relation `s`, the key as $key: the
    one spelling both paths use, so they choose the same rows."""
    values = ", ".join(f"s.{d.ident(c)}" for c in [id_column, *columns])
    return d.keyed_hash.format(values=values, key="$key::UBIGINT")
