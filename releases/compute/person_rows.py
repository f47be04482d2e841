"""The person bound through the dataset's person-rows copy (datasets.person_rows).

The copy gives each row its person's row count N, and holds one person's rows
adjacent, in row order, under a person number PID ordered by N. So a release
with bound L needs no grouping of all rows by person:

1. the rows with N > L (one contiguous run of the file, since it is in N order)
   are read IN FILE ORDER (DuckDB's preserve_insertion_order), only three narrow
   columns: PID, the keyed hash h(K, person, n) (`keyed_hash_sql`; n, the row's place
   among its person's rows, is its position less the person's first) and the row's
   position in the copy. Per person (a run of equal PID) numpy keeps the L rows
   with the smallest (h, position) -- within a person the position follows the
   row number, so this is the three-pass path's ORDER BY h, row number. The order
   is checked, not assumed: a PID going back, or positions not following one
   another, stop the computation (OutOfOrder) before any aggregate exists;
2. the kept positions become a bitmap (one bit per heavy row, passed to DuckDB as
   a BLOB parameter read as BIT), and the plan's one GROUPING SETS aggregation
   reads the copy once more, in parallel, keeping a row when N <= L or its bit is
   set: no join, no window, no hash table keyed by person.

The choice is the same as duckdb_engine's without the copy and Spark's (same h,
same K, same tie-break), so it depends only on the person's own rows and K; rows without an
ID have no N and are dropped. The copy must not change between the two reads:
its file identity (inode, size, modification time) is compared before and after
(a rebuilt copy is a new file), and a change falls back like OutOfOrder. Memory:
a batch at a time, plus one bit per heavy row.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa

from datasets import person_rows
from releases.compute.dialect import NTH, Dialect
from releases.compute.keyed_hash import bound_hash_sql
from releases.compute.plan import Plan

BATCH_ROWS = 262_144


class OutOfOrder(Exception):
    """The copy's rows did not arrive in person order, or the copy changed meanwhile."""


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


def aggregate(con, plan: Plan, spec: dict[str, Any], path: str, *, key: int, keyed_hash: str):
    """The plan's result rows and column names over the rows the bound keeps.

    `path` is copy_for(spec); `con` must preserve insertion order; `keyed_hash` is
    the SQL of h over the relation `s`, the key as $key.
    """
    before = _identity(path)
    # fresh again now that its identity is taken: a copy replaced after this is caught below
    if copy_for(spec) != path:
        raise OutOfOrder("The person-rows copy changed before it was read.")
    bound = int(spec["privacy_unit"]["contribution_bound"])
    d = plan.dialect
    n = d.ident(person_rows.N)
    source = f"read_parquet({d.text(path)}, file_row_number = true)"
    # n: a person's rows are adjacent and in row order, so n is the position less the
    # person's first; the window does not keep file order, the ORDER BY restores it
    pid, person = d.ident(person_rows.PID), d.ident(spec["privacy_unit"]["id_column"])
    heavy = (
        f"SELECT s.pid, {keyed_hash} AS h, s.pos FROM ("  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
        f"SELECT {pid} AS pid, {person}, file_row_number AS pos, file_row_number "
        f"- min(file_row_number) OVER (PARTITION BY {pid}) + 1 AS {NTH} "
        f"FROM {source} WHERE {n} > {bound}) AS s ORDER BY s.pos"
    )
    cursor = con.cursor()
    try:
        stream = cursor.sql(heavy, params={"key": key}).to_arrow_reader(BATCH_ROWS)
        start, bits = kept_bitmap(stream, bound)
    finally:
        cursor.close()
    keep = f"{n} <= {bound}"
    params: dict[str, Any] = {}
    if bits:
        # only a heavy row reads its bit (CASE); clamped all the same: no index out of range
        last_bit = len(bits) * 8 - 1
        index = f"least(greatest(file_row_number - {start}, 0), {last_bit})::INTEGER"
        keep = (
            f"CASE WHEN {n} <= {bound} THEN true WHEN {n} > {bound} "
            f"THEN get_bit($kept::BIT, {index}) = 1 ELSE false END"
        )
        params["kept"] = bits
    cursor = con.execute(plan.aggregate_sql(f"(SELECT * FROM {source} WHERE {keep}) AS s"), params)  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
    rows, names = cursor.fetchall(), [c[0] for c in cursor.description]
    if _identity(path) != before:
        raise OutOfOrder("The person-rows copy changed while it was read.")
    return rows, names


