"""Celery tasks of releases: ids in, one service call, the retry policy.

The database is the record; the broker is only the doorbell. A release is
computed by ONE task in ONE worker process (releases.compute): its true
aggregates exist only in that process's memory, never in a message, a result
or a log. The task is idempotent, so a message delivered twice, redelivered
after a worker died (acks_late + reject_on_worker_lost, or the broker's
visibility timeout), or re-sent by the periodic re-dispatch does no harm.

Nothing that reaches Celery carries an exception's text (releases.retry).

A computation stopped by its soft time limit (DPPORTAL_COMPUTE_SOFT_TIME_LIMIT) is
failed with a reason naming the limit and not retried; whether its reservation is
spent is decided by release_fail as for any failure (spent once rows were read).
Its results and their charge commit together, so a stop leaves no partial result.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils.translation import gettext_noop

from dpportal import messages
from dpportal.errors import ApplicationError
from dpportal.tasklimits import SoftTimeLimitExceeded, duration, soft_limit, task_limits
from releases import compute
from releases.lifecycle import release_fail, release_redispatch_stale
from releases.retry import MAX_RETRIES, failure_reason, retry_countdown, retry_scrubbed, scrubbed

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    name="releases.compute",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
    ignore_result=True,
    **task_limits("DPPORTAL_COMPUTE_SOFT_TIME_LIMIT"),
)
def release_compute_task(self, release_id: int) -> None:
    """Compute one release in this worker process."""
    with scrubbed():
        try:
            outcome = compute.release_compute(release_id=release_id)
        except compute.SpecMismatch as exc:
            release_fail(release_id=release_id, reason=exc.records)  # our own sentence
            return
        except SoftTimeLimitExceeded:
            logger.warning("release %s: compute stopped at its time limit", release_id)
            release_fail(release_id=release_id, reason=time_limit_reason())
            return
        except ApplicationError as exc:
            # expected refusals (e.g. the release vanished): nothing to retry
            logger.warning("release %s not computed (%s)", release_id, type(exc).__name__)
            return
        except Exception as exc:
            _retry_or_fail(self, release_id=release_id, exc=exc)
            return
        logger.info("release %s compute task: %s", release_id, outcome)


def time_limit_reason() -> messages.Message:
    """Why a computation stopped at DPPORTAL_COMPUTE_SOFT_TIME_LIMIT, naming the limit."""
    return [
        messages.record(
            gettext_noop(
                "The computation stopped after %(duration)s, the limit for computing one "
                "release; no result was stored."
            ),
            duration=duration(soft_limit("DPPORTAL_COMPUTE_SOFT_TIME_LIMIT")),
        )
    ]


def _retry_or_fail(task, *, release_id: int, exc: Exception) -> None:
    # never log the exception's text: it could quote data; its type is enough
    if task.request.retries < task.max_retries:
        logger.warning(
            "release %s: compute attempt %s failed (%s); retrying",
            release_id,
            task.request.retries + 1,
            type(exc).__name__,
        )
        retry_scrubbed(task, exc=exc, countdown=retry_countdown(task.request.retries))
    logger.error("release %s: compute failed after retries (%s)", release_id, type(exc).__name__)
    try:
        release_fail(
            release_id=release_id, reason=failure_reason(exc, attempts=task.max_retries + 1)
        )
    except Exception as fail_exc:
        # raised here it would carry `exc` (and its text) as context into Celery's error
        # log; the release stays computing and the stalled re-dispatch sends it again
        logger.error(
            "release %s: could not record the failure (%s)", release_id, type(fail_exc).__name__
        )


@shared_task(
    name="releases.redispatch_stale",
    ignore_result=True,
    **task_limits("DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT"),
)
def release_redispatch_stale_task() -> int:
    """Periodic (celery beat): re-send compute tasks for releases left behind."""
    with scrubbed():
        return release_redispatch_stale()
