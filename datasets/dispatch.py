"""Sending the datasets app's Celery tasks: the one place that names them.

The services decide *that* an upload must be ingested (after the upload or the
reading's confirmation commits; again from the periodic re-dispatch), or that a
dataset's person-rows copy must be made (after its person-level unit is
confirmed), and call this module. A task is sent by its registered NAME (the
Celery app's send_task), so this module imports no task: datasets.tasks imports
the services, never the reverse, and no import cycle needs hiding inside a
function. The broker is only the doorbell: a failed send is logged, never raised
(the periodic re-dispatch sends an ingest later; without the person-rows copy a
release reads the dataset itself).
"""

from __future__ import annotations

import logging

from dpportal.celery import app

logger = logging.getLogger(__name__)

#: the name datasets.tasks registers dataset_ingest_task under
INGEST_TASK = "datasets.ingest"
#: the name datasets.tasks registers dataset_person_rows_task under
PERSON_ROWS_TASK = "datasets.person_rows"


def dataset_ingest_send(*, dataset_id: int) -> bool:
    """Send the ingest task; a broker failure is logged, never raised. Returns whether it went."""
    return _send(INGEST_TASK, "ingest", dataset_id, "the periodic re-dispatch will send it")


def dataset_person_rows_send(*, dataset_id: int) -> bool:
    """Send the task making the person-rows copy; a broker failure is logged, never raised
    (releases then bound persons without the copy: slower, the same result)."""
    return _send(
        PERSON_ROWS_TASK, "person-rows", dataset_id, "releases will read the dataset itself"
    )


def _send(name: str, what: str, dataset_id: int, otherwise: str) -> bool:
    try:
        # the queue named at call time (settings, or a test's private queue)
        app.send_task(
            name,
            args=[dataset_id],
            retry=False,
            queue=app.conf.task_default_queue,
            ignore_result=True,  # as the task says: no result, no result subscription here
        )
    except Exception as exc:  # the broker is down or unreachable
        logger.warning(
            "dataset %s: could not send the %s task (%s); %s",
            dataset_id,
            what,
            type(exc).__name__,
            otherwise,
        )
        return False
    return True