def _identity(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_ino, info.st_size, info.st_mtime_ns


def kept_bitmap(stream, bound: int) -> tuple[int, bytes]:
    """(the first heavy row's position, one bit per heavy row from it: kept or not) over
    the stream of (pid, h, pos) batches in file order. A batch's last person may go on
    in the next batch: their rows wait (`carry`) until the person is complete. The bits
    are packed as each person's choice is made (`_Bits`): one bit per heavy row is held,
    never a byte."""
    bits = _Bits()
    carry: list[tuple[np.ndarray, np.ndarray]] = []  # the rows so far of person `last`
    start = last = None
    expected = 0  # the next row's position
    for batch in stream:
        pid, h, pos = (batch.column(i).to_numpy() for i in range(3))
        if not len(pid):
            continue
        if start is None:
            start = expected = int(pos[0])
        if (
            np.any(pid[1:] < pid[:-1])
            or (last is not None and pid[0] < last)
            or pos[0] != expected
            or np.any(np.diff(pos) != 1)
        ):
            raise OutOfOrder("The person-rows copy was not read in person order.")
        expected = int(pos[-1]) + 1
        if carry and pid[0] == last:  # the carried person goes on in this batch
            head = int(np.searchsorted(pid, last, side="right"))
            carry.append((pid[:head], h[:head]))
            if head == len(pid):
                continue
            pid, h = pid[head:], h[head:]
        if carry:
            bits.add(keep_lowest(*map(np.concatenate, zip(*carry, strict=True)), bound))
        last = pid[-1]
        end = int(np.searchsorted(pid, last))  # where the last person's rows begin
        bits.add(keep_lowest(pid[:end], h[:end], bound))
        carry = [(pid[end:], h[end:])]
    if carry:
        bits.add(keep_lowest(*map(np.concatenate, zip(*carry, strict=True)), bound))
    if start is None:
        return 0, b""
    return start, bits.finish()


class _Bits:
    """Booleans packed eight to a byte as they come (bit 0: the first byte's top); fewer
    than eight wait for the next."""

    def __init__(self) -> None:
        self._packed: list[bytes] = []
        self._pending = np.zeros(0, dtype=bool)

    def add(self, flags: np.ndarray) -> None:
        flags = np.concatenate((self._pending, flags)) if len(self._pending) else flags
        whole = len(flags) - len(flags) % 8
        if whole:
            self._packed.append(np.packbits(flags[:whole]).tobytes())
        self._pending = flags[whole:].copy()

    def finish(self) -> bytes:
        if len(self._pending):
            self._packed.append(np.packbits(self._pending).tobytes())
            self._pending = np.zeros(0, dtype=bool)
        return b"".join(self._packed)


def keep_lowest(pid: np.ndarray, h: np.ndarray, bound: int, *, rounds: int = 16) -> np.ndarray:
    """Per run of equal `pid` (whole people), the `bound` rows with the smallest (h,
    position): ties in h go to the earlier row, as ORDER BY h, row number does.

    Up to `rounds` rows per person: that many O(n) passes, each taking every person's
    lowest row not yet taken; more: one sort by (person, h). 4.4M rows: 0.07 s for
    L = 1, 0.12 s for 2, 0.4 s for 8; the sort 1.4 s."""
    size = len(pid)
    if not size:
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.concatenate(([True], pid[1:] != pid[:-1])))
    lengths = np.diff(np.append(starts, size))
    if bound > rounds:
        person = np.repeat(np.arange(len(starts)), lengths)
        order = np.lexsort((h, person))  # stable: equal h stay in row order
        rank = np.empty(size, dtype=np.int64)
        rank[order] = np.arange(size) - np.repeat(starts, lengths)
        return rank < bound
    taken = np.zeros(size, dtype=bool)
    left = h.copy()  # a taken row's h becomes the largest value (`taken` breaks that tie)
    for done in range(min(bound, int(lengths.max()))):
        lowest = (left == np.repeat(np.minimum.reduceat(left, starts), lengths)) & ~taken
        # each person with rows left has at least one; more in all: ties, keep the first
        if np.count_nonzero(lowest) > np.count_nonzero(lengths > done):
            seen = np.cumsum(lowest)
            before = np.repeat(np.concatenate(([0], seen[starts[1:] - 1])), lengths)
            lowest &= seen - before == 1
        taken |= lowest
        left[lowest] = np.iinfo(left.dtype).max
    return taken


def keyed_hash_sql(d: Dialect, id_column: str, id_type: pa.DataType) -> str:
    """h(K, person, n) over the relation `s` (keyed_hash.bound_hash_sql, a BIGINT), the key as
    $key: the one spelling both DuckDB paths use, so they choose the same rows."""
    return bound_hash_sql(d, id_column, id_type, "CAST($key::UBIGINT AS VARCHAR)")
