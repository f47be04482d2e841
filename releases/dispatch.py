"""Sending the releases app's Celery tasks: the one place that names them.

The lifecycle decides *that* a release must be computed (on approval, after the
transaction commits; again from the periodic re-dispatch) and calls this
module. The task is sent by its registered NAME (the Celery app's send_task), so this
module imports no task: releases.tasks imports the lifecycle and the
computation, never the reverse, and no import cycle needs hiding inside a
function. The broker is only the doorbell: a failed send is logged, never
raised, and the periodic re-dispatch sends it later.
"""

from __future__ import annotations

import logging

from dpportal.celery import app

logger = logging.getLogger(__name__)

#: the name releases.tasks registers release_compute_task under
COMPUTE_TASK = "releases.compute"


def release_dispatch(*, release_id: int) -> bool:
    """Send the compute task; a broker failure is logged, never raised (beat re-sends)."""
    try:
        # the queue named at call time (settings, or a test's private queue)
        app.send_task(
            COMPUTE_TASK,
            args=[release_id],
            retry=False,
            queue=app.conf.task_default_queue,
            ignore_result=True,  # as the task says: no result, no result subscription here
        )
    except Exception as exc:  # the broker is down or unreachable
        logger.warning(
            "release %s: could not send the compute task (%s); it stays queued and the "
            "periodic re-dispatch will send it",
            release_id,
            type(exc).__name__,
        )
        return False
    return True
