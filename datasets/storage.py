"""Where dataset files live: the local disk (the embedded default) or an S3 bucket.

One place decides, from settings (DPPORTAL_STORAGE and the DPPORTAL_S3_* values,
see dpportal/settings.py and the README): every stored dataset file is named by a
relative name such as "datasets/12/data.parquet", and this module turns that name
into a pyarrow filesystem and path. Local names live under MEDIA_ROOT; S3 names
live under DPPORTAL_S3_PREFIX in DPPORTAL_S3_BUCKET.

pyarrow's own S3 filesystem (pyarrow.fs.S3FileSystem) reads and writes Parquet:
an output stream is a multipart upload, so a Parquet file is streamed to the
bucket in parts and appears only when the stream closes. Uploaded source files
that a C library must read from a local path (pyreadstat, openpyxl, gzip, the CSV
dialect sniffer) stay on the local disk under MEDIA_ROOT; only the Parquet goes
through here.

Nothing here reads or logs the data; errors carry the name, never file contents.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

import boto3
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from datasets.ingest.sink import StreamSink
from datasets.private_files import open_private, private_file, private_folder

LOCAL = "local"
S3 = "s3"


class StorageError(Exception):
    """Storage is misconfigured or unreachable (the message names no data)."""


def backend() -> str:
    return getattr(settings, "DPPORTAL_STORAGE", LOCAL) or LOCAL


def is_remote() -> bool:
    return backend() == S3


@lru_cache(maxsize=8)
def _s3(endpoint: str, region: str, key: str, secret: str) -> pafs.S3FileSystem:
    options: dict[str, Any] = {"region": region or "us-east-1"}
    if key:
        options.update(access_key=key, secret_key=secret)
    if endpoint:
        scheme, _, rest = endpoint.partition("://")
        options.update(endpoint_override=rest or scheme, scheme=scheme if rest else "https")
    return pafs.S3FileSystem(**options)


def s3_filesystem() -> pafs.S3FileSystem:
    """The configured S3 filesystem (credentials from settings, else the usual AWS chain)."""
    return _s3(
        settings.DPPORTAL_S3_ENDPOINT_URL,
        settings.DPPORTAL_S3_REGION,
        settings.DPPORTAL_S3_ACCESS_KEY_ID,
        settings.DPPORTAL_S3_SECRET_ACCESS_KEY,
    )


def filesystem_and_path(name: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow (filesystem, path) of a stored relative name."""
    if not name or name.startswith("/") or ".." in Path(name).parts:
        raise StorageError("A stored file name must be relative and stay inside the storage.")
    if is_remote():
        bucket = settings.DPPORTAL_S3_BUCKET
        if not bucket:
            raise StorageError("DPPORTAL_S3_BUCKET is not set.")
        prefix = settings.DPPORTAL_S3_PREFIX.strip("/")
        return s3_filesystem(), "/".join(p for p in (bucket, prefix, name) if p)
    return pafs.LocalFileSystem(), str(Path(settings.MEDIA_ROOT) / name)


def open_parquet(name: str) -> pq.ParquetFile:
    """A stored Parquet file, opened for reading (row groups are fetched as read)."""
    filesystem, path = filesystem_and_path(name)
    return pq.ParquetFile(filesystem.open_input_file(path))


def open_output_stream(name: str):
    """A stream writing the stored file `name` (on S3, a multipart upload; the object
    appears when the stream is closed). Local parent folders are created."""
    filesystem, path = filesystem_and_path(name)
    if not is_remote():
        open_private(Path(path)).close()  # created private; pyarrow truncates, keeps the mode
    return filesystem.open_output_stream(path)


def parquet_sink(name: str) -> StreamSink:
    """An ingest's Parquet streamed straight to the stored name (datasets.ingest.sink):
    on S3 a multipart upload, parts sent as they fill, the object deleted if discarded."""
    return StreamSink(opener=lambda: open_output_stream(name), remover=lambda: delete(name))


def store_local_file(local: Path, name: str) -> None:
    """Copy a finished local file to the stored name (streamed in parts on S3)."""
    filesystem, path = filesystem_and_path(name)
    if not is_remote() and Path(path) == Path(local):
        return
    if not is_remote():
        private_folder(Path(path).parent)
    pafs.copy_files(
        str(local),
        path,
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=filesystem,
    )
    if not is_remote():
        private_file(path)


def exists(name: str) -> bool:
    filesystem, path = filesystem_and_path(name)
    return filesystem.get_file_info(path).type != pafs.FileType.NotFound


def delete(name: str) -> None:
    """Delete one stored file; a missing file is not an error."""
    _delete_prefix(name, exact=True)


def dataset_prefix(dataset_id: int) -> str:
    return f"datasets/{dataset_id}"


def delete_dataset_files(dataset_id: int) -> None:
    """Delete every stored file of a dataset (its Parquet and anything beside it)."""
    _delete_prefix(dataset_prefix(dataset_id) + "/", exact=False)


def _delete_prefix(name: str, *, exact: bool) -> None:
    """On S3, boto3 deletes the keys: pyarrow's delete leaves "directory" marker
    objects behind (it keeps the parent), and a dataset's deletion must leave none."""
    filesystem, path = filesystem_and_path(name.rstrip("/"))
    if not is_remote():
        local = Path(path)
        if exact:
            local.unlink(missing_ok=True)
        elif local.is_dir():
            shutil.rmtree(local, ignore_errors=True)
        return
    bucket, _, key = path.partition("/")
    key = key if exact else key + "/"
    client = s3_client()
    if exact:
        client.delete_object(Bucket=bucket, Key=key)
        return
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


