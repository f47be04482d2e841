"""Logging an exception without its message: the type and where it was raised, nothing else.

An exception's message (and a traceback's, which repeats it) may quote the data a
request touched: a cell, a category, a value that failed to parse. Views and API
views therefore log `exception_summary(exc)`: the exception's type, its cause's
type, and code locations (file:line function): the innermost frame and the
innermost frames of our own code. The
`SummaryFormatter` applies the same rule to any record logged with exc_info (e.g.
Django's own "Internal Server Error" for an exception raised in a middleware).
"""

from __future__ import annotations

import logging
import traceback
from pathlib import PurePath

#: innermost frames named in a summary
FRAMES = 5


def _where(exc: BaseException) -> str:
    """The innermost frame, then the innermost frames of our own code (not libraries')."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    ours = [frame for frame in frames[:-1] if not _is_library(frame.filename)]
    chosen = [frames[-1], *reversed(ours[-(FRAMES - 1) :])]
    return " < ".join(
        f"{'/'.join(PurePath(frame.filename).parts[-2:])}:{frame.lineno} {frame.name}"
        for frame in chosen
    )


def _is_library(filename: str) -> bool:
    return "site-packages" in filename or "dist-packages" in filename or "/lib/python" in filename


def exception_summary(exc: BaseException) -> str:
    """`ValueError at releases/x.py:12 f < ...` (and its cause's type): never the message."""
    text = type(exc).__name__
    where = _where(exc)
    if where:
        text += f" at {where}"
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if cause is not None:
        text += f" (while handling {type(cause).__name__})"
    return text


class SummaryFormatter(logging.Formatter):
    """A formatter that writes an exception's summary where a traceback would go."""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = None  # never reuse a full traceback another formatter cached
        return super().format(record)

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        exc = ei[1]
        return "  " + (exception_summary(exc) if exc is not None else "exception")
