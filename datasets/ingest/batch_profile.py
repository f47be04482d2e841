"""The fast CSV conversion's checks and profile, computed in its child as Polars writes.

Loaded by `polars_child` from this file (it imports no project module: the child does
not load Django, and the package's __init__ would). The child hands every batch of
ROW_GROUP_ROWS rows to a `Profiler` on its way to the Parquet writer, so the rows are
profiled while they are in memory, never read back. `Profiler.states` gives each
column's profile state, exactly what datasets.ingest.profile.profile_update would have
kept reading the same rows, or raises NotOk where Polars read the file differently from
pyarrow's reader (datasets.ingest.writer), which then reads it:

- a blank line (a row of nulls to Polars, skipped by pyarrow) or a short row (padded
  with nulls by Polars, refused by pyarrow): either leaves a null in the last column;
  when it has nulls, the separators in the bytes must be exactly those between every
  row's fields plus those inside text values;
- a text value holding a newline (quoted: pyarrow reads without newlines in values),
  a lone carriage return (a line break to pyarrow), a NUL (refused), or a quoted ""
  (null to pyarrow, "" to Polars). Only text can hold them (a number with one does
  not parse and Polars refuses the file), and the profile reads all text anyway;
- a float that is not finite (pyarrow's reader counts it unreadable).

The profile's limits (SUGGEST_MIN_ROWS, TRACK_LIMIT, ...) and the number pattern come
from datasets.ingest.profile and .common through `limits` (`profile_limits` there): one
definition for both readers. What the states hold is private (exact counts of frequent
values, extremes): the child sends them to the worker on its stdout and nowhere else.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# read differently by pyarrow's reader and Polars: a NUL, a line break, a quoted ""
# (null to pyarrow, quoted_strings_can_be_null; "" to Polars)
UNSAFE_TEXT = "[\x00\r\n]|^$"
CHUNK = 1 << 22


class NotOk(Exception):
    """The conversion cannot vouch for the result: the careful path decides."""


def reads_as_finite(text: pa.Array, pattern: str) -> pa.BooleanArray:
    """For each text (no nulls), whether it reads as a finite number: `pattern`, blanks
    around and a leading + allowed. (No Python scalar is converted: pyarrow's first
    conversion looks for pandas, 0.2 s a fresh process need not spend.)"""
    ok = pc.match_substring_regex(text, pattern)
    cleaned = pc.replace_substring_regex(pc.utf8_trim_whitespace(text), r"^\+", "")
    numbers = pc.cast(pc.if_else(ok, cleaned, pa.nulls(len(text), text.type)), pa.float64())
    finite = pc.is_finite(numbers)  # null where not a number: Kleene "and" makes it false
    return pc.and_kleene(finite, pc.is_valid(finite))


class Widen(Exception):
    """A text column parsed as codes (Polars' Categorical) has too many distinct values
    to be tracked: the conversion starts again with it parsed as plain text (the column:
    `Profiler.widen`, which outlives Polars' wrapping of the exception)."""


class Profiler:
    """Every column's state, fed the rows batch by batch in file order.

    `coded`: the text columns Polars parses as codes (a Categorical with the column's
    own categories): their distinct values and uses come from counting the codes, about
    four times cheaper than counting texts, and the rows written are the same."""

    def __init__(
        self,
        names: list[str],
        kinds: list[str],
        separator: str,
        limits: dict,
        coded: frozenset[str] = frozenset(),
    ) -> None:
        self.states = [State(kind, separator, limits) for kind in kinds]
        self.names = names
        self.coded = coded
        self.rows = 0
        self.last_nulls = 0  # nulls in the last column: a blank line or a short row?
        self.failure: NotOk | None = None  # raised by `add` (the writer may wrap it)
        self.widen: str | None = None  # a coded column with too many values (`Widen`)

    def add(self, frame) -> None:
        """One batch of rows: a Polars DataFrame (used through its methods only: the
        worker imports this module without Polars). Text is counted by Polars, then
        checked and profiled value by value; numbers are read as numpy, without a copy."""
        self.rows += frame.height
        self.last_nulls += frame.get_column(frame.columns[-1]).null_count()
        try:
            for name, state, series in zip(
                self.names, self.states, frame.iter_columns(), strict=True
            ):
                present = series.drop_nulls() if series.null_count() else series
                state.cells += len(present)
                if not len(present):
                    continue
                if name in self.coded:
                    state.coded(present)
                    if state.counts is None:
                        self.widen = name
                        raise Widen(name)
                elif state.kind == "string":
                    counted = present.rename("value").value_counts(name="uses")
                    uses = counted.get_column("uses").to_numpy().astype(np.int64)
                    state.strings(counted.get_column("value").to_arrow(), uses)
                else:
                    state.numbers(present.to_numpy())
        except NotOk as exc:
            self.failure = exc
            raise

    def finish(self, sources: list[str], header: bool, separator: str) -> list[dict]:
        """The states (as JSON), or NotOk. `sources`: the file, or its parts in order."""
        if self.rows == 0:
            raise NotOk("no rows")
        if self.last_nulls:
            inside = sum(state.separators for state in self.states)
            check_fields(sources, header, separator, self.rows, len(self.states), inside)
        return [state.to_json() for state in self.states]


def check_fields(
    sources: list[str], header: bool, separator: str, rows: int, columns: int, inside: int
) -> None:
    """Every row has every field: a blank line or a short row has fewer separators.

    The separators in the bytes (of `sources`, one file in parts) must be the header's,
    those between the fields of each row, and `inside` (those within text values)."""
    code = separator.encode()
    found = in_header = 0
    first = True
    for source in sources:
        with open(source, "rb") as handle:
            while chunk := handle.read(CHUNK):
                if first and header:
                    end = chunk.find(b"\n")
                    in_header = (chunk if end < 0 else chunk[:end]).count(code)
                first = False
                found += chunk.count(code)
    if found != in_header + rows * (columns - 1) + inside:
        raise NotOk("a blank line or a row with fewer fields than the header")


class State:
    """What datasets.ingest.profile.ColumnProfile keeps for one column."""

    def __init__(self, kind: str, separator: str, limits: dict) -> None:
        self.kind = kind
        self.k = limits["k"]
        self.limit = limits["track_limit"]
        self.track_bytes = limits["track_bytes"]
        self.mostly_numeric = limits["mostly_numeric"]
        self.pattern = limits["float_pattern"]
        self.separator = separator
        self.counts: dict | None = None if kind == "float" else {}
        self.counted_bytes = 0  # UTF-8 bytes of the keys of `counts`, as the profile keeps
        self.lows: np.ndarray | None = None
        self.highs: np.ndarray | None = None
        self.cells = 0
        self.readable: int | None = 0
        self.separators = 0  # separators inside the text values
        self.book: Codebook | None = None  # a coded column's texts and uses, by code
        self.tally: Tally | None = None  # an integer column's uses by value, while few

    def numbers(self, values: np.ndarray) -> None:
        """A batch of a number column's values (no nulls)."""
        low, high = values.min(), values.max()  # a NaN is both
        if self.kind == "float" and not (np.isfinite(low) and np.isfinite(high)):
            raise NotOk("a number that is not finite")
        self._numbers(values, low, high)
        self.extremes(values, low, high)

    def strings(self, text: pa.Array, uses: np.ndarray) -> None:
        """A batch of a text column: its distinct values and how many cells hold each."""
        _check(text)
        within = _numpy(pc.count_substring(text, self.separator))
        self.separators += int(np.dot(within, uses))
        if self.readable is not None:
            finite = _numpy(pc.cast(reads_as_finite(text, self.pattern), pa.int8())) > 0
            self.readable += int(uses[finite].sum())
            if self.readable < self.mostly_numeric * self.cells:
                self.readable = None
        self._merge(text.to_pylist() if self.counts is not None else [], uses)

    def coded(self, codes) -> None:
        """A batch of a coded text column (a Polars Categorical, no nulls): what `strings`
        does with the batch's distinct texts, each text looked up, checked and measured
        once, when its code first appears; the uses are summed per code."""
        book = self.book = self.book or Codebook()
        uses = np.bincount(codes.to_physical().to_numpy())
        book.grow(len(uses))
        seen = np.flatnonzero(uses)
        new = seen[~book.known[seen]]
        if len(new):
            texts = codes.dtype.categories.to_series().gather(new)
            if texts.null_count():
                raise NotOk("a code without its text")
            text = texts.to_arrow()
            _check(text)
            book.within[new] = _numpy(pc.count_substring(text, self.separator))
            if self.readable is not None:
                book.finite[new] = _numpy(pc.cast(reads_as_finite(text, self.pattern), pa.int8()))
            for code, value in zip(new.tolist(), text.to_pylist(), strict=True):
                book.texts[code] = value
                self.counted_bytes += len(value.encode())
            book.known[new] = True
        self.separators += int(np.dot(book.within[seen], uses[seen]))
        if self.readable is not None:
            self.readable += int(uses[seen][book.finite[seen] > 0].sum())
            if self.readable < self.mostly_numeric * self.cells:
                self.readable = None
        book.uses[: len(uses)] += uses
        if len(book.texts) > self.limit or self.counted_bytes > self.track_bytes:
            self.counts = None

    def _numbers(self, values: np.ndarray, low, high) -> None:
        """Counts an integer column's values while it has few: by value in a `Tally` while
        all it has seen spans fewer than TALLY_SPAN numbers (no text made per batch), else
        by their texts."""
        if self.counts is None:
            return
        low, high = int(low), int(high)
        if self.tally is None and not self.counts and high - low < TALLY_SPAN:
            self.tally = Tally(0 if 0 <= low and high < TALLY_SPAN else low)
        if self.tally is not None:
            fresh = self.tally.add(values, low, high)
            if fresh is not None:
                if self.tally.distinct <= self.limit:
                    self.counted_bytes += sum(len(str(v)) for v in fresh.tolist())
                if self.tally.distinct > self.limit or self.counted_bytes > self.track_bytes:
                    self.counts = self.tally = None
                return
            self.counted_bytes = 0  # counted again as `_merge` takes the tally's keys
            self._merge(*self.tally.items())
            self.tally = None
            if self.counts is None:
                return
        if high - low < COUNT_SPAN:
            low = min(low, 0) if high < COUNT_SPAN else low  # small counts need no shift
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

    def extremes(self, values: np.ndarray, low, high) -> None:
        """The k smallest and largest values so far, repeats included. A batch whose
        smallest value (`low`) is at or above the k-th kept low cannot change the lows
        (nor `high` at or below the k-th kept high the highs): most batches are passed
        over by one comparison each."""
        lows, highs = self.lows, self.highs
        if lows is None or len(lows) < self.k or low < lows.max():
            self.lows = _smallest(values, lows, self.k)
        if highs is None or len(highs) < self.k or high > highs.min():
            self.highs = _largest(values, highs, self.k)

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
        if len(self.counts) > self.limit or self.counted_bytes > self.track_bytes:
            self.counts = None

    def to_json(self) -> dict:
        numbers = self.kind != "string"
        if self.book is not None and self.counts is not None:
            used = np.flatnonzero(self.book.uses).tolist()
            self.counts = {self.book.texts[c]: int(self.book.uses[c]) for c in used}
        if self.tally is not None and self.counts is not None:
            texts, uses = self.tally.items()
            self.counts = dict(zip(texts, uses.tolist(), strict=True))
        return {
            "cells": self.cells,
            "counts": self.counts,
            "lows": sorted(self.lows.tolist()) if numbers and self.lows is not None else [],
            "highs": sorted(self.highs.tolist()) if numbers and self.highs is not None else [],
            "readable": self.readable if self.kind == "string" else 0,
        }


class Codebook:
    """A coded column's facts by code: its text, cells, separators inside, whether it
    reads as a finite number (1) and whether it was seen."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.uses = np.zeros(0, np.int64)
        self.within = np.zeros(0, np.int64)
        self.finite = np.zeros(0, np.int8)
        self.known = np.zeros(0, bool)

    def grow(self, codes: int) -> None:
        """Room for codes below `codes`."""
        extra = codes - len(self.uses)
        if extra > 0:
            self.uses = np.concatenate([self.uses, np.zeros(extra, np.int64)])
            self.within = np.concatenate([self.within, np.zeros(extra, np.int64)])
            self.finite = np.concatenate([self.finite, np.zeros(extra, np.int8)])
            self.known = np.concatenate([self.known, np.zeros(extra, bool)])


#: `State._numbers`: the widest span of integers a column keeps counted by value (a
#: Tally of at most this many counters, 32 KiB a column: bounded whatever the number
#: of columns); a wider column is counted by its values' texts, each batch's by value
#: first while it spans fewer than COUNT_SPAN (one array for the batch, then freed)
TALLY_SPAN = 1 << 12
COUNT_SPAN = 1 << 22


class Tally:
    """An integer column's uses by value: `uses[v - base]`, grown as values come."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.uses = np.zeros(0, np.int64)
        self.distinct = 0

    def add(self, values: np.ndarray, low: int, high: int) -> np.ndarray | None:
        """Counts a batch (its smallest and largest value: `low`, `high`); the values
        seen for the first time, or None (nothing counted) when the values seen would
        span TALLY_SPAN or more."""
        base = min(self.base, low)
        if max(self.base + len(self.uses) - 1, high) - base >= TALLY_SPAN:
            return None
        if base < self.base:
            self.uses = np.concatenate([np.zeros(self.base - base, np.int64), self.uses])
            self.base = base
        uses = np.bincount(values - base if base else values)
        if len(uses) > len(self.uses):
            self.uses = np.concatenate([self.uses, np.zeros(len(uses) - len(self.uses), np.int64)])
        seen = np.flatnonzero(uses)
        fresh = seen[self.uses[seen] == 0]
        self.uses[: len(uses)] += uses
        self.distinct += len(fresh)
        return fresh + base

    def items(self) -> tuple[list[str], np.ndarray]:
        """The values seen, as texts, and their uses."""
        seen = np.flatnonzero(self.uses)
        return [str(v) for v in (seen + self.base).tolist()], self.uses[seen]


def _check(text: pa.Array) -> None:
    """Refuses distinct texts that pyarrow's reader reads otherwise (module docstring)."""
    if pc.any(pc.match_substring_regex(text, UNSAFE_TEXT)).as_py():
        raise NotOk("a text value with a NUL or line break, or a quoted empty one")


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
    if len(values) > SAMPLE_STRIDE * (k + 1):
        values = values[values <= _sampled_bound(values, k)]
    pool = values if kept is None else np.concatenate([kept, values])
    return np.partition(pool, k - 1)[:k] if len(pool) > k else pool


def _largest(values: np.ndarray, kept: np.ndarray | None, k: int) -> np.ndarray:
    """The k largest of `kept` and `values` (with repeats): `_smallest` mirrored, without
    a negated copy of the batch."""
    if kept is not None and len(kept) >= k:
        values = values[values > kept.min()]
        if not len(values):
            return kept
    if len(values) > SAMPLE_STRIDE * (k + 1):
        sample = values[::SAMPLE_STRIDE]
        values = values[values >= np.partition(sample, len(sample) - k)[len(sample) - k]]
    pool = values if kept is None else np.concatenate([kept, values])
    return np.partition(pool, len(pool) - k)[len(pool) - k :] if len(pool) > k else pool


#: `_smallest` first keeps the values at or below the k-th smallest of every
#: SAMPLE_STRIDE-th one: a large batch that mostly enters (the first one, or every
#: one of a sorted column) is partitioned some 60 times cheaper
SAMPLE_STRIDE = 64


def _sampled_bound(values: np.ndarray, k: int):
    """A bound with at least k of `values` at or below it (the k-th smallest of a
    sample of them), so that the k smallest are all at or below it, repeats included."""
    return np.partition(values[::SAMPLE_STRIDE], k - 1)[k - 1]
