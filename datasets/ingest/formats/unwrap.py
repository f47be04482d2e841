"""Gzip and single-file zip wrappers: the data file inside, unpacked within the limits.

A wrapped upload is unpacked once into a temporary file next to the Parquet (the
caller removes it), counting bytes as they come: a member that declares or
produces more than `limits.decompressed_limit(size on disk)` is refused at once
(the zip-bomb guard), as is a zip holding anything but exactly one file.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    IngestLimits,
    IngestRejected,
    single_zip_member,
)

COPY_CHUNK = 1 << 20


def unzip_single(source: Path, target: Path, limits: IngestLimits) -> str:
    """Unpack the one file of a zip archive into `target`; returns its name."""
    size = source.stat().st_size
    allowed = limits.decompressed_limit(size)
    try:
        with zipfile.ZipFile(source) as archive:
            info = single_zip_member(archive, allowed, limits)
            with archive.open(info) as stream:
                _copy_limited(stream, target, allowed, limits)
            return info.filename
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError):
        raise IngestRejected(
            gettext_noop("The zip archive is damaged or uses an unsupported compression.")
        )


def gunzip(source: Path, target: Path, limits: IngestLimits) -> None:
    """Decompress a gzip file into `target`, refusing it past the decompression limits."""
    allowed = limits.decompressed_limit(source.stat().st_size)
    try:
        with gzip.open(source, "rb") as stream:
            _copy_limited(stream, target, allowed, limits)
    except (OSError, EOFError, zlib.error):
        raise IngestRejected(
            gettext_noop("The file looks compressed (gzip) but could not be decompressed.")
        )


def _copy_limited(stream: BinaryIO, target: Path, allowed: int, limits: IngestLimits) -> None:
    written = 0
    with open(target, "wb") as out:
        while chunk := stream.read(COPY_CHUNK):
            written += len(chunk)
            if written > allowed:
                raise IngestRejected.of(limits.decompressed_message())
            out.write(chunk)
    if written == 0:
        raise IngestRejected(gettext_noop("The file is empty."))
