"""The writer shared by the non-CSV formats: typed batches to Parquet, profiled.

A format reader gives the column names, each column's type (integer, float or
string, as the CSV reader infers them) and an iterator of pyarrow RecordBatches.
Here every batch is converted to the column types (int64, float64, string: the
same schema the CSV ingest writes), checked, profiled and written in row groups of
ROW_GROUP_ROWS rows (fewer when they would hold more than the batch budget,
IngestLimits.max_batch_bytes) through a sink (datasets.ingest.sink) kept only on
success. A text value longer than IngestLimits.max_row_bytes (the limit per row of
a CSV, and per value in every format) refuses the file.

A float column whose sampled values were all whole numbers is read as integer; a
later fractional value raises Widen, and the caller reads the file again with
those columns as float (as the CSV ingest reads again with text columns).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    ARROW_TYPES,
    FLOAT,
    FLOAT_PATTERN,
    INT_PATTERN,
    INTEGER,
    STRING,
    IngestLimits,
    IngestRejected,
    human_size,
)
from datasets.ingest.header import check_header
from datasets.ingest.profile import ColumnProfile, profile_update
from datasets.ingest.sink import ParquetSink

ROW_GROUP_ROWS = 262_144


class Widen(Exception):
    """Integer columns met a fractional value: read again with these columns as float."""

    def __init__(self, names: set[str]) -> None:
        super().__init__(sorted(names))
        self.names = names


@dataclass
class Layout:
    """What a format reader found before reading the rows."""

    names: list[str]
    types: dict[str, str]
    #: per column: [[code, label], ...] from the file's value labels (Stata, SPSS)
    value_labels: dict[str, list[list[str]]] = field(default_factory=dict)
    #: text columns whose numbers are parsed as in a CSV (spreadsheets)
    text_numbers: bool = False


def check_names(names: list[str], limits: IngestLimits) -> list[str]:
    cleaned = [str(name if name is not None else "").strip() for name in names]
    check_header(cleaned, limits)
    return cleaned


def value_too_long(name: str, limits: IngestLimits) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "A value in column '%(name)s' is longer than %(size)s, the limit per value (the "
            "same as per row of a CSV file)."
        ),
        name=name[:100],
        size=human_size(limits.max_row_bytes),
    )


def write_batches(
    *,
    layout: Layout,
    batches: Iterator[tuple[pa.RecordBatch, float]],
    sink: ParquetSink,
    on_progress: Callable[[float], None] | None,
    limits: IngestLimits | None = None,
) -> list[ColumnProfile]:
    """Write (batch, fraction read) pairs through `sink`; returns the profiles.

    With `limits`, text values are held to the per-value limit and rows are written
    once they hold the batch budget."""
    flush_bytes = limits.max_batch_bytes if limits is not None else None
    names, types = layout.names, layout.types
    profiles = [ColumnProfile(n, i, types[n]) for i, n in enumerate(names)]
    for profile in profiles:
        profile.value_labels = layout.value_labels.get(profile.name)
    schema = pa.schema([(n, ARROW_TYPES[types[n]]) for n in names])
    rows = 0
    try:
        with pq.ParquetWriter(sink.open(), schema, compression="snappy") as writer:
            pending: list[pa.RecordBatch] = []
            pending_rows = pending_bytes = 0
            for batch, fraction in batches:
                arrays = _convert_all(batch, profiles, layout.text_numbers, limits)
                del batch
                for array, profile in zip(arrays, profiles, strict=True):
                    profile_update(profile, array)
                converted = pa.RecordBatch.from_arrays(arrays, schema=schema)
                del arrays
                pending.append(converted)
                pending_rows += converted.num_rows
                pending_bytes += converted.nbytes
                rows += converted.num_rows
                full = flush_bytes is not None and pending_bytes >= flush_bytes
                if pending_rows >= ROW_GROUP_ROWS or full:
                    writer.write_table(pa.Table.from_batches(pending, schema), ROW_GROUP_ROWS)
                    pending, pending_rows, pending_bytes = [], 0, 0
                if on_progress is not None:
                    on_progress(fraction)
            if pending_rows:
                writer.write_table(pa.Table.from_batches(pending, schema), ROW_GROUP_ROWS)
        if rows == 0:
            raise IngestRejected(gettext_noop("The file has a header but no data rows."))
        sink.commit()
    finally:
        sink.discard()
    return profiles


def _convert_all(
    batch: pa.RecordBatch,
    profiles: list[ColumnProfile],
    text_numbers: bool,
    limits: IngestLimits | None,
) -> list[pa.Array]:
    """Every column of `batch` in its type; Widen names every integer column of the batch
    that met a fraction, so one more pass widens them all."""
    arrays, widen = [], set()
    for i, profile in enumerate(profiles):
        try:
            arrays.append(_convert(batch.column(i), profile, text_numbers, limits))
        except Widen as exc:
            widen |= exc.names
    if widen:
        raise Widen(widen)
    return arrays


def _convert(
    array: pa.Array, profile: ColumnProfile, text_numbers: bool, limits: IngestLimits | None
) -> pa.Array:
    kind = profile.suggested_type
    target = ARROW_TYPES[kind]
    if limits is not None and _is_text(array.type) and len(array):
        longest = pc.max(pc.binary_length(array)).as_py() or 0
        if longest > limits.max_row_bytes:
            raise value_too_long(profile.name, limits)
    if kind == STRING:
        if not pa.types.is_string(array.type):
            array = pc.cast(array, pa.string())
        empty = pc.equal(array, "")
        if not pc.any(empty).as_py():
            return array  # no copy of a wide column when there is nothing to blank
        return pc.if_else(empty, pa.scalar(None, pa.string()), array)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        if not text_numbers:
            raise IngestRejected(
                gettext_noop("Column '%(name)s' mixes numbers and text."), name=profile.name
            )
        pattern = INT_PATTERN if kind == INTEGER else FLOAT_PATTERN
        ok = pc.fill_null(pc.match_substring_regex(array, pattern), True)
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(array), ""), False)
        profile.unparseable += pc.sum(pc.and_(pc.invert(ok), pc.invert(blank))).as_py() or 0
        cleaned = pc.replace_substring_regex(pc.utf8_trim_whitespace(array), r"^\+", "")
        keep = pc.and_(ok, pc.invert(blank))
        array = pc.cast(pc.if_else(keep, cleaned, pa.scalar(None, pa.string())), target)
    elif kind == INTEGER and pa.types.is_floating(array.type):
        finite = pc.fill_null(pc.is_finite(array), True)
        whole = pc.fill_null(pc.equal(pc.floor(array), array), True)
        if not pc.all(pc.and_(finite, whole)).as_py():
            raise Widen({profile.name})
        array = pc.cast(array, target)
    else:
        try:
            array = pc.cast(array, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise IngestRejected(
                gettext_noop("Column '%(name)s' holds values that are not numbers."),
                name=profile.name,
            )
    if kind == FLOAT:
        finite = pc.is_finite(array)
        bad = pc.sum(pc.invert(finite)).as_py() or 0
        if bad:
            profile.unparseable += bad
            array = pc.if_else(finite, array, pa.scalar(None, target))
    return array


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)
