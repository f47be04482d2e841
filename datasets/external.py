"""Parquet registered in place: its schema, its rows and its profile.

An owner with the datasets.register_external permission names an existing Parquet
file or folder (prefix) instead of uploading: `s3://bucket/prefix/` (read with the
configured DPPORTAL_S3_* endpoint and credentials) or an absolute local path under
one of DPPORTAL_EXTERNAL_ROOTS (empty by default: local registration is off).
Where a location may be, and how its files are listed, is datasets.locations.

The files must share one schema, flat columns of the types compute reads as they
are stored: integers, floating point numbers and text (the Parquet upload's checks
refuse nested and binary columns first), and they are read as an upload is: footers
checked first, then bounded batches, with the decoded-size and per-value limits
counted over all the files (datasets.ingest.formats.parquet). Read-only: nothing
here writes or deletes.
Messages name the location and columns, never cell values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.utils.translation import gettext_noop

from datasets import storage
from datasets.ingest.common import IngestLimits, IngestRejected
from datasets.ingest.formats.batches import Layout, check_names
from datasets.ingest.formats.parquet import (
    Decoded,
    _kind,
    batch_rows,
    bounded_batches,
    check_footer,
    open_bounded,
)
from datasets.ingest.profile import ColumnProfile, profile_update
from datasets.locations import Location, list_files


def _open(
    kind: str, path: str, limits: IngestLimits
) -> tuple[pq.ParquetFile, pa.Schema, Callable[[int, int], bytes]]:
    damaged = gettext_noop("A file at that location is not a readable Parquet file.")
    try:
        source = storage.external_filesystem(kind).open_input_file(path)
    except (pa.ArrowInvalid, OSError):
        raise IngestRejected(damaged) from None
    return open_bounded(source, limits=limits, damaged=damaged)


def read_layout(kind: str, files: list[dict[str, Any]], limits: IngestLimits) -> Layout:
    """The columns and our types of the files' one schema; refused when mixed or not ours,
    or when their footers declare more than the limits allow."""
    parquet, schema, read_at = _open(kind, files[0]["path"], limits)
    declared = check_footer(parquet, read_at, limits)[0]
    for f in files[1:]:
        parquet, other, read_at = _open(kind, f["path"], limits)
        declared += check_footer(parquet, read_at, limits, already=declared)[0]
        if not other.equals(schema, check_metadata=False):
            raise IngestRejected(
                gettext_noop(
                    "The Parquet files at that location do not all have the same columns and types."
                )
            )
    if len(schema) > limits.max_columns:
        raise IngestRejected(
            gettext_noop("The data has %(count)s columns; at most %(limit)s are allowed."),
            count=len(schema),
            limit=limits.max_columns,
        )
    names = check_names(schema.names, limits)
    types = {}
    for name, field in zip(names, schema, strict=True):
        types[name] = _kind(name, field.type)  # refuses nested and binary columns
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)):
            raise IngestRejected(
                gettext_noop(
                    "Column '%(name)s' has type %(type)s: data registered in place is read as "
                    "stored, so only integer, floating point and text columns are accepted. "
                    "Convert it, or upload the file instead."
                ),
                name=name[:100],
                type=str(t),
            )
    return Layout(names=names, types=types)


def batches(
    kind: str, files: list[dict[str, Any]], limits: IngestLimits
) -> Iterator[tuple[pa.RecordBatch, float]]:
    """(batch, fraction of the files read) over every file, in bounded batches; the
    decoded-size limit counts every file's values together."""
    total = max(sum(f["size"] for f in files), 1)
    done = 0
    decoded = Decoded(limits)
    damaged = gettext_noop("A Parquet file is damaged: a row group is unreadable.")
    for f in files:
        parquet, _, read_at = _open(kind, f["path"], limits)
        with parquet:
            _, widest = check_footer(parquet, read_at, limits)
            size = f["size"]
            yield from bounded_batches(
                parquet, decoded, batch_rows(widest, limits),
                lambda share, done=done, size=size: (done + size * share) / total, damaged,
            )  # fmt: skip
        done += f["size"]


def external_spec(kind: str, location: str) -> dict[str, Any]:
    """What a release's frozen spec says of a registered dataset: where, and the files with
    their sizes and etags (S3's, or datasets.locations.fingerprint for local files) as
    they are now (re-listed when the spec is checked again, so a location changed after
    approval no longer matches). No files when the location cannot be listed now."""
    try:
        files = list_files(Location(kind, location))
    except IngestRejected:
        files = []
    return {"kind": kind, "location": location, "files": files}


def profile(
    kind: str, location: str, limits: IngestLimits, on_progress: Callable[[float], None]
) -> list[ColumnProfile]:
    """Each column's private profile over the registered files (run by the ingest task;
    IngestRejected when the data is refused). Nothing is written anywhere."""
    files = list_files(Location(kind, location))
    layout = read_layout(kind, files, limits)
    profiles = [ColumnProfile(n, i, layout.types[n]) for i, n in enumerate(layout.names)]
    rows = 0
    for batch, fraction in batches(kind, files, limits):
        for i, column in enumerate(profiles):
            profile_update(column, batch.column(i))
        rows += batch.num_rows
        on_progress(fraction)
    if rows == 0:
        raise IngestRejected(gettext_noop("The Parquet data has no rows."))
    return profiles
