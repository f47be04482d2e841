"""Sending the datasets app's Celery tasks: the one place that names them.

The services decide *that* an upload must be ingested (after the upload or the
reading's confirmation commits; again from the periodic re-dispatch) and call
this module. The task is sent by its registered NAME (the Celery app's send_task), so
this module imports no task: datasets.tasks imports the services, never the
reverse, and no import cycle needs hiding inside a function. The broker is only
the doorbell: a failed send is logged, never raised, and the periodic
re-dispatch sends it later.
"""

from __future__ import annotations

import logging

from dpportal.celery import app

logger = logging.getLogger(__name__)

#: the name datasets.tasks registers dataset_ingest_task under
INGEST_TASK = "datasets.ingest"


def dataset_ingest_send(*, dataset_id: int) -> bool:
    """Send the ingest task; a broker failure is logged, never raised. Returns whether it went."""
    try:
        # the queue named at call time (settings, or a test's private queue)
        app.send_task(
            INGEST_TASK,
            args=[dataset_id],
            retry=False,
            queue=app.conf.task_default_queue,
            ignore_result=True,  # as the task says: no result, no result subscription here
        )
    except Exception as exc:  # the broker is down or unreachable
        logger.warning(
            "dataset %s: could not send the ingest task (%s); the periodic re-dispatch will "
            "send it",
            dataset_id,
            type(exc).__name__,
        )
        return False
    return True
