"""Celery tasks for datasets: ids in, one service call each.

The database is the record; the broker is only the doorbell. The ingest task is
acks_late + reject_on_worker_lost: if its worker dies, the message is delivered
again and the ingest restarts from scratch (see datasets.services.ingesting, which
also keeps two deliveries from running at once).

Logs: ids and exception type names only. An exception raised while reading the
data may quote a cell, and Celery logs the exception it is given to retry with:
so the retry carries IngestRetry (type name and id), never the original.

Time limits (dpportal.tasklimits): each task's soft limit is a named setting. An
ingest stopped by it is failed with a reason naming the limit (inside
dataset_ingest); a person-rows copy stopped by it is simply not made (releases read
the dataset instead) and not retried; the periodic tasks resume on their next run.
"""

from __future__ import annotations

import logging

from celery import shared_task

from datasets.services import (
    dataset_cleanup_awaiting,
    dataset_cleanup_failed,
    dataset_ingest,
    dataset_person_rows_build,
    dataset_redispatch_stale,
)
from dpportal.tasklimits import SoftTimeLimitExceeded, task_limits

logger = logging.getLogger(__name__)

MAX_RETRIES = 3


class IngestRetry(Exception):
    """An ingest attempt failed; its text names the dataset and the exception's type only."""


@shared_task(
    bind=True,
    name="datasets.ingest",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
    ignore_result=True,
    **task_limits("DPPORTAL_INGEST_SOFT_TIME_LIMIT"),
)
def dataset_ingest_task(self, dataset_id: int) -> None:
    """Ingest an uploaded dataset (a no-op for a ready or failed one; restarts a dead run)."""
    try:
        dataset_ingest(dataset_id=dataset_id)
    except Exception as exc:
        # Bad files are recorded as failed inside; what reaches here is the database
        # or the file system failing. Never log the text: its type is enough.
        kind = type(exc).__name__
        logger.warning("dataset %s: ingest attempt failed (%s); retrying", dataset_id, kind)
        if self.request.retries < self.max_retries:
            retry = IngestRetry(f"dataset {dataset_id}: {kind}")
            raise self.retry(countdown=2 ** (self.request.retries + 1), exc=retry) from None
        logger.error(
            "dataset %s: ingest gave up after retries; the re-dispatch will resend it", dataset_id
        )


@shared_task(
    bind=True,
    name="datasets.person_rows",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
    ignore_result=True,
    **task_limits("DPPORTAL_PERSON_ROWS_SOFT_TIME_LIMIT"),
)
def dataset_person_rows_task(self, dataset_id: int) -> None:
    """Make the dataset's person-rows copy (a no-op when a fresh one exists).

    Idempotent (a partial file is never renamed into place), so a redelivery after a
    lost worker is safe. Without the copy releases stay correct, only slower.
    """
    try:
        dataset_person_rows_build(dataset_id=dataset_id)
    except SoftTimeLimitExceeded:
        # the partial copy is never renamed into place (and is removed); a retry would
        # stop at the same place: releases read the dataset itself instead
        logger.warning("dataset %s: person-rows copy stopped at its time limit", dataset_id)
    except Exception as exc:
        kind = type(exc).__name__  # never the text: it may quote the data
        logger.warning("dataset %s: person-rows copy failed (%s)", dataset_id, kind)
        if self.request.retries < self.max_retries:
            retry = IngestRetry(f"dataset {dataset_id}: {kind}")
            raise self.retry(countdown=2 ** (self.request.retries + 1), exc=retry) from None


@shared_task(
    name="datasets.redispatch_stale",
    ignore_result=True,
    **task_limits("DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT"),
)
def dataset_redispatch_stale_task() -> int:
    """Periodic (celery beat): re-send the ingest of datasets left uploaded or stalled."""
    return dataset_redispatch_stale()


@shared_task(
    name="datasets.cleanup_failed",
    ignore_result=True,
    **task_limits("DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT"),
)
def dataset_cleanup_failed_task() -> int:
    """Periodic (celery beat): remove failed uploads past their retention period."""
    return dataset_cleanup_failed()


@shared_task(
    name="datasets.cleanup_awaiting",
    ignore_result=True,
    **task_limits("DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT"),
)
def dataset_cleanup_awaiting_task() -> int:
    """Periodic (celery beat): remove uploads never confirmed within the retention."""
    return dataset_cleanup_awaiting()
