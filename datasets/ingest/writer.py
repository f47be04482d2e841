"""The conversion: the guarded CSV stream to Parquet, in bounded row groups."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    ARROW_TYPES,
    FLOAT,
    FLOAT_PATTERN,
    GZIP_MAGIC,
    INT_PATTERN,
    INTEGER,
    STRING,
    ZIP_MAGIC,
    CsvDialect,
    IngestLimits,
    IngestRejected,
    human_size,
)
from datasets.ingest.decoding import Transcoder
from datasets.ingest.fast import FastConversion, PartFeed, dialect_eligible, eligible, keep_spare
from datasets.ingest.numbers import plain_numbers
from datasets.ingest.profile import ColumnProfile, profile_update
from datasets.ingest.reader import (
    COPY_CHUNK,
    PLAIN,
    SAMPLE_BYTES,
    GuardedStream,
    RaggedRows,
    check_decompressed,
    csv_options,
    inspect_sample,
    plain_copy,
    read_header_and_sample,
)
from datasets.ingest.removal import remove
from datasets.ingest.sink import LocalSink, ParquetSink
from dpportal.messages import Record

ROW_GROUP_ROWS = 262_144


@dataclass(frozen=True)
class IngestResult:
    """Each column's private profile, and warnings about the file that did not refuse it."""

    profiles: list[ColumnProfile]
    warnings: list[Record]  # dpportal.messages records, translated where they are read
    reader: str = "pyarrow"  # which reader stored the rows: "polars" (fast path) or "pyarrow"


class _ConversionFailed(Exception):
    """A numeric column holds a cell that does not parse: read again, tolerantly."""


def ingest_csv(
    *,
    source: Path,
    destination: Path,
    limits: IngestLimits,
    on_progress: Callable[[float], None] | None = None,
    dialect: CsvDialect = PLAIN,
    sink: ParquetSink | None = None,
    fast: bool = True,
) -> IngestResult:
    """Validate `source` (CSV, plain or gzip) and write it to `destination` as Parquet.

    Writes through `sink` (default: a temporary file next to `destination`, renamed into
    place only on success; see datasets.ingest.sink) and keeps the Parquet only on
    success; on any failure it is discarded and IngestRejected (or the unexpected
    error) propagates. A process killed midway leaves its temporary file behind: the
    caller removes it before a restart.
    A gzip upload is first decompressed once without parsing (into a plain copy that
    every later pass reads, or, through another sink, only checked: check_decompressed),
    so a bomb is refused in seconds, before any CSV is parsed or Parquet written.
    `dialect` says how to read the text (encoding, delimiter, quote, decimal mark,
    header): every byte is decoded in its encoding on the way through.
    `fast`: a plain UTF-8 file is first converted by Polars in a child process
    (datasets.ingest.fast), which answers for the result or hands the file back.
    """
    size = source.stat().st_size
    if size == 0:
        raise IngestRejected(gettext_noop("The file is empty."))
    if size > limits.max_upload_bytes:
        raise IngestRejected(
            gettext_noop("The file is larger than %(size)s."),
            size=human_size(limits.max_upload_bytes),
        )
    sink = sink or LocalSink(destination)
    local = fast and isinstance(sink, LocalSink)
    # text the child could read once in UTF-8 is transcoded for it (plain_copy)
    readable = dialect_eligible(replace(dialect, encoding="utf-8"))
    # started first: Polars loads while the upload is decompressed and checked
    child = FastConversion.ready(limits) if local and readable else None
    unpacked = None
    long_line: bool | None = None  # a line over the limit, if the copy saw
    try:
        if local:
            # a gzip upload is decompressed, text in another encoding decoded, once, into
            # a plain UTF-8 copy that every pass reads (a temporary name the caller's
            # clean-up finds: temporary_parquet_paths)
            unpacked = destination.with_name(
                f".{destination.name}.{os.getpid()}-{uuid.uuid4().hex}.csv.tmp"
            )
            if child is not None and _overlaps(source, dialect):
                return _overlapped(source, unpacked, sink, limits, on_progress, dialect, child)
            copied = plain_copy(source, limits, dialect, unpacked, transcode=readable)
            if copied is not None:
                source, (dialect, long_line) = unpacked, copied
            else:
                unpacked = None
        if child is not None and not eligible(source, dialect):
            child.close()
            child = None
        return _ingest(source, sink, limits, on_progress, dialect, child, long_line)
    finally:
        if child is not None:
            child.close()
        if unpacked is not None:
            remove(unpacked)
        if child is not None:
            keep_spare(limits)  # for the next conversion in this process


#: the least size of each part of a copy the child parses while the rest is decoded
PART_BYTES = 8 << 20


