"""Where an ingest writes its Parquet: a local file renamed into place, or a stream.

An ingest opens its sink once per attempt (`open`: what pyarrow's ParquetWriter writes
to), then either keeps what it wrote (`commit`) or throws it away (`discard`): nothing
half-written is ever kept. On the local disk the Parquet goes to a temporary file next
to its place and is renamed into it (temporary_parquet_paths finds the leftovers of a
killed process). To a bucket it streams straight to its object as a multipart upload:
parts leave as they fill, nothing is staged on the local disk; the object is only
referenced by the dataset once the ingest has committed, and a discarded one is deleted.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from datasets.private_files import private_file


class ParquetSink:
    """The interface: open (once per attempt), then commit or discard."""

    def open(self) -> Any:  # a path or a writable pyarrow stream
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        raise NotImplementedError


class LocalSink(ParquetSink):
    """A Parquet file at `destination`, written under a temporary name and renamed."""

    def __init__(self, destination: Path) -> None:
        self.destination = destination
        self._temporary: Path | None = None

    def open(self) -> str:
        self.discard()
        self._temporary = self.destination.with_name(
            f".{self.destination.name}.{os.getpid()}-{uuid.uuid4().hex}.tmp"
        )
        return str(self._temporary)

    def commit(self) -> None:
        if self._temporary is not None:
            private_file(self._temporary)
            os.replace(self._temporary, self.destination)
            self._temporary = None

    def discard(self) -> None:
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)
            self._temporary = None


class StreamSink(ParquetSink):
    """A Parquet object streamed by `opener` (e.g. an S3 multipart upload), removed by
    `remover` when discarded."""

    def __init__(self, opener: Callable[[], Any], remover: Callable[[], None]) -> None:
        self._opener, self._remover = opener, remover
        self._stream: Any = None

    def open(self) -> Any:
        self.discard()
        self._stream = self._opener()
        return self._stream

    def commit(self) -> None:
        if self._stream is not None:
            self._stream.close()  # completes the upload: the object appears whole
            self._stream = None

    def discard(self) -> None:
        if self._stream is None:
            return
        stream, self._stream = self._stream, None
        try:
            stream.close()  # pyarrow cannot abort a multipart upload: complete, then delete
        finally:
            self._remover()
