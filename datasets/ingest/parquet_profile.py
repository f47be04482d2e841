"""The fast CSV conversion's checks and profile, from the Parquet Polars wrote.

Run in the worker once `polars_child` has written the Parquet (its interpreter loads
no numpy or pyarrow: they would slow its start). `profile_file` gives each column's
profile state, exactly what datasets.ingest.profile.profile_update would have kept
reading the same rows, or raises NotOk where Polars read the file differently from
pyarrow's reader (datasets.ingest.writer), which then reads it:

- a blank line (a row of nulls to Polars, skipped by pyarrow) or a short row (padded
  with nulls by Polars, refused by pyarrow): either leaves a null in the last column;
  when it has nulls, the separators in the bytes must be exactly those between every
  row's fields plus those inside text values;
- a text value holding a newline (quoted: pyarrow reads without newlines in values),
  a lone carriage return (a line break to pyarrow), a NUL (refused), or a quoted ""
  (null to pyarrow, "" to Polars). Only text can hold them (a number with one does
  not parse and Polars refuses the file), and the profile reads all text anyway;
- a float that is not finite (pyarrow's reader counts it unreadable): the row
  groups' statistics (the child wrote NaN as +inf).

A row group at a time (memory flat in rows), two columns at a time, only what can
change a column's state is read: every row group of a text column, and of an integer
column while it has at most TRACK_LIMIT values; then a number column's extremes, from
the row groups its statistics say may hold them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datasets.ingest.profile import (
    MOSTLY_NUMERIC,
    SUGGEST_MIN_ROWS,
    TRACK_BYTES,
    TRACK_LIMIT,
    reads_as_finite,
)

# read differently by pyarrow's reader and Polars: a NUL, a line break, a quoted ""
# (null to pyarrow, quoted_strings_can_be_null; "" to Polars)
UNSAFE_TEXT = "[\x00\r\n]|^$"
CHUNK = 1 << 22


class NotOk(Exception):
    """The conversion cannot vouch for the result: the careful path decides."""


def profile_file(job: dict) -> list[dict]:
    """Each column's state, or NotOk."""
    names, kinds = job["names"], job["kinds"]
    meta = pq.read_metadata(job["destination"])
    if meta.num_rows == 0:
        raise NotOk("no rows")
    columns = profile(job["destination"], names, kinds, job["delimiter"])
    inside = sum(column.pop("separators") for column in columns)
    if _nulls(meta, len(names) - 1) != 0:
        check_fields(job, meta.num_rows, inside)
    return columns


def _nulls(meta: pq.FileMetaData, position: int) -> int | None:
    total = 0
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(position).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += stats.null_count
    return total


def check_fields(job: dict, rows: int, inside: int) -> None:
    """Every row has every field: a blank line or a short row has fewer separators.

    The separators in the bytes must be the header's, those between the fields of
    each row, and `inside` (those within text values)."""
    separator = ord(job["delimiter"])
    found = header = 0
    with open(job["source"], "rb") as handle:
        first = True
        while chunk := handle.read(CHUNK):
            if first and job["header"]:
                end = chunk.find(b"\n")
                header = (chunk if end < 0 else chunk[:end]).count(separator)
            first = False
            found += int(np.count_nonzero(np.frombuffer(chunk, np.uint8) == separator))
    if found != header + rows * (len(job["names"]) - 1) + inside:
        raise NotOk("a blank line or a row with fewer fields than the header")


# --- the profile's state, from the Parquet just written --------------------------------