def _overlaps(source: Path, dialect: CsvDialect) -> bool:
    """Whether the upload needs a plain copy (gzip, or text to transcode) that the child
    can parse part by part while the rest is written: with a header line (a file without
    one may start with a byte-order mark, which the child is not given)."""
    with open(source, "rb") as handle:
        head = handle.read(4)
    if head == ZIP_MAGIC or not dialect.header:
        return False
    return head[:2] == GZIP_MAGIC or not Transcoder(dialect.encoding).passthrough


def _overlapped(source, unpacked, sink, limits, on_progress, dialect, child) -> IngestResult:
    """The copy (reader.plain_copy) written in parts by another thread while the child
    parses those already written, so that decompressing or decoding (one core) overlaps
    Polars' parse. The same outcome as copying first: the copy's own refusal (a bomb, a
    damaged gzip) comes first; text that does not decode, or anything the child does
    not vouch for, is read by the careful reader as without the overlap (from the
    upload, or from the parts joined into one copy)."""
    outcome: dict = {}
    sample_bytes = max(SAMPLE_BYTES, 2 * limits.max_row_bytes + 2)

    def copy() -> None:
        try:
            outcome["copied"] = plain_copy(
                source, limits, dialect, unpacked, transcode=True,
                parts=feed.put, part_bytes=max(PART_BYTES, 2 * sample_bytes),
            )  # fmt: skip
        except BaseException as exc:  # handed to the ingest's thread
            outcome["error"] = exc
        finally:
            feed.put(None)

    def settled() -> tuple[CsvDialect, bool] | None:
        """The copy's outcome once it is written (raising its refusal); None: undecodable."""
        writer.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["copied"]

    def whole() -> bool:
        writer.join()
        copied = outcome.get("copied")
        return "error" not in outcome and copied is not None and not copied[1]

    feed = PartFeed(whole)
    writer = threading.Thread(target=copy, name="ingest-copy", daemon=True)
    writer.start()
    plain = replace(dialect, encoding="utf-8")
    try:
        first = feed.next(on_progress)
        try:
            if first is None:
                raise _CopyEnded()
            names, sample = read_header_and_sample(first, limits, plain)
            types, warnings = inspect_sample(
                names, sample, dialect=plain, max_row_bytes=limits.max_row_bytes
            )
        except (IngestRejected, _CopyEnded):
            if settled() is None:  # undecodable: refused by the careful reader, in its order
                return _ingest(source, sink, limits, on_progress, dialect, None, None)
            raise
        try:
            profiles = child.run(
                source=first, temporary=sink.open(), names=names, types=types, dialect=plain,
                limits=limits, row_group_rows=ROW_GROUP_ROWS, on_progress=on_progress,
                parts=feed,
            )  # fmt: skip
            copied = settled()
            if copied is None:
                sink.discard()
                return _ingest(source, sink, limits, on_progress, dialect, None, None)
            reader = "polars"
            if profiles is None:
                reader = "pyarrow"
                _join(feed.given, unpacked)
                profiles = _careful(unpacked, sink, names, types, limits, on_progress, copied[0])
            sink.commit()
        finally:
            sink.discard()
        return IngestResult(profiles=profiles, warnings=warnings, reader=reader)
    finally:
        feed.cancel()
        writer.join()
        for part in feed.given:
            remove(part)


class _CopyEnded(Exception):
    """The copy ended before its first part (it raised, or the text does not decode)."""


def _join(parts: list[Path], destination: Path) -> None:
    """The parts of a copy as one file (the careful reader reads one)."""
    with open(destination, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, COPY_CHUNK)


def _ingest(source, sink, limits, on_progress, dialect, child, long_line) -> IngestResult:
    check_decompressed(source, limits)
    names, sample = read_header_and_sample(source, limits, dialect)
    types, warnings = inspect_sample(
        names, sample, dialect=dialect, max_row_bytes=limits.max_row_bytes
    )
    try:
        profiles = None if child is None else child.run(
            source=source, temporary=sink.open(), names=names, types=types,
            dialect=dialect, limits=limits, row_group_rows=ROW_GROUP_ROWS,
            on_progress=on_progress, long_line=long_line,
        )  # fmt: skip
        reader = "pyarrow" if profiles is None else "polars"
        if profiles is None:
            profiles = _careful(source, sink, names, types, limits, on_progress, dialect)
        sink.commit()
    finally:
        sink.discard()
    return IngestResult(profiles=profiles, warnings=warnings, reader=reader)


def _careful(source, sink, names, types, limits, on_progress, dialect) -> list[ColumnProfile]:
    """pyarrow's streaming reader: every check, every encoding and number format."""
    try:
        # grouped numbers ('1.234,5') and decimal commas are read as text and made
        # plain (tolerant path): pyarrow's decimal_point=',' also takes '1.000' as 1.0
        if dialect.thousands or dialect.decimal_comma:
            raise _ConversionFailed()
        return _convert(source, sink.open(), names, types, limits, on_progress, dialect)
    except _ConversionFailed:
        return _convert(
            source, sink.open(), names, types, limits, on_progress, dialect, tolerant=True
        )


