"""Where data registered in place may be read from, and its files listed within a limit.

A location is `s3://bucket/prefix/` (or one object's key), read with the configured
DPPORTAL_S3_* endpoint and credentials, or an absolute local path under one of
DPPORTAL_EXTERNAL_ROOTS. Two steps, so that a request never touches the data:

- `parse_location` (in the request) checks only the syntax, the allow-lists
  (DPPORTAL_EXTERNAL_ROOTS; DPPORTAL_EXTERNAL_S3_ROOTS when set) and that the location
  neither contains nor lies inside dpportal's own storage. It lists nothing
  and reads nothing; a local path is resolved (symlinks, "..") without being required
  to exist.
- `list_files` (in the worker) lists the location, stopping as soon as more than
  DPPORTAL_EXTERNAL_MAX_FILES entries were seen, and checks every file found again (a
  symlink leading out of the roots or into dpportal's storage refuses the location).

dpportal's own storage is MEDIA_ROOT on the local disk, and the whole of
DPPORTAL_S3_PREFIX in DPPORTAL_S3_BUCKET (the whole bucket when the prefix is empty)
on S3, since every location is read with that same endpoint. Locations are compared
after normalisation: resolved local paths, bucket names without case, key segments
percent-decoded, and "", "." and ".." segments refused.

A location that is not allowed, does not exist, cannot be read or holds no Parquet
file gets one message (UNAVAILABLE), so registering cannot probe the host or other
buckets. Local files carry a fingerprint (storage.local_fingerprint: inode, change
time, footer hash) instead of an S3 ETag, so a file swapped after approval no longer
matches the release's frozen spec.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.utils.translation import gettext_noop

from datasets import storage
from datasets.ingest.common import IngestRejected

UNAVAILABLE = gettext_noop(
    "Nothing can be registered at that location: it is not allowed on this server, does "
    "not exist, cannot be read, or holds no Parquet file (*.parquet)."
)


@dataclass(frozen=True)
class Location:
    kind: str  # storage.EXTERNAL_S3 or storage.EXTERNAL_LOCAL
    path: str  # "bucket/key-or-prefix" or a resolved absolute local path


def max_files() -> int:
    return int(settings.DPPORTAL_EXTERNAL_MAX_FILES)


def _unavailable() -> IngestRejected:
    return IngestRejected(UNAVAILABLE)


# --- local paths -------------------------------------------------------------------------


def allowed_roots() -> list[Path]:
    roots = getattr(settings, "DPPORTAL_EXTERNAL_ROOTS", []) or []
    return [Path(r).resolve() for r in roots if str(r).strip()]


def own_local_storage() -> Path:
    """dpportal's own folder on the local disk (every private file lives under it)."""
    return Path(settings.MEDIA_ROOT).resolve()


def paths_overlap(a: Path, b: Path) -> bool:
    """Whether one of two resolved paths contains the other (or they are the same)."""
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def roots_containing_own_storage() -> list[Path]:
    """The allowed roots that contain or lie inside dpportal's own folder (refused)."""
    own = own_local_storage()
    return [root for root in allowed_roots() if paths_overlap(root, own)]


@dataclass(frozen=True)
class LocalRoots:
    """The allowed roots and dpportal's own folder, resolved once (for a whole listing)."""

    allowed: tuple[Path, ...]
    own: Path

    @classmethod
    def from_settings(cls) -> LocalRoots:
        return cls(tuple(allowed_roots()), own_local_storage())

    def allow(self, path: Path) -> bool:
        """A resolved path inside an allowed root, and neither containing nor inside
        dpportal's own folder (checked both ways, whatever the roots say)."""
        if paths_overlap(path, self.own):
            return False
        return any(path.is_relative_to(root) for root in self.allowed)


def _parse_local(text: str) -> Location:
    if not allowed_roots():
        raise IngestRejected(gettext_noop("Registering local paths is turned off on this server."))
    given = Path(text)
    if not given.is_absolute():
        raise IngestRejected(gettext_noop("A local path must be absolute."))
    try:
        resolved = given.resolve(strict=False)  # symlinks and "..", existing or not
    except (OSError, RuntimeError, ValueError):
        raise _unavailable() from None
    if not LocalRoots.from_settings().allow(resolved):
        raise _unavailable()
    return Location(storage.EXTERNAL_LOCAL, str(resolved))