class State:
    """What datasets.ingest.profile.ColumnProfile keeps for one column."""

    def __init__(self, kind: str, separator: str) -> None:
        self.kind = kind
        self.k = SUGGEST_MIN_ROWS
        self.limit = TRACK_LIMIT
        self.separator = separator
        self.counts: dict | None = None if kind == "float" else {}
        self.counted_bytes = 0  # UTF-8 bytes of the keys of `counts`, as the profile keeps
        self.lows: np.ndarray | None = None
        self.highs: np.ndarray | None = None
        self.cells = 0
        self.readable: int | None = 0
        self.separators = 0  # separators inside the text values

    def add(self, array: pa.Array) -> None:
        present = array.drop_null() if array.null_count else array
        self.cells += len(present)
        if not len(present):
            return
        if self.kind == "string":
            self._strings(present)
        else:
            self._numbers(_numpy(present))

    def _strings(self, present: pa.Array) -> None:
        if pa.types.is_dictionary(present.type):  # (pa.array would load pandas: 0.2 s)
            text = present.dictionary
            uses = np.bincount(_numpy(present.indices), minlength=len(text))
        else:
            counted = pc.value_counts(present)
            text, uses = counted.field("values"), _numpy(counted.field("counts"))
        if pc.any(pc.match_substring_regex(text, UNSAFE_TEXT)).as_py():
            raise NotOk("a text value with a NUL or line break, or a quoted empty one")
        within = _numpy(pc.count_substring(text, self.separator))
        self.separators += int(np.dot(within, uses))
        if self.readable is not None:
            finite = _numpy(pc.cast(reads_as_finite(text), pa.int8())) > 0
            self.readable += int(uses[finite].sum())
            if self.readable < MOSTLY_NUMERIC * self.cells:
                self.readable = None
        self._merge(text.to_pylist() if self.counts is not None else [], uses)

    def _numbers(self, values: np.ndarray) -> None:
        """Counts an integer column's values (its extremes come later: see _column)."""
        if self.counts is None:
            return
        low, high = int(values.min()), int(values.max())
        if high - low < 1 << 22:
            low = min(low, 0) if high < 1 << 22 else low  # small counts need no shift
            uses = np.bincount(values - low if low else values)
            seen = np.flatnonzero(uses)
            if len(seen) > self.limit:
                self.counts = None
                return
            self._merge([str(int(v) + low) for v in seen], uses[seen])
        else:
            distinct, uses = np.unique(values, return_counts=True)
            if len(distinct) > self.limit:
                self.counts = None
                return
            self._merge([str(int(v)) for v in distinct], uses)

    def extremes(self, values: np.ndarray) -> None:
        self.lows = _smallest(values, self.lows, self.k)
        self.highs = -_smallest(-values, None if self.highs is None else -self.highs, self.k)

    def extremes_from_counts(self) -> None:
        """The k smallest and largest values, repeats included, from the exact counts."""
        ordered = sorted((int(v), n) for v, n in self.counts.items())
        self.lows = np.array(_first(ordered, self.k), dtype=np.int64)
        self.highs = np.array(_first(ordered[::-1], self.k), dtype=np.int64)

    def _merge(self, values: list, uses: np.ndarray) -> None:
        if self.counts is None:
            return
        if np.count_nonzero(uses) > self.limit:
            self.counts = None
            return
        for value, n in zip(values, uses.tolist(), strict=True):
            if n:
                if value not in self.counts:
                    self.counted_bytes += len(value.encode())
                self.counts[value] = self.counts.get(value, 0) + n
        if len(self.counts) > self.limit or self.counted_bytes > TRACK_BYTES:
            self.counts = None

    def to_json(self) -> dict:
        numbers = self.kind != "string"
        return {
            "cells": self.cells,
            "counts": self.counts,
            "lows": sorted(self.lows.tolist()) if numbers and self.lows is not None else [],
            "highs": sorted(self.highs.tolist()) if numbers and self.highs is not None else [],
            "readable": self.readable if self.kind == "string" else 0,
            "separators": self.separators,
        }


def _first(ordered: list[tuple[int, int]], k: int) -> list[int]:
    values: list[int] = []
    for value, n in ordered:
        values.extend([value] * min(n, k - len(values)))
        if len(values) >= k:
            break
    return values


