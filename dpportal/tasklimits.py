"""The time limits of the Celery tasks, and the words a task stopped by one records.

Each task names the setting that holds its soft limit (seconds). At the soft limit
Celery raises `SoftTimeLimitExceeded` inside the task: the task records on its
dataset or release which limit it reached and is not retried (it would stop at the
same place again). The hard limit, DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS later,
kills the pool process, for a task stuck in native code that never returns to
Python; its message is then redelivered and the ingest's attempt count (or the
release's re-dispatch) ends it.
"""

from __future__ import annotations

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils.translation import gettext_noop

from dpportal import messages

__all__ = ["SoftTimeLimitExceeded", "duration", "soft_limit", "task_limits"]


def soft_limit(setting: str) -> int:
    """The soft limit in seconds held by the setting `setting`."""
    return int(getattr(settings, setting))


def task_limits(setting: str) -> dict[str, int]:
    """The `soft_time_limit` and `time_limit` options of a task whose soft limit is `setting`."""
    soft = soft_limit(setting)
    return {
        "soft_time_limit": soft,
        "time_limit": soft + int(settings.DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS),
    }


def duration(seconds: int) -> messages.Record:
    """`seconds` as words for a sentence: whole hours or minutes when exact, else seconds."""
    if seconds >= 3600 and seconds % 3600 == 0:
        n = seconds // 3600
        return messages.record(
            messages.plural(n, gettext_noop("%(n)s hour"), gettext_noop("%(n)s hours")), n=n
        )
    if seconds >= 60 and seconds % 60 == 0:
        n = seconds // 60
        return messages.record(
            messages.plural(n, gettext_noop("%(n)s minute"), gettext_noop("%(n)s minutes")), n=n
        )
    return messages.record(
        messages.plural(seconds, gettext_noop("%(n)s second"), gettext_noop("%(n)s seconds")),
        n=seconds,
    )
