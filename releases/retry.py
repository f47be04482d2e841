"""The compute tasks' retry policy: how often, how long between attempts, what is recorded.

A failed attempt is recorded (retry messages, the result backend, a chord's
error, the logs) as `AttemptFailed(<exception type>)`: never the original
exception's text, which could quote data.
"""

from __future__ import annotations

from typing import NoReturn

from django.conf import settings

MAX_RETRIES = 5


class AttemptFailed(Exception):
    """A compute attempt failed; the argument is the original exception's type name only."""


def retry_countdown(retries: int) -> int:
    """Exponential backoff: base * 2**retries seconds (base 2: 2, 4, 8, 16, 32)."""
    return int(getattr(settings, "DPPORTAL_COMPUTE_RETRY_BASE_SECONDS", 2)) * 2**retries


def attempt_failed(exc: BaseException) -> AttemptFailed:
    """The exception to record instead of `exc` (its type, never its text)."""
    return AttemptFailed(type(exc).__name__)


def retry_scrubbed(task, *, exc: BaseException, countdown: int) -> NoReturn:
    """Schedule a retry of `task` recording only AttemptFailed(<type of exc>).

    The Retry is raised `from None`: raised inside the caller's `except` block it
    would otherwise carry `exc` as its context, and Celery stores the formatted
    traceback of the Retry (context included: the original exception's text) in
    the result backend.
    """
    signal = task.retry(countdown=countdown, exc=attempt_failed(exc), throw=False)
    raise signal from None