def _numpy(array: pa.Array) -> np.ndarray:
    """A null-free array of fixed-width numbers as numpy, without a copy (pyarrow's own
    to_numpy looks for pandas on its first call: 0.2 s this process need not spend)."""
    if array.null_count:
        raise ValueError("nulls")
    width = array.type.bit_width // 8
    dtype = _DTYPES[str(array.type)]
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * width)


_DTYPES = {"int8": np.int8, "int32": np.int32, "int64": np.int64, "double": np.float64}


def _smallest(values: np.ndarray, kept: np.ndarray | None, k: int) -> np.ndarray:
    """The k smallest of `kept` and `values` (with repeats): values at or above the
    k-th kept one cannot enter, so most of a large batch is dropped by one compare."""
    if kept is not None and len(kept) >= k:
        values = values[values < kept.max()]
        if not len(values):
            return kept
    pool = values if kept is None else np.concatenate([kept, values])
    return np.partition(pool, k - 1)[:k] if len(pool) > k else pool


def profile(path: str, names: list[str], kinds: list[str], separator: str) -> list[dict]:
    """Each column's profile state. Columns are independent: two threads share them
    (numpy and pyarrow release the GIL), the slowest kinds first (a float column's
    extremes, then integers' counts), so that neither thread waits at the end."""
    order = sorted(range(len(names)), key=lambda i: ("float", "integer", "string").index(kinds[i]))
    with ThreadPoolExecutor(max_workers=2) as pool:
        states = pool.map(lambda i: _column(path, names[i], i, kinds[i], separator), order)
        by_position = dict(zip(order, states, strict=True))
    return [by_position[i] for i in range(len(names))]


def _column(path: str, name: str, position: int, kind: str, separator: str) -> dict:
    """Text columns, and integer columns while they have few values, are read whole, in
    file order. A number column's extremes then come from its counts if it kept them,
    else from the row groups its statistics say may hold them: the lowest minima
    first (then the highest maxima), until one cannot."""
    state = State(kind, separator)
    parquet = pq.ParquetFile(path, read_dictionary=[name] if kind == "string" else None)
    meta = parquet.metadata
    groups = range(meta.num_row_groups)
    stats = [_checked(meta, g, position, kind) for g in groups]

    def read(group: int) -> list[pa.Array]:
        return parquet.read_row_group(group, columns=[name], use_threads=False).column(0).chunks

    counted = 0  # row groups read in file order
    while counted < len(groups) and (kind == "string" or state.counts is not None):
        for chunk in read(counted):
            state.add(chunk)
        counted += 1
    if kind == "string":
        return state.to_json()
    state.cells += sum(meta.row_group(g).num_rows - stats[g].null_count for g in groups[counted:])
    if state.counts is not None:
        state.extremes_from_counts()
        return state.to_json()
    ranged = [g for g in groups if stats[g].has_min_max]
    folded: set[int] = set()  # row groups whose values are in both extremes already
    for low in (True, False):
        for group in sorted(ranged, key=lambda g: stats[g].min if low else -stats[g].max):
            kept = state.lows if low else state.highs
            if kept is not None and len(kept) >= state.k:
                if (stats[group].min >= kept.max()) if low else (stats[group].max <= kept.min()):
                    break
            if group not in folded:
                folded.add(group)
                for chunk in read(group):
                    state.extremes(_numpy(chunk.drop_null()))
    return state.to_json()


def _checked(meta: pq.FileMetaData, group: int, position: int, kind: str):
    """A row group's statistics for the column; NotOk where they cannot vouch for it:
    missing, or (a float) showing a value that is not finite (NaN was written as +inf)."""
    stats = meta.row_group(group).column(position).statistics
    if stats is None or not stats.has_null_count:
        raise NotOk("a row group without statistics")
    if kind != "string" and not stats.has_min_max:
        if stats.null_count < meta.row_group(group).num_rows:
            raise NotOk("a row group without statistics")
    elif kind == "float" and not (np.isfinite(stats.min) and np.isfinite(stats.max)):
        raise NotOk("a number that is not finite")
    return stats
