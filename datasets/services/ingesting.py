"""The ingest of an uploaded dataset, restartable (its dispatch: ingest_dispatch).

uploaded -> ingesting -> ready (or failed with a reason). The conversion itself is
datasets.ingest; this module claims the dataset, reports progress and a heartbeat,
and records the outcome. No aggregate of the data (not even the row count) is
stored or logged here.

Restarts. The task is acks_late + reject_on_worker_lost: a worker that dies
mid-ingest leaves its message unacknowledged and the broker delivers it again.
The redelivered run finds the dataset `ingesting` and starts over from scratch:
the Parquet is written to a temporary file renamed into place only on success, so
the dead run left at most a stale temporary file, which is removed first.

Exclusion. On PostgreSQL a run holds a session advisory lock on the dataset for
its whole length. Only one process holds it, and a dead worker's lock goes with
its database connection; so a run that gets the lock knows no other run is alive,
and a duplicate delivery that does not get it does nothing. Every run also takes a
new attempt number: progress, failure and success are written only while the
row still carries that number, so a straggler can never overwrite a newer run.
Without PostgreSQL (SQLite in development) a run in `ingesting` is presumed alive
until its heartbeat is older than STALLED_AFTER.

A dataset whose ingest keeps dying (e.g. the worker is killed for memory) fails
after MAX_INGEST_ATTEMPTS starts instead of looping.

The raw upload is deleted once the dataset is ready (committed first, so a retry
never lacks it); the Parquet is written privately (datasets.private_files).
A failed upload keeps its row (status, reason, failed_at) so the owner can read
why, but its files are removed at once; the row goes when the owner dismisses it,
or after DPPORTAL_FAILED_UPLOAD_RETENTION_DAYS (dataset_cleanup_failed, run by beat).

Logs carry ids and exception type names only: parser messages may quote cells.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from datasets import external, storage
from datasets.ingest import (
    CsvDialect,
    IngestLimits,
    IngestRejected,
    temporary_parquet_paths,
)
from datasets.ingest.fast import spare_later
from datasets.ingest.formats import ingest_file
from datasets.ingest.removal import remove
from datasets.models import Column, Dataset
from datasets.private_files import private_folder
from datasets.services.common import dataset_folder
from dpportal import messages
from dpportal.tasklimits import SoftTimeLimitExceeded, duration, soft_limit

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_SECONDS = 0.5
#: the heartbeat is written at least this often while batches keep coming
HEARTBEAT_SECONDS = 5.0
#: an `ingesting` dataset with no heartbeat for this long is presumed abandoned
STALLED_AFTER = timedelta(minutes=2)
#: starts (the first and the restarts) before the dataset is failed
MAX_INGEST_ATTEMPTS = 3
#: how long a run waits for the lock (a just-killed worker's session may linger briefly)
LOCK_WAIT_SECONDS = 5.0
#: first key of the advisory lock ("DSIN"): the second is the dataset's id
LOCK_NAMESPACE = 0x4453494E


def ingest_limits() -> IngestLimits:
    return IngestLimits(
        max_upload_bytes=settings.DPPORTAL_MAX_UPLOAD_BYTES,
        max_decompressed_bytes=settings.DPPORTAL_MAX_DECOMPRESSED_BYTES,
        max_columns=settings.DPPORTAL_MAX_COLUMNS,
        max_decompression_ratio=settings.DPPORTAL_MAX_DECOMPRESSION_RATIO,
        max_row_bytes=settings.DPPORTAL_MAX_ROW_BYTES,
        max_sheet_rows=settings.DPPORTAL_MAX_SHEET_ROWS,
        xlsx_max_cells=settings.DPPORTAL_XLSX_MAX_CELLS,
        xlsx_max_part_bytes=settings.DPPORTAL_XLSX_MAX_PART_BYTES,
        xlsx_max_shared_strings=settings.DPPORTAL_XLSX_MAX_SHARED_STRINGS,
        xlsx_max_shared_strings_bytes=settings.DPPORTAL_XLSX_MAX_SHARED_STRINGS_BYTES,
        max_batch_bytes=settings.DPPORTAL_INGEST_BATCH_BYTES,
        max_page_bytes=settings.DPPORTAL_PARQUET_MAX_PAGE_BYTES,
    )


# --- test hook (read only when a test sets the environment variable) ------------------


def _pause_point() -> None:
    path = os.environ.get("DPPORTAL_TEST_INGEST_PAUSE_FILE")
    if path:
        while os.path.exists(path):
            time.sleep(0.05)


# --- exclusion ---------------------------------------------------------------------------


@contextmanager
def ingest_lock(*, dataset_id: int, wait: float | None = None) -> Iterator[bool | None]:
    """Hold the dataset's ingest lock for the block; yields whether it was acquired.

    A PostgreSQL session advisory lock, tried for up to `wait` seconds (default
    LOCK_WAIT_SECONDS). Released at the end of the block, or by PostgreSQL when the
    holder's connection ends (a killed worker). Other databases have no such lock:
    yields None.
    """
    if connection.vendor != "postgresql":
        yield None
        return
    key = dataset_id % 2**31
    deadline = time.monotonic() + (LOCK_WAIT_SECONDS if wait is None else wait)
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_NAMESPACE, key])
            acquired = bool(cursor.fetchone()[0])
            if acquired or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
    try:
        yield acquired
    finally:
        if acquired:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, key])
            except DatabaseError:  # the connection is gone, and the lock with it
                logger.warning("dataset %s: could not release the ingest lock", dataset_id)


def _claim(*, dataset_id: int, exclusive: bool) -> Dataset | None:
    """uploaded -> ingesting, or restart an abandoned run; None when there is nothing to do.

    `exclusive`: the caller holds the ingest lock, so an `ingesting` dataset has no
    live run. The returned dataset carries the new attempt number.
    """
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        if dataset is None:
            return None
        now = timezone.now()
        if dataset.status == Dataset.Status.INGESTING:
            fresh = dataset.heartbeat_at is not None and dataset.heartbeat_at > now - STALLED_AFTER
            if fresh and not exclusive:
                return None  # presumed alive (no lock to tell)
            if dataset.ingest_attempts >= MAX_INGEST_ATTEMPTS:
                logger.error(
                    "dataset %s: ingest interrupted %s times; failing it",
                    dataset_id,
                    dataset.ingest_attempts,
                )
                reason = messages.record(
                    gettext_noop(
                        "The conversion was interrupted %(count)s times (the worker stopped "
                        "before it finished); the file was not ingested. The file may be too "
                        "large for the server: try a smaller one."
                    ),
                    count=dataset.ingest_attempts,
                )
                _mark_failed(dataset=dataset, reason=[reason])
                return None
            logger.warning(
                "dataset %s: restarting an interrupted ingest (attempt %s)",
                dataset_id,
                dataset.ingest_attempts + 1,
            )
        elif dataset.status != Dataset.Status.UPLOADED:
            return None
        dataset.status = Dataset.Status.INGESTING
        dataset.progress = 0.0
        dataset.heartbeat_at = now
        dataset.ingest_attempts += 1
        dataset.save(update_fields=["status", "progress", "heartbeat_at", "ingest_attempts"])
        return dataset


# --- the ingest --------------------------------------------------------------------------


def dataset_ingest(*, dataset_id: int) -> Dataset | None:
    """Ingest an uploaded dataset: uploaded -> ingesting -> ready, or failed with a reason.

    The same code runs in the Celery task and in-process (seed_demo, bench).
    Idempotent: a ready or failed dataset is left alone; an `ingesting` one is
    restarted from scratch unless another run is alive (see the module's doc).
    Returns the dataset as it is afterwards (None if it does not exist).
    """
    with spare_later(), ingest_lock(dataset_id=dataset_id) as locked:
        if locked is False:
            logger.info("dataset %s: another run is ingesting it", dataset_id)
            return Dataset.objects.filter(pk=dataset_id).first()
        dataset = _claim(dataset_id=dataset_id, exclusive=bool(locked))
        if dataset is None:
            logger.info("dataset %s: nothing to ingest", dataset_id)
            return Dataset.objects.filter(pk=dataset_id).first()
        try:
            return _run(dataset=dataset)
        except SoftTimeLimitExceeded:
            # the task's soft limit: record which limit was reached (the partial Parquet
            # and the raw upload go with the failure); retrying would stop there again
            logger.warning("dataset %s: ingest stopped at its time limit", dataset_id)
            return _fail(
                dataset_id=dataset_id, attempt=dataset.ingest_attempts, reason=time_limit_reason()
            )


def time_limit_reason() -> messages.Message:
    """Why an ingest stopped at DPPORTAL_INGEST_SOFT_TIME_LIMIT, naming the limit."""
    return [
        messages.record(
            gettext_noop(
                "The conversion stopped after %(duration)s, the limit for reading one file; "
                "nothing was stored. Try a smaller file or fewer columns."
            ),
            duration=duration(soft_limit("DPPORTAL_INGEST_SOFT_TIME_LIMIT")),
        )
    ]


def _run(*, dataset: Dataset) -> Dataset | None:
    if dataset.external_kind:
        return _run_external(dataset=dataset)
    dataset_id, attempt = dataset.pk, dataset.ingest_attempts
    destination = dataset_folder(dataset=dataset) / "data.parquet"
    stale = temporary_parquet_paths(destination)
    for path in stale:  # left by a run that died (we hold the lock or the run is stale)
        path.unlink(missing_ok=True)
    if stale:
        logger.info("dataset %s: removed %s stale temporary file(s)", dataset_id, len(stale))
    private_folder(destination.parent)
    upload = Path(settings.MEDIA_ROOT) / dataset.source_file
    started = time.monotonic()
    stored = f"{storage.dataset_prefix(dataset_id)}/{destination.name}"
    # to a bucket the Parquet streams straight to its object (nothing staged on this disk)
    sink = storage.parquet_sink(stored) if storage.is_remote() else None
    try:
        result = ingest_file(
            source=upload,
            sheet=dataset.sheet,
            destination=destination,
            limits=ingest_limits(),
            on_progress=_progress_reporter(dataset_id=dataset_id, attempt=attempt),
            dialect=CsvDialect.from_dict(dataset.read_options) if dataset.read_options else None,
            sink=sink,
        )
    except IngestRejected as exc:
        logger.info("dataset %s rejected", dataset_id)
        return _fail(dataset_id=dataset_id, attempt=attempt, reason=exc.records)
    except SoftTimeLimitExceeded:
        raise  # recorded by dataset_ingest as the time limit, not as a damaged file
    except Exception as exc:
        # Log the place, not the message: parser messages may quote cell values.
        logger.error(
            "dataset %s ingest failed: %s at %s",
            dataset_id,
            type(exc).__name__,
            _where(exc),
        )
        reason = [messages.record(gettext_noop("The file could not be ingested."))]
        return _fail(dataset_id=dataset_id, attempt=attempt, reason=reason)

    try:
        with transaction.atomic():
            dataset = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
            mine = Dataset.Status.INGESTING, attempt
            if dataset is None or (dataset.status, dataset.ingest_attempts) != mine:
                if dataset is None:  # deleted meanwhile
                    destination.unlink(missing_ok=True)
                    storage.delete(stored)
                return dataset
            _create_columns(dataset, result.profiles)
            dataset.status = Dataset.Status.READY
            dataset.progress = 1.0
            dataset.failure_reason, dataset.failure_record = "", []
            dataset.warnings = result.warnings
            dataset.heartbeat_at = timezone.now()
            dataset.parquet_file = stored
            dataset.source_file = ""
            fields = ["status", "progress", "failure_reason", "failure_record", "warnings"]
            fields += ["heartbeat_at", "parquet_file", "source_file"]
            dataset.save(update_fields=fields)
    except Exception:
        destination.unlink(missing_ok=True)
        storage.delete(stored)
        raise
    _remove_upload(dataset_id=dataset_id, upload=upload)
    took = time.monotonic() - started
    logger.info("dataset %s ready in %.1fs (read by %s)", dataset_id, took, result.reader)
    return dataset


def _remove_upload(*, dataset_id: int, upload: Path) -> None:
    """Delete the raw upload once the dataset is committed ready: no later run reads it
    (a redelivered task finds the dataset ready and does nothing), and a failure before
    the commit keeps it for the retry. A failed ingest's files go in _mark_failed. Its
    name goes at once; its space is freed by a thread (datasets.ingest.removal)."""
    if upload == Path(settings.MEDIA_ROOT) or upload.is_dir():
        return  # no upload was named
    try:
        remove(upload)
    except OSError as exc:
        logger.warning(
            "dataset %s: the upload was not removed (%s)", dataset_id, type(exc).__name__
        )


def _run_external(*, dataset: Dataset) -> Dataset | None:
    """Profile Parquet registered in place (datasets.external): nothing is written there."""
    dataset_id, attempt = dataset.pk, dataset.ingest_attempts
    try:
        profiles = external.profile(
            dataset.external_kind,
            dataset.external_location,
            ingest_limits(),
            _progress_reporter(dataset_id=dataset_id, attempt=attempt),
        )
    except IngestRejected as exc:
        logger.info("dataset %s rejected", dataset_id)
        return _fail(dataset_id=dataset_id, attempt=attempt, reason=exc.records)
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        mine = Dataset.Status.INGESTING, attempt
        if dataset is None or (dataset.status, dataset.ingest_attempts) != mine:
            return dataset
        _create_columns(dataset, profiles)
        dataset.status, dataset.progress, dataset.failure_reason = Dataset.Status.READY, 1.0, ""
        dataset.failure_record = []
        dataset.heartbeat_at = timezone.now()
        dataset.save(
            update_fields=["status", "progress", "failure_reason", "failure_record", "heartbeat_at"]
        )
    logger.info("dataset %s (registered in place) profiled", dataset_id)
    return dataset


def _create_columns(dataset: Dataset, profiles) -> None:
    Column.objects.filter(dataset=dataset).delete()  # none, unless a run raced us
    Column.objects.bulk_create(
        Column(
            dataset=dataset,
            name=p.name,
            position=p.position,
            suggested_type=p.suggested_type,
            profile=p.to_dict(),
        )
        for p in profiles
    )


def _progress_reporter(*, dataset_id: int, attempt: int):
    """Writes progress (at most every PROGRESS_INTERVAL_SECONDS) and the heartbeat."""
    last = {"at": 0.0, "value": 0.0}

    def report(fraction: float) -> None:
        now = time.monotonic()
        elapsed = now - last["at"]
        moved = elapsed >= PROGRESS_INTERVAL_SECONDS and fraction > last["value"]
        if moved or elapsed >= HEARTBEAT_SECONDS:
            last.update(at=now, value=max(fraction, last["value"]))
            Dataset.objects.filter(
                pk=dataset_id, status=Dataset.Status.INGESTING, ingest_attempts=attempt
            ).update(progress=min(last["value"], 0.99), heartbeat_at=timezone.now())
            _pause_point()

    return report


def _where(exc: BaseException) -> str:
    """Where an exception was raised: file, line and function of each frame, no text."""
    frames = traceback.extract_tb(exc.__traceback__)
    return " <- ".join(
        f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(frames[-6:])
    )


def _fail(*, dataset_id: int, attempt: int, reason: messages.Message) -> Dataset | None:
    with transaction.atomic():
        dataset = (
            Dataset.objects.select_for_update()
            .filter(pk=dataset_id, status=Dataset.Status.INGESTING, ingest_attempts=attempt)
            .first()
        )
        if dataset is not None:
            _mark_failed(dataset=dataset, reason=reason)
    return Dataset.objects.filter(pk=dataset_id).first()


def _mark_failed(*, dataset: Dataset, reason: messages.Message) -> None:
    """ingesting -> failed, keeping the row and its reason but none of its files.

    The caller holds the row locked. The reason is stored in English and as message
    records, translated for whoever reads it later (a worker's language is nobody's).
    The files go at once: nothing of a refused upload stays on disk (the row is
    dismissed by the owner or cleaned up later).
    """
    dataset.status = Dataset.Status.FAILED
    dataset.failure_reason = messages.english(reason)
    dataset.failure_record = reason
    dataset.failed_at = timezone.now()
    dataset.parquet_file = ""
    dataset.source_file = ""
    dataset.save(
        update_fields=[
            "status",
            "failure_reason",
            "failure_record",
            "failed_at",
            "parquet_file",
            "source_file",
        ]
    )
    shutil.rmtree(dataset_folder(dataset=dataset), ignore_errors=True)
    storage.delete_dataset_files(dataset.pk)
    logger.info("dataset %s failed; its files are removed", dataset.pk)
