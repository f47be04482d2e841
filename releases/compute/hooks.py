"""Test hooks of the computation, read only when a test sets the environment variable.

- DPPORTAL_TEST_PAUSE_FILE: a worker waits at a pause point while the file exists:
  at "aggregated" (every true aggregate in memory, nothing written yet) when the
  file's first word says so, otherwise after the first chunk ("first_chunk").
- DPPORTAL_TEST_FAIL_FILE: the failure point named by the file's first word raises
  once (the file is then deleted), or on every pass when the second word is
  "always" (the file stays). Points: "before_read" (the data opened, no row read,
  the release not yet marked as read), "before_commit", "after_commit".

Neither changes what is computed or drawn; an unset variable costs one lookup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PAUSE_POINTS = ("first_chunk", "aggregated")


def _pause_point(name: str = "first_chunk") -> None:
    path = os.environ.get("DPPORTAL_TEST_PAUSE_FILE")
    if not path:
        return
    try:
        words = Path(path).read_text().split()
    except OSError:
        return  # no file: no pause
    wanted = words[0] if words and words[0] in PAUSE_POINTS else "first_chunk"
    if wanted != name:
        return
    while os.path.exists(path):
        time.sleep(0.05)


def _failure_point(name: str) -> None:
    path = os.environ.get("DPPORTAL_TEST_FAIL_FILE")
    if path and os.path.exists(path):
        try:
            wanted, _, mode = Path(path).read_text().strip().partition(" ")
        except OSError:
            return
        if wanted != name:
            return
        if mode.strip() != "always":
            try:
                os.unlink(path)
            except FileNotFoundError:
                return  # another process fired it first
        raise RuntimeError(f"injected test failure at {name}")