def temporary_parquet_paths(destination: Path) -> list[Path]:
    """The temporary files that ingests into `destination` have left (or are writing)."""
    return sorted(destination.parent.glob(f".{destination.name}.*.tmp"))


def _convert(
    source: Path,
    temporary: Any,
    names: list[str],
    types: dict[str, str],
    limits: IngestLimits,
    on_progress: Callable[[float], None] | None,
    dialect: CsvDialect,
    *,
    tolerant: bool = False,
) -> list[ColumnProfile]:
    profiles = [ColumnProfile(n, i, types[n]) for i, n in enumerate(names)]
    read_types = {n: STRING for n in names} if tolerant else types
    ragged = RaggedRows()
    read, parse, convert = csv_options(
        names, read_types, ragged, dialect=dialect, max_row_bytes=limits.max_row_bytes
    )
    schema = pa.schema([(n, ARROW_TYPES[types[n]]) for n in names])
    stream = GuardedStream(source, limits=limits, encoding=dialect.encoding)
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    # Cleaning, profiling and encoding a row group mostly release the GIL: one worker
    # thread does them for row group N while this thread parses the blocks of N + 1;
    # at most one row group is in flight (bounded memory). Row groups are handed over
    # in order to a single worker, so the profiles see the rows in file order.
    in_flight: Future | None = None

    def clean_and_write(raw: pa.Table, writer: pq.ParquetWriter) -> None:
        batches = [
            _clean_batch(batch, profiles, schema, tolerant, dialect) for batch in raw.to_batches()
        ]
        writer.write_table(pa.Table.from_batches(batches, schema), ROW_GROUP_ROWS)

    try:
        with (
            pq.ParquetWriter(temporary, schema, compression="snappy") as writer,
            ThreadPoolExecutor(max_workers=1) as pool,
        ):
            reader = pa_csv.open_csv(stream, read, parse, convert)
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                if on_progress is not None:
                    on_progress(stream.fraction)
                pending.append(batch)
                pending_rows += batch.num_rows
                while pending_rows >= ROW_GROUP_ROWS:
                    table = pa.Table.from_batches(pending, reader.schema)
                    if in_flight is not None:
                        in_flight.result()
                    in_flight = pool.submit(clean_and_write, table.slice(0, ROW_GROUP_ROWS), writer)
                    rest = table.slice(ROW_GROUP_ROWS)
                    pending = rest.to_batches()
                    pending_rows = rest.num_rows
            if in_flight is not None:
                in_flight.result()
            if pending_rows:
                clean_and_write(pa.Table.from_batches(pending, reader.schema), writer)
    except IngestRejected:
        raise
    except (pa.ArrowInvalid, OSError, ValueError) as exc:
        if stream.error is not None:
            raise stream.error
        if ragged.found:
            raise IngestRejected.of(ragged.message())
        if not tolerant and "conversion error" in str(exc):
            raise _ConversionFailed()
        raise IngestRejected(gettext_noop("The file could not be read as CSV."))
    finally:
        stream.close()
    return profiles


def _clean_batch(
    batch: pa.RecordBatch,
    profiles: list[ColumnProfile],
    schema: pa.Schema,
    tolerant: bool,
    dialect: CsvDialect,
) -> pa.RecordBatch:
    arrays = []
    for profile, array in zip(profiles, batch.columns, strict=True):
        if profile.suggested_type in (INTEGER, FLOAT):
            if tolerant and (dialect.decimal_comma or dialect.thousands):
                array = plain_numbers(
                    array, decimal_comma=dialect.decimal_comma, thousands=dialect.thousands
                )
            array = _numeric(array, profile, tolerant)
        profile_update(profile, array)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _numeric(array: pa.Array, profile: ColumnProfile, tolerant: bool) -> pa.Array:
    """The column as int64/float64: unparseable and non-finite cells become nulls."""
    target = ARROW_TYPES[profile.suggested_type]
    if tolerant:
        pattern = INT_PATTERN if profile.suggested_type == INTEGER else FLOAT_PATTERN
        ok = pc.match_substring_regex(array, pattern)
        profile.unparseable += pc.sum(pc.invert(ok)).as_py() or 0  # nulls are not counted
        cleaned = pc.replace_substring_regex(pc.utf8_trim_whitespace(array), r"^\+", "")
        array = pc.cast(pc.if_else(ok, cleaned, pa.scalar(None, pa.string())), target)
    if profile.suggested_type == FLOAT:
        finite = pc.is_finite(array)
        bad = pc.sum(pc.invert(finite)).as_py() or 0
        if bad:
            profile.unparseable += bad
            array = pc.if_else(finite, array, pa.scalar(None, target))
    return array
