"""Removing a large file at once, without waiting while the system frees its space.

Unlinking a file of hundreds of megabytes takes the kernel a quarter of a
millisecond per megabyte or so (its blocks and cached pages are freed within the
call: 0.12 s for a 480 MB upload on this project's machines), time the ingest
would otherwise spend after the dataset is ready. `remove` opens the file, unlinks
its name (at once: an open file is not freed) and closes that last descriptor in
a thread, where the freeing happens. The name is gone when `remove` returns, so
nothing can open the file again; a process that dies before the thread closes
the descriptor has it closed by the kernel as it exits, so the space is freed
then. Nothing can be left on disk that an unlink in place would have removed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

#: files smaller than this are freed in place (a thread is not worth starting)
RELEASE_BYTES = 8 << 20


def remove(path: Path) -> None:
    """Unlink `path` (missing is fine), leaving the freeing of a large file to a thread."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # not inherited (PEP 446)
    except FileNotFoundError:
        return
    except OSError:  # not a file we can open (a link, a folder): unlink as it is
        Path(path).unlink(missing_ok=True)
        return
    try:
        large = os.fstat(descriptor).st_size >= RELEASE_BYTES
        Path(path).unlink(missing_ok=True)
    except BaseException:
        os.close(descriptor)
        raise
    if not large:
        os.close(descriptor)
        return
    try:
        threading.Thread(target=os.close, args=(descriptor,), name="release", daemon=True).start()
    except RuntimeError:  # no thread to be had (interpreter shutting down): free it here
        os.close(descriptor)
