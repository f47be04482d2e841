"""The compute task's retry policy: how often, how long between attempts, what is recorded.

Code that touches data raises exceptions whose text can quote it (pyarrow:
"Failed to parse string: '<a cell>' as a scalar of type double"). So nothing
here lets that text out: a failed attempt is recorded (retry messages, the
result backend, Celery's own log lines, our logs) as `AttemptFailed(<type>)`,
an exception escaping a task is replaced by one (`scrubbed`), and the reason
shown to the release's owners is a plain sentence chosen by the exception's
type (`failure_reason`), kept as message records so that each owner reads it in their
own language.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import pyarrow as pa
from celery.exceptions import Ignore, Reject, Retry
from django.conf import settings
from django.db import DatabaseError
from django.utils.translation import gettext_noop

from dpportal import messages

MAX_RETRIES = 5


class AttemptFailed(Exception):
    """A compute attempt failed; the argument is the original exception's type name only."""


def retry_countdown(retries: int) -> int:
    """Exponential backoff: base * 2**retries seconds (base 2: 2, 4, 8, 16, 32)."""
    return int(getattr(settings, "DPPORTAL_COMPUTE_RETRY_BASE_SECONDS", 2)) * 2**retries


def attempt_failed(exc: BaseException) -> AttemptFailed:
    """The exception to record instead of `exc` (its type, never its text)."""
    return AttemptFailed(type(exc).__name__)


def _raise_without_context(error: BaseException) -> NoReturn:
    # `from None` hides the original from formatted tracebacks; clearing __context__
    # as well keeps it from anything that walks the chain (error reporters)
    try:
        raise error from None
    finally:
        error.__context__ = None


def retry_scrubbed(task, *, exc: BaseException, countdown: int) -> NoReturn:
    """Schedule a retry of `task` recording only AttemptFailed(<type of exc>).

    The Retry is raised without `exc` as its context: raised inside the caller's
    `except` block it would otherwise carry it, and Celery stores and logs the
    formatted traceback of the Retry (context included: the original text).
    """
    _raise_without_context(task.retry(countdown=countdown, exc=attempt_failed(exc), throw=False))


@contextmanager
def scrubbed() -> Iterator[None]:
    """Whatever escapes the block reaches Celery as AttemptFailed(<type>), never its text.

    Celery's control flow (Retry, already scrubbed by retry_scrubbed; Ignore;
    Reject) passes through unchanged.
    """
    try:
        yield
    except (Retry, Ignore, Reject):
        raise
    except Exception as exc:
        failure = attempt_failed(exc)
    else:
        return
    _raise_without_context(failure)


def failure_reason(exc: BaseException, *, attempts: int) -> messages.Message:
    """What the release's owners read when the computation gave up: no data, no raw text.

    Two sentences (message records): what went wrong and how often it was tried.
    Whether the reservation was spent or returned is added by the one place that
    decides it (releases.lifecycle.release_fail)."""
    if isinstance(exc, FileNotFoundError):
        what = gettext_noop("The dataset's stored copy is missing.")
    elif isinstance(exc, pa.ArrowException | OSError):
        what = gettext_noop(
            "The dataset's stored copy could not be read: a column's values do not match "
            "its declared type, or the file is damaged."
        )
    elif isinstance(exc, DatabaseError):
        what = gettext_noop("The database could not be reached.")
    elif isinstance(exc, MemoryError):
        what = gettext_noop("The computation ran out of memory.")
    else:
        what = gettext_noop("The computation failed.")
    return [
        messages.record(what),
        messages.record(
            gettext_noop("It was tried %(attempts)s times (%(error)s)."),
            attempts=attempts,
            error=type(exc).__name__,
        ),
    ]