def s3_client():
    """A boto3 S3 client with the configured endpoint and credentials."""
    return boto3.client(
        "s3",
        endpoint_url=settings.DPPORTAL_S3_ENDPOINT_URL or None,
        region_name=settings.DPPORTAL_S3_REGION or None,
        aws_access_key_id=settings.DPPORTAL_S3_ACCESS_KEY_ID or None,
        aws_secret_access_key=settings.DPPORTAL_S3_SECRET_ACCESS_KEY or None,
    )


def listing(name: str) -> list[str]:
    """The stored names under `name` (recursively), for checks and tests."""
    filesystem, path = filesystem_and_path(name)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    base = path[: len(path) - len(name)]
    return sorted(
        info.path[len(base) :] for info in filesystem.get_file_info(selector) if info.is_file
    )


def open_release_data(spec: dict[str, Any]) -> pq.ParquetFile | ExternalParquet:
    """The release's data, from its frozen spec: the one entry point compute uses.

    A dataset registered in place (spec["external"]) is read from its frozen file list.
    """
    if spec.get("external"):
        return ExternalParquet(spec["external"])
    return open_parquet(spec["parquet_file"])


# --- data registered in place (read-only: nothing here writes or deletes there) ---------

EXTERNAL_S3, EXTERNAL_LOCAL = "s3", "local"


def external_filesystem(kind: str) -> pafs.FileSystem:
    """s3: the configured S3 filesystem (bucket/key paths); local: the local disk."""
    return s3_filesystem() if kind == EXTERNAL_S3 else pafs.LocalFileSystem()


#: bytes at a local file's end hashed into its fingerprint (they hold the Parquet footer)
FINGERPRINT_TAIL_BYTES = 8 * 1024


def local_fingerprint(path: Path, stat: os.stat_result) -> str:
    """What changes when a local file is rewritten or swapped, even with its size and
    modification time restored: the inode and change time (set by the kernel only; a
    file's owner cannot set it back) and a hash of the last FINGERPRINT_TAIL_BYTES,
    where the Parquet footer is (which catches a rewrite within one clock tick)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(max(stat.st_size - FINGERPRINT_TAIL_BYTES, 0))
        digest.update(handle.read(FINGERPRINT_TAIL_BYTES))
    return f"{stat.st_ino}-{stat.st_ctime_ns}-{stat.st_mtime_ns}-{digest.hexdigest()[:32]}"


def check_external_unchanged(external: dict[str, Any]) -> None:
    """Refuse (StorageError) when a frozen file is gone or its size changed, or a local
    file's fingerprint (local_fingerprint) differs."""
    if not external.get("files"):
        raise StorageError("The registered dataset's location holds no Parquet file now.")
    filesystem = external_filesystem(external["kind"])
    paths = [f["path"] for f in external["files"]]
    infos = filesystem.get_file_info(paths)
    for info, frozen in zip(infos, external["files"], strict=True):
        if not info.is_file or info.size != frozen["size"]:
            raise StorageError(
                "A file of the registered dataset changed or vanished after the release was "
                "approved; the release is not computed."
            )
    if external["kind"] == EXTERNAL_LOCAL:
        for frozen in external["files"]:
            path = Path(frozen["path"])
            try:
                now = local_fingerprint(path, path.stat())
            except OSError:
                now = ""
            if now != frozen.get("etag"):
                raise StorageError(
                    "A file of the registered dataset was rewritten or replaced after the "
                    "release was approved; the release is not computed."
                )


class ExternalParquet:
    """The frozen files of a registered dataset as one Parquet file for the numpy path:
    row groups numbered across the files in order (only what that path uses)."""

    def __init__(self, external: dict[str, Any]) -> None:
        check_external_unchanged(external)
        filesystem = external_filesystem(external["kind"])
        self.files = [
            pq.ParquetFile(filesystem.open_input_file(f["path"])) for f in external["files"]
        ]
        self.groups = [(f, g) for f in self.files for g in range(f.num_row_groups)]
        self.schema_arrow = self.files[0].schema_arrow

    @property
    def num_row_groups(self) -> int:
        return len(self.groups)

    @property
    def metadata(self) -> ExternalParquet:
        return self

    @property
    def num_rows(self) -> int:
        return sum(f.metadata.num_rows for f in self.files)

    def row_group(self, index: int):
        parquet, group = self.groups[index]
        return parquet.metadata.row_group(group)

    def read_row_group(self, index: int, columns=None, **kwargs):
        parquet, group = self.groups[index]
        return parquet.read_row_group(group, columns=columns, **kwargs)


def check() -> str:
    """Check that the storage is reachable and writable; returns what was found.

    Raises StorageError with a readable reason otherwise.
    """
    probe = ".dpportal-check"
    try:
        with open_output_stream(probe) as stream:
            stream.write(b"ok")
        found = exists(probe)
        delete(probe)
    except (OSError, StorageError, BotoCoreError, ClientError) as exc:
        raise StorageError(f"{describe()}: {type(exc).__name__}: {exc}") from None
    if not found:
        raise StorageError(f"{describe()}: a written probe could not be found again.")
    return f"{describe()}: reachable, writable"


def describe() -> str:
    if is_remote():
        endpoint = settings.DPPORTAL_S3_ENDPOINT_URL or "AWS"
        return f"storage s3 (bucket {settings.DPPORTAL_S3_BUCKET!r} at {endpoint})"
    return f"storage local ({settings.MEDIA_ROOT})"
