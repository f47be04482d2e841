"""The file formats beside CSV, and the one place that picks the reader for a file.

`file_format(name, head)` tells the format from the file's name and first bytes;
`ingest_file` unpacks a gzip or single-file zip wrapper (unwrap), then hands a CSV
or TSV (a CSV with tabs) to the CSV ingest and any other format to its reader (excel, parquet,
stats), whose batches the shared writer (batches) turns into the same Parquet
and profiles as the CSV ingest.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    EMPTY_ZIP_MAGIC,
    GZIP_MAGIC,
    ZIP_MAGIC,
    CsvDialect,
    IngestLimits,
    IngestRejected,
    human_size,
)
from datasets.ingest.formats.batches import Widen, write_batches
from datasets.ingest.formats.excel import ExcelReader
from datasets.ingest.formats.parquet import ParquetReader
from datasets.ingest.formats.stats import StatsReader
from datasets.ingest.formats.unwrap import gunzip, unzip_single
from datasets.ingest.formats.widen import unreadable_warnings
from datasets.ingest.reader import PLAIN
from datasets.ingest.removal import remove
from datasets.ingest.sink import LocalSink, ParquetSink
from datasets.ingest.writer import IngestResult, ingest_csv

#: the formats, by extension, with what their first bytes must be (None: text)
MAGIC: dict[str, tuple[bytes, ...] | None] = {
    "csv": None,
    "tsv": None,
    "xlsx": (ZIP_MAGIC,),
    "parquet": (b"PAR1",),
    "dta": (b"<stata_dta>", b"\x71", b"\x72", b"\x73"),
    "sav": (b"$FL2",),
    "zsav": (b"$FL3",),
    "sas7bdat": (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc2\xea\x81\x60",),
    "xpt": (b"HEADER RECORD*******",),
}
WRAPPERS = ("gz", "zip")
ALIASES = {"txt": "csv", "tab": "tsv", "xpt": "xpt", "por": "sav"}
MAX_WIDEN_PASSES = 3
#: the text formats, read by the CSV ingest, with their reading when none was confirmed
TEXT = {"csv": PLAIN, "tsv": dataclasses.replace(PLAIN, delimiter="\t")}


def file_format(name: str) -> tuple[str, str]:
    """(format, wrapper) from a file's name: ('dta', 'gz') for 'survey.dta.gz'.

    Unknown extensions are read as CSV (as every upload was before other formats)."""
    parts = name.lower().rsplit("/", 1)[-1].split(".")
    wrapper = parts.pop() if len(parts) > 1 and parts[-1] in WRAPPERS else ""
    ext = parts[-1] if len(parts) > 1 else "csv"
    ext = ALIASES.get(ext, ext)
    return (ext if ext in MAGIC else "csv"), wrapper


def source_name(upload_name: str, head: bytes) -> str:
    """The name to store an upload under: 'source.<format>[.gz|.zip]'.

    The wrapper is what the bytes say (a gzip named .csv is still gzip), the format
    what the name says inside the wrapper. An unwrapped binary format whose first
    bytes (`head`, 32 of them) are not that format's is refused here, at upload."""
    fmt, wrapper = file_format(upload_name)
    if head.startswith(GZIP_MAGIC):
        return f"source.{fmt}.gz"
    zip_bytes = head.startswith(ZIP_MAGIC) or head.startswith(EMPTY_ZIP_MAGIC)
    if wrapper == "zip" or (zip_bytes and fmt != "xlsx"):
        return f"source.{fmt}.zip"
    _check_head(fmt, head)
    return f"source.{fmt}"


def _check_magic(fmt: str, path: Path) -> None:
    with open(path, "rb") as f:
        _check_head(fmt, f.read(32))


def _check_head(fmt: str, head: bytes) -> None:
    expected = MAGIC[fmt]
    if expected is not None and not any(head.startswith(m) for m in expected):
        raise IngestRejected(
            gettext_noop(
                "The file is named .%(format)s but its contents are not a %(format)s file: check "
                "its extension."
            ),
            format=fmt,
        )


def ingest_file(
    *,
    source: Path,
    destination: Path,
    limits: IngestLimits,
    on_progress: Callable[[float], None] | None = None,
    sheet: str = "",
    dialect: CsvDialect | None = None,
    sink: ParquetSink | None = None,
) -> IngestResult:
    """Ingest an upload of any accepted format (see MAGIC) into `destination`, or into
    `sink` when one is given (e.g. a stream to a bucket; `destination`'s folder then only
    holds the temporary unpacked copy).

    `dialect` (the confirmed read options) applies to a CSV or TSV only (None: UTF-8
    with a header, comma- or tab-separated as the name says); `sheet` to Excel.

    A temporary unpacked copy (gzip or zip) lives next to the destination, named so
    that temporary_parquet_paths finds it after a crash, and is always removed."""
    size = source.stat().st_size
    if size == 0:
        raise IngestRejected(gettext_noop("The file is empty."))
    if size > limits.max_upload_bytes:
        raise IngestRejected(
            gettext_noop("The file is larger than %(size)s."),
            size=human_size(limits.max_upload_bytes),
        )
    fmt, wrapper = file_format(source.name)
    sink = sink or LocalSink(destination)
    if fmt in TEXT and wrapper != "zip":
        return ingest_csv(source=source, destination=destination, limits=limits,
                          on_progress=on_progress, dialect=dialect or TEXT[fmt],
                          sink=sink)  # fmt: skip
    unpacked = destination.with_name(
        f".{destination.name}.{os.getpid()}-{uuid.uuid4().hex}-unpacked.tmp"
    )
    try:
        path = source
        if wrapper == "zip":
            inner = unzip_single(source, unpacked, limits)
            fmt, _ = file_format(inner) if "." in inner else (fmt, "")
            path = unpacked
        elif wrapper == "gz":
            gunzip(source, unpacked, limits)
            path = unpacked
        unpacked_limits = dataclasses.replace(
            limits, max_upload_bytes=limits.max_decompressed_bytes
        )
        if fmt in TEXT:
            return ingest_csv(source=path, destination=destination, limits=unpacked_limits,
                              on_progress=on_progress, dialect=dialect or TEXT[fmt],
                              sink=sink)  # fmt: skip
        _check_magic(fmt, path)
        return _ingest_typed(fmt, path, sink, unpacked_limits, on_progress, sheet)
    finally:
        remove(unpacked)


def _ingest_typed(fmt, path, sink, limits, on_progress, sheet) -> IngestResult:
    if fmt == "xlsx":
        reader = ExcelReader(path, limits, sheet, on_progress)
    elif fmt == "parquet":
        reader = ParquetReader(path, limits)
    else:
        reader = StatsReader(path, limits, fmt)
    try:
        layout = reader.read_layout()
        for _ in range(MAX_WIDEN_PASSES + 1):
            try:
                profiles = write_batches(
                    layout=layout,
                    batches=reader.batches(layout.types),
                    sink=sink,
                    on_progress=on_progress,
                    limits=limits,
                )
                return IngestResult(profiles=profiles, warnings=unreadable_warnings(profiles))
            except Widen as widen:
                layout.types.update(dict.fromkeys(widen.names, "float"))
    finally:
        if hasattr(reader, "close"):
            reader.close()
    raise IngestRejected(
        gettext_noop("The file's numeric columns could not be typed: save it as CSV.")
    )