def _local_entries(path: Path, limit: int) -> list[tuple[Path, bool]]:
    """The files at the resolved `path` (itself, or every file below it, symlinks to
    files included; symlinked folders are not entered), each with whether it is a
    symlink; refused once more than `limit` entries (files and folders) were seen."""
    if not path.is_dir():
        return [(path, False)]
    found: list[tuple[Path, bool]] = []
    seen = 0
    pending = [path]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    raise _too_many(limit)
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.name.lower().endswith(".parquet"):
                    found.append((Path(entry.path), entry.is_symlink()))
    return found


def _local_files(path: Path, limit: int) -> list[dict[str, Any]]:
    roots = LocalRoots.from_settings()
    path = path.resolve()
    if not roots.allow(path):
        raise _unavailable()
    files = []
    for candidate, is_link in _local_entries(path, limit):
        # below a resolved folder whose symlinked folders are not entered, only a
        # symlink itself can lead elsewhere
        resolved = candidate.resolve() if is_link else candidate
        if not roots.allow(resolved):
            raise _unavailable()  # a symlink leading out, or into dpportal's folder
        stat = resolved.stat()
        if not S_ISREG(stat.st_mode):
            continue  # a folder, pipe or device named *.parquet is not data
        etag = storage.local_fingerprint(resolved, stat)
        files.append({"path": str(resolved), "size": stat.st_size, "etag": etag})
    return sorted(files, key=lambda f: f["path"])


# --- S3 ----------------------------------------------------------------------------------


def _key_parts(key: str) -> list[str]:
    """The key's segments, percent-decoded; "", "." and ".." segments are refused (a
    trailing slash, marking a prefix, aside)."""
    parts = [unquote(p) for p in key.removesuffix("/").split("/")] if key else []
    if any(p in ("", ".", "..") or "/" in p for p in parts):
        raise IngestRejected(
            gettext_noop("An S3 location reads s3://bucket/prefix/ (no '..', '.' or empty parts).")
        )
    return parts


def own_s3_storage() -> tuple[str, list[str]] | None:
    """dpportal's bucket (lower case) and key prefix segments; None when none is set."""
    bucket = (settings.DPPORTAL_S3_BUCKET or "").strip().lower()
    if not bucket:
        return None
    prefix = settings.DPPORTAL_S3_PREFIX.strip("/")
    return bucket, [p for p in prefix.split("/") if p] if prefix else []


def s3_overlaps_own_storage(bucket: str, parts: list[str]) -> bool:
    """Whether s3://bucket/<parts> contains or lies inside dpportal's own storage."""
    own = own_s3_storage()
    if own is None or bucket.lower() != own[0]:
        return False
    shorter = min(len(parts), len(own[1]))
    return parts[:shorter] == own[1][:shorter]


def s3_roots() -> list[tuple[str, list[str]]]:
    """DPPORTAL_EXTERNAL_S3_ROOTS as (bucket in lower case, key segments); empty when
    unset (any bucket the credentials reach, dpportal's own storage aside). An entry
    that is not s3://bucket/prefix/ raises ValueError (datasets.checks reports it)."""
    roots = []
    for text in getattr(settings, "DPPORTAL_EXTERNAL_S3_ROOTS", []) or []:
        scheme, separator, rest = str(text).strip().partition("://")
        bucket, _, key = rest.partition("/")
        if scheme.lower() != "s3" or not separator or not bucket:
            raise ValueError(f"not an s3://bucket/prefix/ location: {text!r}")
        try:
            parts = _key_parts(key)
        except IngestRejected:
            raise ValueError(f"not an s3://bucket/prefix/ location: {text!r}") from None
        roots.append((bucket.lower(), parts))
    return roots


def s3_roots_overlapping_own_storage() -> list[tuple[str, list[str]]]:
    return [(b, parts) for b, parts in s3_roots() if s3_overlaps_own_storage(b, parts)]


