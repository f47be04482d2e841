"""Parquet files: the schema checked against our column types, read in bounded batches.

Integer columns stay integer (unsigned 64-bit only while they fit), floating and
decimal columns become float, text and dictionary-encoded text become text, and
booleans, dates and times become text (true/false, ISO 8601) for the owner to
declare. Nested (list, struct, map) and binary columns are refused: a dataset is a
flat table of numbers and text.

A few KB of Parquet can stand for gigabytes of values: one long text in a
dictionary that every row points to, or millions of rows run-length encoded. So
nothing is read whole. Before any row is read the footer's row groups and column
chunks are checked (`check_footer`): their declared sizes, row and value counts
must be sane, each page (which pyarrow decompresses whole) within
IngestLimits.max_page_bytes (the page headers of a large column chunk are read for
it, datasets.ingest.formats.parquet_pages), and the decoded
size they add up to within the decoded-size limit
(IngestLimits.max_decompressed_bytes). Rows are then read in batches of a number
of rows derived from the batch budget (IngestLimits.max_batch_bytes) and the
row width the footer declares, dictionary-encoded text kept so; each batch's
decoded size is measured from its dictionary and indices before it is decoded,
a value or row longer than IngestLimits.max_row_bytes is refused, and a batch
wider than the budget is decoded in slices (`Decoded`). The same reading serves
Parquet registered in place (datasets.external).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    FLOAT,
    INTEGER,
    STRING,
    IngestLimits,
    IngestRejected,
    human_size,
)
from datasets.ingest.formats.batches import Layout, check_names, value_too_long
from datasets.ingest.formats.parquet_pages import (
    BadHeader,
    longest_dictionary_value,
    page_sizes,
)

BATCH_ROWS = 65_536
#: bytes read from the file at a time (pyarrow's buffered stream, not whole column chunks)
READ_BUFFER_BYTES = 1 << 20
#: what a row of a column is counted as when its width is unknown or smaller
MIN_VALUE_BYTES = 8
#: a dictionary-encoded text column chunk up to this size is read as a dictionary
DICTIONARY_CHUNK_BYTES = 8 << 20


def _kind(name: str, arrow_type: pa.DataType) -> str:
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return INTEGER
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return FLOAT
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return STRING
    if pa.types.is_boolean(t) or pa.types.is_temporal(t):
        return STRING
    if pa.types.is_nested(t):
        raise IngestRejected(
            gettext_noop(
                "Column '%(name)s' is nested (lists, structs or maps): only flat columns of "
                "numbers, text, booleans or dates can be ingested. Flatten it first."
            ),
            name=name[:100],
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        raise IngestRejected(
            gettext_noop(
                "Column '%(name)s' holds binary data: only numbers, text, booleans or dates "
                "can be ingested."
            ),
            name=name[:100],
        )
    raise IngestRejected(
        gettext_noop("Column '%(name)s' has a type that cannot be ingested (%(type)s)."),
        name=name[:100],
        type=str(t),
    )


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def open_bounded(
    source, *, limits: IngestLimits, damaged: str
) -> tuple[pq.ParquetFile, pa.Schema, Callable[[int, int], bytes]]:
    """A ParquetFile that streams its pages through a small buffer and keeps
    dictionary-encoded text so until it is measured (see `_as_dictionary`), the file's
    own Arrow schema (the one read_dictionary does not change) and its read_at(size,
    offset) (for the page headers); IngestRejected(`damaged`) when it cannot be opened.
    `source`: a path or an open pyarrow file."""
    try:
        if isinstance(source, (str, Path)):
            source = pa.OSFile(str(source))
        first = pq.ParquetFile(source)
        schema = first.schema_arrow
        text = [
            f.name
            for i, f in enumerate(schema)
            if _is_text(f.type) and _as_dictionary(first.metadata, i, limits)
        ]
        bounded = pq.ParquetFile(
            source, metadata=first.metadata, read_dictionary=text,
            buffer_size=READ_BUFFER_BYTES, pre_buffer=False,
        )  # fmt: skip
        return bounded, schema, source.read_at
    except (pa.ArrowInvalid, OSError):
        raise IngestRejected(damaged) from None


def _as_dictionary(metadata: pq.FileMetaData, column: int, limits: IngestLimits) -> bool:
    """Whether to read a text column as a dictionary: when each of its column chunks has
    a dictionary page and is small (at most DICTIONARY_CHUNK_BYTES uncompressed). That is
    where a few bytes can stand for gigabytes of text (every row pointing to one long
    value), and a dictionary is measured before it is decoded. A large chunk is mostly
    plain values (a writer falls back to plain pages once its dictionary is full), which
    pyarrow would gather into a dictionary of a whole page at several times its size:
    it is read plain, in batches sized from the chunk's declared bytes."""
    chunks = [metadata.row_group(g).column(column) for g in range(metadata.num_row_groups)]
    return bool(chunks) and all(
        c.has_dictionary_page and c.total_uncompressed_size <= DICTIONARY_CHUNK_BYTES
        for c in chunks
    )


