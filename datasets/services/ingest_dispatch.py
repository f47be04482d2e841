"""Sending the ingest task to the workers, and again for datasets left behind."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import DatabaseError
from django.utils import timezone

from datasets import dispatch
from datasets.models import Dataset
from datasets.selectors import dataset_ids_to_redispatch
from datasets.services.ingesting import STALLED_AFTER

logger = logging.getLogger(__name__)

#: an `uploaded` dataset not picked up this long after its upload (or last send) is sent again
REDISPATCH_UPLOADED_AFTER = timedelta(seconds=60)


def dataset_dispatch_ingest(*, dataset_id: int) -> bool:
    """Send the ingest task (datasets.dispatch) and note when; a broker failure is logged,
    never raised (the periodic re-dispatch sends it later). Returns whether it was sent."""
    if not dispatch.dataset_ingest_send(dataset_id=dataset_id):
        return False
    try:
        Dataset.objects.filter(pk=dataset_id).update(dispatched_at=timezone.now())
    except DatabaseError as exc:  # the task went; the note only delays a re-send
        logger.warning("dataset %s: could not note the send (%s)", dataset_id, type(exc).__name__)
    return True


def dataset_redispatch_stale(
    *,
    uploaded_after: timedelta = REDISPATCH_UPLOADED_AFTER,
    stalled_after: timedelta = STALLED_AFTER,
) -> int:
    """Send the ingest task again for datasets left behind (see
    datasets.selectors.dataset_ids_to_redispatch); returns how many were sent."""
    ids = dataset_ids_to_redispatch(
        now=timezone.now(), uploaded_after=uploaded_after, stalled_after=stalled_after
    )
    sent = sum(dataset_dispatch_ingest(dataset_id=dataset_id) for dataset_id in ids)
    if ids:
        logger.info("re-dispatched the ingest of %s of %s dataset(s)", sent, len(ids))
    return sent
