"""Stata (.dta), SPSS (.sav, .zsav) and SAS (.sas7bdat, .xpt) files, read in chunks.

pyreadstat reads a chunk of rows at a time: as many as fit the batch budget
(IngestLimits.max_batch_bytes) at the row width the file declares (each variable's
storage width; text is held as Python strings, so each text value counts
TEXT_OVERHEAD_BYTES more), at most CHUNK_ROWS. So a file of long compressed strings
is read a few rows at a time and memory stays flat whatever the rows' width. The
values read in all are held to the decoded-size limit
(IngestLimits.max_decompressed_bytes), and each text value to the per-value limit
(see batches.write_batches). Codes are kept
as stored (value labels are not applied to the data); the labels the file declares
become a suggestion in the column's private profile (see profile.py). Text
columns stay text, dates become ISO 8601 text, numbers stay numbers: integer when
the file says so or when the sampled values are all whole numbers (a later
fraction makes the column float, see batches.Widen).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyreadstat
from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    FLOAT,
    INTEGER,
    STRING,
    IngestLimits,
    IngestRejected,
    human_size,
)
from datasets.ingest.formats.batches import Layout, check_names

CHUNK_ROWS = 100_000
#: what a Python string costs beyond its characters (object header, pandas pointer)
TEXT_OVERHEAD_BYTES = 64
#: the width counted for a numeric variable (a float64 in the chunk)
NUMBER_BYTES = 8
SAMPLE_ROWS = 1_000
INTEGER_STORAGE = {"int8", "int16", "int32", "int64"}
MAX_LABELS = 1000

READERS: dict[str, tuple[Callable, str]] = {
    "dta": (pyreadstat.read_dta, "Stata"),
    "sav": (pyreadstat.read_sav, "SPSS"),
    "zsav": (pyreadstat.read_sav, "SPSS"),
    "sas7bdat": (pyreadstat.read_sas7bdat, "SAS"),
    "xpt": (pyreadstat.read_xport, "SAS transport"),
}
ERRORS = (pyreadstat.ReadstatError, pyreadstat.PyreadstatError, UnicodeError, ValueError, OSError)


def _code_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class StatsReader:
    def __init__(self, path: Path, limits: IngestLimits, fmt: str) -> None:
        self.path, self.limits = path, limits
        self.read, self.kind = READERS[fmt]

    def _refused(self) -> IngestRejected:
        return IngestRejected(
            gettext_noop(
                "The file could not be read as a %(kind)s file: it is damaged or truncated."
            ),
            kind=self.kind,
        )

    def read_layout(self) -> Layout:
        try:
            _, declared = self.read(str(self.path), metadataonly=True)
            columns = list(declared.column_names or [])
            if len(columns) > self.limits.max_columns:
                raise IngestRejected(
                    gettext_noop("The file has %(count)s columns; at most %(limit)s are allowed."),
                    count=len(columns),
                    limit=self.limits.max_columns,
                )
            self.chunk_rows = chunk_rows(declared, columns, self.limits)
            rows = min(SAMPLE_ROWS, self.chunk_rows)
            sample, meta = self.read(str(self.path), row_limit=rows)
        except ERRORS:
            raise self._refused()
        names = check_names(list(sample.columns), self.limits)
        if len(sample) == 0:
            raise IngestRejected(gettext_noop("The file has variables but no observations."))
        storage = meta.readstat_variable_types or {}
        table = _arrow(sample)
        types = {}
        for name, column in zip(names, table.columns, strict=True):
            if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
                types[name] = STRING
            elif storage.get(name) in INTEGER_STORAGE or pa.types.is_integer(column.type):
                types[name] = INTEGER
            else:
                values = column.drop_null()
                whole = pc.all(pc.equal(pc.floor(values), values)).as_py() is not False
                types[name] = INTEGER if whole and len(values) else FLOAT
        labels = {}
        for name, mapping in (meta.variable_value_labels or {}).items():
            if name in types and mapping:
                pairs = sorted(mapping.items(), key=lambda item: (str(type(item[0])), item[0]))
                labels[name] = [[_code_text(c), str(t)] for c, t in pairs[:MAX_LABELS]]
        self.total = meta.number_rows or 0
        return Layout(names=names, types=types, value_labels=labels)

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        chunks = pyreadstat.read_file_in_chunks(
            self.read, str(self.path), chunksize=self.chunk_rows
        )
        done = decoded = 0
        while True:
            try:
                chunk, _ = next(chunks)
            except StopIteration:
                return
            except ERRORS:
                raise self._refused()
            done += len(chunk)
            fraction = min(done / self.total, 1.0) if self.total else 0.0
            table = _arrow(chunk)
            del chunk
            decoded += table.nbytes
            if decoded > self.limits.max_decompressed_bytes:
                raise IngestRejected(
                    gettext_noop(
                        "The data is too large once decoded: at most %(size)s of values can "
                        "be read from one upload (the limit on decoded size)."
                    ),
                    size=human_size(self.limits.max_decompressed_bytes),
                )
            for batch in table.to_batches():
                yield batch, fraction


def chunk_rows(meta, names: list[str], limits: IngestLimits) -> int:
    """Rows per chunk: as many as fit the batch budget at the declared row width (the
    type inference's sample is no larger)."""
    widths = meta.variable_storage_width or {}
    kinds = meta.readstat_variable_types or {}
    row = 0
    for name in names:
        if kinds.get(name) == "string":
            row += max(int(widths.get(name) or 0), 1) + TEXT_OVERHEAD_BYTES
        else:
            row += NUMBER_BYTES
    return max(1, min(CHUNK_ROWS, limits.max_batch_bytes // max(row, 1)))


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """The chunk as Arrow: dates and times as ISO text, text as text."""
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise IngestRejected(gettext_noop("A column mixes numbers and text."))
    arrays = []
    for column in table.columns:
        t = column.type
        if pa.types.is_date(t):
            column = pc.strftime(column, "%Y-%m-%d")
        elif pa.types.is_timestamp(t):
            column = pc.strftime(column, "%Y-%m-%d %H:%M:%S")
        elif pa.types.is_time(t):
            column = pc.cast(column, pa.string())
        elif pa.types.is_null(t):
            column = column.cast(pa.string())
        elif pa.types.is_large_string(t) or pa.types.is_string_view(t):
            column = column.cast(pa.string())
        arrays.append(column)
    return pa.table(arrays, names=table.column_names)