def s3_location_allowed(bucket: str, key: str) -> bool:
    """Neither containing nor inside dpportal's own storage (the key's segments read
    as written and percent-decoded), and inside a DPPORTAL_EXTERNAL_S3_ROOTS entry
    when there are any."""
    parts = _key_parts(key)
    raw = key.removesuffix("/").split("/") if key else []
    if s3_overlaps_own_storage(bucket, parts) or s3_overlaps_own_storage(bucket, raw):
        return False
    try:
        roots = s3_roots()
    except ValueError:
        return False  # a misconfigured allow-list allows nothing (datasets.E003 says why)
    return not roots or any(
        bucket.lower() == root_bucket and parts[: len(root)] == root for root_bucket, root in roots
    )


def _parse_s3(rest: str) -> Location:
    bucket, _, key = rest.partition("/")
    if not bucket or "%" in bucket:
        raise IngestRejected(gettext_noop("An S3 location reads s3://bucket/prefix/."))
    if not s3_location_allowed(bucket, key):
        raise _unavailable()
    return Location(storage.EXTERNAL_S3, f"{bucket}/{key}")


def _s3_files(location: str, limit: int) -> list[dict[str, Any]]:
    """The Parquet objects at "bucket/key" (that object) or "bucket/prefix/" (every one
    below), refused once more than `limit` keys were listed."""
    bucket, _, key = location.partition("/")
    pages = (
        storage.s3_client()
        .get_paginator("list_objects_v2")
        .paginate(Bucket=bucket, Prefix=key, PaginationConfig={"PageSize": min(limit + 1, 1000)})
    )
    files = []
    seen = 0
    for page in pages:
        for item in page.get("Contents", []):
            seen += 1
            if seen > limit:
                raise _too_many(limit)
            name = item["Key"]
            exact = name == key
            inside = key.endswith("/") or not key or name.startswith(key + "/")
            if not (exact or (inside and name.lower().endswith(".parquet"))):
                continue
            if s3_overlaps_own_storage(bucket, name.split("/")) or s3_overlaps_own_storage(
                bucket, [unquote(p) for p in name.split("/")]
            ):
                raise _unavailable()
            etag = str(item.get("ETag", "")).strip('"')
            files.append({"path": f"{bucket}/{name}", "size": int(item["Size"]), "etag": etag})
    return sorted(files, key=lambda f: f["path"])


# --- both --------------------------------------------------------------------------------


def _too_many(limit: int) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "The location holds more than %(limit)s files and folders, the most one dataset "
            "registered in place may list; register a narrower folder or prefix."
        ),
        limit=f"{limit:,}",
    )


def parse_location(text: str) -> Location:
    """The location an owner typed, checked without listing or reading anything;
    IngestRejected with a clear reason otherwise (UNAVAILABLE when not allowed)."""
    text = (text or "").strip()
    if not text:
        raise IngestRejected(
            gettext_noop("Give the location of the Parquet data (s3://bucket/prefix/ or a path).")
        )
    if len(text) > 900:
        raise IngestRejected(gettext_noop("The location is too long."))
    scheme, separator, rest = text.partition("://")
    if separator and scheme.lower() == "s3":
        return _parse_s3(rest)
    if separator:
        raise IngestRejected(
            gettext_noop("Only s3:// locations and local paths can be registered.")
        )
    return _parse_local(text)


def list_files(location: Location) -> list[dict[str, Any]]:
    """The location's Parquet files, sorted, each {"path", "size", "etag"} (run by the
    worker). Everything that makes it unusable, an empty listing included, is
    UNAVAILABLE; more than DPPORTAL_EXTERNAL_MAX_FILES entries is refused by name."""
    limit = max_files()
    try:
        if location.kind == storage.EXTERNAL_S3:
            bucket, _, key = location.path.partition("/")
            if not s3_location_allowed(bucket, key):
                raise _unavailable()
            files = _s3_files(location.path, limit)
        else:
            files = _local_files(Path(location.path), limit)
    except (BotoCoreError, ClientError, OSError, RuntimeError, ValueError):
        raise _unavailable() from None
    if not files:
        raise _unavailable()
    return files
