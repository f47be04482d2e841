"""An in-process copy of cache entries, bounded in entries and bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict


class LocalCopies:
    """This process's own copies of cache entries, checked (or named) by the version of
    their content (a project's token, a publication): a copy found here is what the
    cache would answer, one round trip sooner. The token itself is always read from the
    cache, so a change shows at once in every process.

    Bounded in entries and bytes (the least recently used go first); a value over an
    eighth of the bytes allowed is not kept, so one large answer cannot empty the rest.
    A put replaces the value kept under its key. Thread-safe. One per use: the public
    pages' entries (budgets.public_version), the early public answers
    (dpportal.public_cache).
    """

    def __init__(self, *, max_entries: int = 128, max_bytes: int = 32 << 20) -> None:
        self._entries: OrderedDict[str, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._max_entries, self._max_bytes = max_entries, max_bytes
        self._lock = threading.Lock()

    def get(self, key: str) -> object | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: str, value: object, *, size: int) -> None:
        """Keep `value` (about `size` bytes) under `key`, in place of any kept before."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self._max_bytes // 8:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