def too_large_decoded(limits: IngestLimits) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "The data is too large once decoded: at most %(size)s of values can be read from "
            "one upload or location (the limit on decoded size)."
        ),
        size=human_size(limits.max_decompressed_bytes),
    )


def check_footer(
    parquet: pq.ParquetFile,
    read_at: Callable[[int, int], bytes],
    limits: IngestLimits,
    already: int = 0,
) -> tuple[int, int]:
    """Check the row groups and column chunks the footer declares, before reading any;
    returns (the decoded bytes they declare at least, the widest row's bytes). Raises
    at once when the bytes are over the decoded-size limit with `already` counted
    before (the other files of a location).

    Each row group's rows and each column chunk's values must be counts the file can
    hold, and the sizes must add up to no more than the decoded-size limit: a
    fixed-width column counts its rows times its width, a text column its
    uncompressed bytes (dictionary-encoded text is measured again as it is read). A
    column chunk larger than a page may be has its page headers read (`_check_pages`),
    and a text column read plain counts, in a row's width, the longest value of its
    dictionary pages (every row might decode to it)."""
    metadata = parquet.metadata
    schema = parquet.schema_arrow
    widths = [_fixed_width(f.type) for f in schema]
    total, widest = already, len(schema) * MIN_VALUE_BYTES
    as_dictionary = [
        _is_text(f.type) and _as_dictionary(metadata, i, limits) for i, f in enumerate(schema)
    ]
    longest = [0] * len(schema)
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        rows = row_group.num_rows
        if rows < 0 or row_group.num_columns != len(schema):
            raise _damaged_footer()
        declared = 0
        for i in range(row_group.num_columns):
            chunk = row_group.column(i)
            if chunk.num_values < 0 or chunk.total_uncompressed_size < 0:
                raise _damaged_footer()
            if chunk.total_uncompressed_size > limits.max_page_bytes:
                _check_pages(chunk, read_at, schema.names[i], limits)
            if widths[i] is None and rows and not as_dictionary[i]:
                # read plain: a row can decode to the dictionary's longest value
                longest[i] = max(longest[i], _longest_in_dictionary(chunk, read_at))
            if widths[i] is not None:
                declared += rows * widths[i]
            else:
                declared += max(chunk.total_uncompressed_size, rows * MIN_VALUE_BYTES)
            if declared + total > limits.max_decompressed_bytes:
                raise too_large_decoded(limits)
        total += declared
        if rows:
            widest = max(widest, -(-declared // rows) + sum(longest))
    return total - already, widest


def _longest_in_dictionary(chunk, read_at) -> int:
    """The longest value of a text column chunk's dictionary page (0 without one)."""
    if not chunk.has_dictionary_page:
        return 0
    starts = [chunk.data_page_offset]
    if chunk.dictionary_page_offset:
        starts.append(chunk.dictionary_page_offset)
    try:
        return longest_dictionary_value(
            read_at, min(starts), chunk.total_compressed_size, chunk.compression
        )
    except (BadHeader, OSError, pa.ArrowInvalid):
        raise _damaged_footer() from None


def _check_pages(chunk, read_at, name: str, limits: IngestLimits) -> None:
    """Refuse a column chunk with a page over IngestLimits.max_page_bytes uncompressed
    (pyarrow decompresses a page whole), reading only the pages' headers."""
    starts = [chunk.data_page_offset]
    if chunk.has_dictionary_page and chunk.dictionary_page_offset:
        starts.append(chunk.dictionary_page_offset)
    try:
        for size in page_sizes(read_at, min(starts), chunk.total_compressed_size):
            if size > limits.max_page_bytes:
                raise IngestRejected(
                    gettext_noop(
                        "A page of column '%(name)s' of the Parquet file holds %(size)s "
                        "uncompressed; at most %(limit)s per page can be read. Write the file "
                        "with smaller pages or row groups."
                    ),
                    name=name[:100],
                    size=human_size(size),
                    limit=human_size(limits.max_page_bytes),
                )
    except (BadHeader, OSError, pa.ArrowInvalid):
        raise _damaged_footer() from None


def _fixed_width(t: pa.DataType) -> int | None:
    """The bytes one value of a fixed-width column takes in memory; None for text."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if _is_text(t) or pa.types.is_null(t):
        return None
    try:
        return max(t.bit_width // 8, MIN_VALUE_BYTES)
    except ValueError:
        return MIN_VALUE_BYTES


def _damaged_footer() -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "The Parquet file is damaged: its footer or page headers declare impossible sizes."
        )
    )


def batch_rows(row_bytes: int, limits: IngestLimits) -> int:
    """Rows per batch: as many as fit the batch budget at `row_bytes` a row."""
    return max(1, min(BATCH_ROWS, limits.max_batch_bytes // max(row_bytes, 1)))


class Decoded:
    """Decoded bytes so far, across every file of an upload or location, against the
    decoded-size limit; and the slicing of a batch into pieces within the batch budget."""

    def __init__(self, limits: IngestLimits) -> None:
        self.limits = limits
        self.bytes = 0

    def pieces(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """`batch` decoded and flattened, in slices of at most the batch budget each;
        refused when a value or a row is over the per-row limit, or the total over the
        decoded-size limit, before anything of it is decoded."""
        if batch.num_rows == 0:
            return
        row_bytes = np.zeros(batch.num_rows, dtype=np.int64)
        for name, array in zip(batch.schema.names, batch.columns, strict=True):
            lengths = _text_lengths(array)
            if lengths is None:
                row_bytes += _fixed_width(array.type) or MIN_VALUE_BYTES
                continue
            if int(lengths.max()) > self.limits.max_row_bytes:
                raise value_too_long(name, self.limits)
            row_bytes += lengths
        if int(row_bytes.max()) > self.limits.max_row_bytes:
            raise row_too_long(self.limits)
        total = int(row_bytes.sum())
        if self.bytes + total > self.limits.max_decompressed_bytes:
            raise too_large_decoded(self.limits)
        self.bytes += total
        if total <= self.limits.max_batch_bytes:
            yield _flat(batch)
            return
        ends = np.cumsum(row_bytes)
        start = 0
        while start < batch.num_rows:
            before = ends[start - 1] if start else 0
            stop = int(ends.searchsorted(before + self.limits.max_batch_bytes, side="right"))
            stop = max(stop, start + 1)
            yield _flat(batch.slice(start, stop - start))
            start = stop


def row_too_long(limits: IngestLimits) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "A row holds more than %(size)s of values, the limit per row (and per value)."
        ),
        size=human_size(limits.max_row_bytes),
    )


def _text_lengths(array: pa.Array) -> np.ndarray | None:
    """Each row's text bytes (0 for a null), read from the dictionary and the indices
    for a dictionary-encoded column (nothing is decoded); None for a fixed-width column."""
    if not _is_text(array.type):
        return None
    if pa.types.is_dictionary(array.type):
        sizes = pc.fill_null(pc.binary_length(array.dictionary), 0).cast(pa.int64())
        lengths = pc.fill_null(sizes.take(array.indices), 0)
    else:
        lengths = pc.fill_null(pc.binary_length(array), 0).cast(pa.int64())
    return lengths.to_numpy(zero_copy_only=False)


class ParquetReader:
    def __init__(self, path: Path, limits: IngestLimits) -> None:
        self.path, self.limits = path, limits

    def _open(self) -> tuple[pq.ParquetFile, pa.Schema, Callable[[int, int], bytes]]:
        return open_bounded(
            self.path,
            limits=self.limits,
            damaged=gettext_noop("The file is not a readable Parquet file."),
        )

    def read_layout(self) -> Layout:
        parquet, schema, read_at = self._open()
        with parquet:
            if len(schema) > self.limits.max_columns:
                raise IngestRejected(
                    gettext_noop("The file has %(count)s columns; at most %(limit)s are allowed."),
                    count=len(schema),
                    limit=self.limits.max_columns,
                )
            names = check_names(schema.names, self.limits)
            types = {name: _kind(name, f.type) for name, f in zip(names, schema, strict=True)}
            check_footer(parquet, read_at, self.limits)
        return Layout(names=names, types=types)

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        decoded = Decoded(self.limits)
        parquet, _, read_at = self._open()
        with parquet:
            _, widest = check_footer(parquet, read_at, self.limits)
            yield from bounded_batches(
                parquet, decoded, batch_rows(widest, self.limits),
                lambda done: done, gettext_noop(
                    "The Parquet file is damaged: a row group is unreadable."
                ),
            )  # fmt: skip


def bounded_batches(
    parquet: pq.ParquetFile, decoded: Decoded, rows: int, fraction, damaged: str
) -> Iterator[tuple[pa.RecordBatch, float]]:
    """(flat batch, fraction(share of this file read)) over `parquet`, `rows` rows a
    read, each decoded within the budgets of `decoded`."""
    total = max(parquet.metadata.num_rows, 1)
    done = 0
    try:
        for batch in parquet.iter_batches(batch_size=rows, use_threads=False):
            done += batch.num_rows
            for piece in decoded.pieces(batch):
                yield piece, fraction(min(done / total, 1.0))
    except (pa.ArrowInvalid, OSError):
        raise IngestRejected(damaged) from None


def _flat(batch: pa.RecordBatch) -> pa.RecordBatch:
    arrays = []
    for array in batch.columns:
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        if pa.types.is_boolean(array.type):
            array = pc.if_else(array, "true", "false")
        elif pa.types.is_temporal(array.type) and not pa.types.is_date(array.type):
            array = pc.cast(array, pa.string())
        elif pa.types.is_date(array.type):
            array = pc.strftime(array, "%Y-%m-%d")
        elif pa.types.is_large_string(array.type):
            array = array.cast(pa.string())
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
