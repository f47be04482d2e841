"""Parquet registered in place: where it is, whether it may be read, and its schema.

An owner with the datasets.register_external permission names an existing Parquet
file or folder (prefix) instead of uploading: `s3://bucket/prefix/` (read with the
configured DPPORTAL_S3_* endpoint and credentials) or an absolute local path under
one of DPPORTAL_EXTERNAL_ROOTS (empty by default: local registration is off). A
local path is resolved (symlinks and "..") before it is compared with the roots,
and so is every file found in a folder: a symlink leading out is refused.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
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

MAX_FILES = 10_000


@dataclass(frozen=True)
class Location:
    kind: str  # storage.EXTERNAL_S3 or storage.EXTERNAL_LOCAL
    path: str  # "bucket/key-or-prefix" or a resolved absolute local path


def allowed_roots() -> list[Path]:
    roots = getattr(settings, "DPPORTAL_EXTERNAL_ROOTS", []) or []
    return [Path(r).resolve() for r in roots if str(r).strip()]


def _inside_roots(path: Path) -> bool:
    return any(path == root or path.is_relative_to(root) for root in allowed_roots())


def parse_location(text: str) -> Location:
    """The location an owner typed, checked; IngestRejected with a clear reason otherwise."""
    text = (text or "").strip()
    if not text:
        raise IngestRejected(
            gettext_noop("Give the location of the Parquet data (s3://bucket/prefix/ or a path).")
        )
    if len(text) > 900:
        raise IngestRejected(gettext_noop("The location is too long."))
    if text.startswith("s3://"):
        rest = text.removeprefix("s3://")
        bucket, _, key = rest.partition("/")
        if not bucket or ".." in key.split("/"):
            raise IngestRejected(
                gettext_noop("An S3 location reads s3://bucket/prefix/ (no '..').")
            )
        own = "/".join(p for p in (settings.DPPORTAL_S3_PREFIX.strip("/"), "datasets") if p)
        if bucket == settings.DPPORTAL_S3_BUCKET and (key + "/").startswith(own + "/"):
            raise IngestRejected(gettext_noop("That location is dpportal's own storage."))
        return Location(storage.EXTERNAL_S3, f"{bucket}/{key}")
    if "://" in text:
        raise IngestRejected(
            gettext_noop("Only s3:// locations and local paths can be registered.")
        )
    roots = allowed_roots()
    if not roots:
        raise IngestRejected(gettext_noop("Registering local paths is turned off on this server."))
    given = Path(text)
    if not given.is_absolute():
        raise IngestRejected(gettext_noop("A local path must be absolute."))
    try:
        resolved = given.resolve(strict=True)
    except (OSError, RuntimeError):
        raise IngestRejected(gettext_noop("The path does not exist or cannot be read.")) from None
    if not _inside_roots(resolved):
        raise IngestRejected(
            gettext_noop("The path is outside the folders this server allows registering.")
        )
    if resolved.is_relative_to(Path(settings.MEDIA_ROOT).resolve()):
        raise IngestRejected(gettext_noop("That location is dpportal's own storage."))
    return Location(storage.EXTERNAL_LOCAL, str(resolved))


def list_files(location: Location) -> list[dict[str, Any]]:
    """The location's Parquet files, sorted, each {"path", "size", "etag"}; refused if none."""
    if location.kind == storage.EXTERNAL_S3:
        try:
            files = storage.external_listing(location.kind, location.path)
        except (BotoCoreError, ClientError, OSError):
            raise IngestRejected(
                gettext_noop("The S3 location could not be listed (bucket or access).")
            ) from None
    else:
        files = _local_files(Path(location.path))
    if not files:
        raise IngestRejected(
            gettext_noop("No Parquet file (*.parquet) was found at that location.")
        )
    if len(files) > MAX_FILES:
        raise IngestRejected(
            gettext_noop("The location holds more than %(limit)s Parquet files."), limit=MAX_FILES
        )
    return files


def _local_files(path: Path) -> list[dict[str, Any]]:
    candidates = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    files = []
    for candidate in candidates:
        resolved = candidate.resolve()
        if not _inside_roots(resolved):
            raise IngestRejected(
                gettext_noop(
                    "A file in the folder leads outside the folders this server allows registering."
                )
            )
        if resolved.is_file():
            stat = resolved.stat()
            # the modification time stands in for an S3 ETag: a rewritten file no longer
            # matches a spec frozen before
            etag = str(stat.st_mtime_ns)
            files.append({"path": str(resolved), "size": stat.st_size, "etag": etag})
    return files


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
    their sizes and etags as they are now (re-listed when the spec is checked again, so a
    location changed after approval no longer matches)."""
    try:
        if kind == storage.EXTERNAL_S3:
            files = storage.external_listing(kind, location)
        else:
            files = _local_files(Path(location))
    except (BotoCoreError, ClientError, OSError, IngestRejected):
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
