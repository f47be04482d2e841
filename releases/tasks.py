"""Celery tasks of releases: ids in, one service call, the retry policy.

The database is the record; the broker is only the doorbell. Every task here is
idempotent (see releases.compute), so a message delivered twice, redelivered
after a worker died (acks_late + reject_on_worker_lost), or re-sent by the
periodic re-dispatch does no harm.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from dpportal.errors import ApplicationError
from releases import compute, fanout
from releases.lifecycle import release_dispatch, release_fail
from releases.models import Release
from releases.retry import MAX_RETRIES, retry_countdown, retry_scrubbed

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    name="releases.compute",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
    ignore_result=True,
)
def release_compute_task(self, release_id: int) -> None:
    """Compute one release (in this process, or fanned out to several workers)."""
    try:
        if getattr(settings, "DPPORTAL_COMPUTE_FANOUT", False) and fanout.should_fan_out(
            release_id=release_id
        ):
            outcome = fanout.release_compute_fanout(release_id=release_id)
        else:
            outcome = compute.release_compute(release_id=release_id)
    except compute.SpecMismatch as exc:
        release_fail(release_id=release_id, reason=exc.message)
        return
    except ApplicationError as exc:
        # expected refusals (e.g. the release vanished): nothing to retry
        logger.warning("release %s not computed: %s", release_id, exc.message)
        return
    except Exception as exc:
        _retry_or_fail(self, release_id=release_id, exc=exc)
        return
    logger.info("release %s compute task: %s", release_id, outcome)


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
            release_id=release_id,
            reason=f"The computation failed {task.max_retries + 1} times ({type(exc).__name__}); "
            "the reserved budget was returned.",
        )
    except Exception as fail_exc:
        # raised here it would carry `exc` (and its text) as context into Celery's error
        # log; the release stays computing and the stalled re-dispatch sends it again
        logger.error(
            "release %s: could not record the failure (%s)", release_id, type(fail_exc).__name__
        )


#: queued longer than this -> the compute task is sent again (the broker was down)
REDISPATCH_QUEUED_AFTER = timedelta(seconds=60)
#: computing with no progress for this long -> sent again (the broker lost the message)
REDISPATCH_STALLED_AFTER = timedelta(minutes=30)


@shared_task(name="releases.redispatch_stale", ignore_result=True)
def release_redispatch_stale_task() -> int:
    """Periodic (celery beat): re-send compute tasks for releases left behind."""
    return release_redispatch_stale()


def release_redispatch_stale(
    *,
    queued_after: timedelta = REDISPATCH_QUEUED_AFTER,
    stalled_after: timedelta = REDISPATCH_STALLED_AFTER,
) -> int:
    """Send the compute task again for releases queued (or stalled) too long; count sent."""
    now = timezone.now()
    queued = Release.objects.filter(
        status=Release.Status.QUEUED, dispatched_at__lte=now - queued_after
    ) | Release.objects.filter(status=Release.Status.QUEUED, dispatched_at__isnull=True)
    stalled = Release.objects.filter(
        status=Release.Status.COMPUTING, heartbeat_at__lte=now - stalled_after
    )
    sent = 0
    for release_id in list(queued.values_list("pk", flat=True)) + list(
        stalled.values_list("pk", flat=True)
    ):
        if release_dispatch(release_id=release_id):
            Release.objects.filter(pk=release_id).update(dispatched_at=now)
            sent += 1
    if sent:
        logger.info("re-dispatched %s release(s)", sent)
    return sent
