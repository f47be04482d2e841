"""Test hooks of the computation, read only when a test sets the environment variable.

- DPPORTAL_TEST_PAUSE_FILE: a worker waits at the pause point while the file exists.
- DPPORTAL_TEST_FAIL_FILE: the failure point named by the file's first word raises
  once (the file is then deleted), or on every pass when the second word is
  "always" (the file stays).

Neither changes what is computed or drawn; an unset variable costs one lookup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _pause_point() -> None:
    path = os.environ.get("DPPORTAL_TEST_PAUSE_FILE")
    if path:
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
