"""The fast path of a CSV ingest: Polars parses and writes, in a child process.

pyarrow's streaming reader with our profile runs at about a third of Polars' speed
(bench/ingest.py). For a plain UTF-8 file with a single-character separator (the
common case) the conversion runs in `polars_child.py`, started as the ingest begins so
that its interpreter and Polars load while this process checks the header and the
sample. The child checks and profiles the rows as it writes them
(datasets.ingest.batch_profile) and answers "ok" with each column's profile state (kept
in this process's memory only, as the careful reader's are), or "not ok": then its
Parquet is discarded and the careful reader (datasets.ingest.writer) reads the file as
before, refusing it with its message or reading it. So a file is refused by one reader
only, and what is stored never depends on which reader stored it
(tests/test_ingest_fast.py compares them).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import mmap
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pyarrow as pa

from datasets.ingest.common import ARROW_TYPES, GZIP_MAGIC, ZIP_MAGIC, CsvDialect, IngestLimits
from datasets.ingest.profile import ColumnProfile, profile_limits
from datasets.ingest.reader import open_line_after

logger = logging.getLogger(__name__)

CHILD = Path(__file__).with_name("polars_child.py")
#: how often the parent reports progress (and so the heartbeat) while the child works
POLL_SECONDS = 1.0
#: a rough conversion speed, for a progress estimate only (the child reports none)
BYTES_PER_SECOND = 150e6
BOM = b"\xef\xbb\xbf"
#: the CSV chunks Polars reads ahead (POLARS_CSV_CHUNK_SIZE), a few in flight: at 10M
#: rows 4 MiB parse some 5 % faster than 2 MiB for some 35 MB more (~270 MB in all)
CSV_CHUNK_BYTES = 4 << 20
#: rows per batch the child profiles on their way to the writer: a quarter of a row
#: group holds the child's peak some 40 MB lower at any size, and is no slower
BATCH_ROWS = 1 << 16


def dialect_eligible(dialect: CsvDialect) -> bool:
    """Whether the child can read text in this dialect: UTF-8 with a one-character
    separator and quote, numbers written plainly."""
    return (
        dialect.encoding in ("utf-8", "utf8")
        and len(dialect.delimiter) == 1
        and dialect.delimiter not in '\r\n"'
        and len(dialect.quote_char or "x") == 1
        and not dialect.decimal_comma
        and not dialect.thousands
    )


def eligible(source: Path, dialect: CsvDialect) -> bool:
    """Whether the child can read this file at all: plain (not compressed) text in a
    dialect it reads (`dialect_eligible`)."""
    with open(source, "rb") as handle:
        head = handle.read(4)
    return (
        head[:2] != GZIP_MAGIC
        and head != ZIP_MAGIC
        and dialect_eligible(dialect)
        and (dialect.header or not head.startswith(BOM))
    )


class FastConversion:
    """The child process; `run` gives it the job and waits.

    Its interpreter, Polars and pyarrow take longer to load than Polars needs
    for a million rows: `ready` hands over the process's spare child (started, idle on
    its stdin, once the previous conversion was done, or by `keep_spare`) when there
    is one, else starts one at once.
    """

    def __init__(self, limits: IngestLimits, *, process: subprocess.Popen | None = None) -> None:
        self._process = process or subprocess.Popen(  # noqa: S603 - our own script, no shell
            [sys.executable, "-P", str(CHILD)],  # -P: not its folder (numbers.py) on the path
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_child_environment(limits),
        )
        self.peak_rss_mb: float | None = None  # the child's, once it has answered
        self._answered = False

    @classmethod
    def ready(cls, limits: IngestLimits) -> FastConversion:
        """The spare child if one is alive for these limits in this process, else a new one."""
        spare = _spare.take(_child_environment(limits))
        return cls(limits, process=spare)

    def run(
        self,
        *,
        source: Path,
        temporary: str,
        names: list[str],
        types: dict[str, str],
        dialect: CsvDialect,
        limits: IngestLimits,
        row_group_rows: int,
        on_progress: Callable[[float], None] | None,
        long_line: bool | None = None,
        parts: PartFeed | None = None,
    ) -> list[ColumnProfile] | None:
        """The profiles if the child wrote `temporary` as the careful reader would have;
        None (the caller discards `temporary` and reads the careful way) otherwise.

        `long_line`: whether a line is over the limit, when the caller saw it writing
        `source` (otherwise searched here: the pages of a file just written may be
        mapped whole, as much memory as the file).
        `parts`: `source` is the first part of a copy still being written: the child
        reads each part as the feed names it, while the next is decoded (see PartFeed)."""
        if len(names) < 2 or any(("\n" in n or "\r" in n) for n in names):
            return None  # one column: a blank line is a row to Polars, skipped by pyarrow
        if long_line is None and parts is None:
            long_line = _longest_line_over(source, limits.max_row_bytes)
        if long_line:
            logger.info("ingest: the careful reader reads this file (a line over the limit)")
            return None
        job = {
            "source": str(source),
            "destination": temporary,
            "names": names,
            "kinds": [types[n] for n in names],
            "header": dialect.header,
            "delimiter": dialect.delimiter,
            "quote": dialect.quote_char or None,
            "row_group_rows": row_group_rows,
            "batch_rows": BATCH_ROWS,
            "arrow_schema": arrow_schema(
                pa.schema([pa.field(n, ARROW_TYPES[types[n]]) for n in names])
            ),
            "limits": profile_limits(),
        }
        if parts is None:
            answer = self._ask(json.dumps(job).encode() + b"\n", source.stat().st_size, on_progress)
        else:
            answer = self._ask(self._feed(job, source, parts, on_progress), 0, on_progress)
        self.peak_rss_mb = answer.get("peak_rss_mb")
        logger.debug("ingest: the Polars child peaked at %s MB", self.peak_rss_mb)
        states = answer.get("states")
        if not answer.get("ok") or not isinstance(states, list) or len(states) != len(names):
            why = answer.get("why", "no answer")
            logger.info("ingest: the careful reader reads this file (%s)", why)
            return None
        if on_progress is not None:
            on_progress(1.0)
        return _profiles(names, types, states)

    def _feed(self, job: dict, first: Path, parts: PartFeed, on_progress) -> bytes:
        """Send the job, then each part of the copy as it is written; the last line to
        send: "end" once the copy is whole and fit for the child, else "abort"."""
        stdin = self._process.stdin
        try:
            stdin.write(json.dumps({**job, "parts": True}).encode() + b"\n")
            stdin.write(str(first).encode() + b"\n")
            stdin.flush()
            while (part := parts.next(on_progress)) is not None:
                stdin.write(str(part).encode() + b"\n")
                stdin.flush()
        except OSError:  # the child is gone: its answer says so
            return b""
        return b"end\n" if parts.whole() else b"abort\n"

    def _ask(self, data: bytes, size: int, on_progress) -> dict:
        """Send `data` (the rest of the job), then wait for the child's one line of answer,
        reporting progress as it works. The answer is read as soon as it is written: the
        child's exit (the system taking back Polars' few hundred megabytes, tens of
        milliseconds) is waited for when the next spare is started (`keep_spare`), once
        the ingest is done (`spare_later`)."""
        process = self._process
        try:
            process.stdin.write(data)
            process.stdin.flush()
        except OSError:
            pass  # the child is gone: its exit says so below
        with contextlib.suppress(OSError):
            process.stdin.close()
        started = time.monotonic()
        out = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while b"\n" not in out:
                if not selector.select(POLL_SECONDS):
                    if on_progress is not None and size:  # also the heartbeat
                        elapsed = time.monotonic() - started
                        on_progress(min(0.9, elapsed * BYTES_PER_SECOND / max(size, 1)))
                    elif on_progress is not None:
                        on_progress(0.9)
                    continue
                chunk = os.read(process.stdout.fileno(), 1 << 16)
                if not chunk:
                    break  # the child exited without a whole answer
                out += chunk
        if b"\n" in out:
            self._answered = True
            with _exiting_lock:
                _exiting.append(process)
        else:
            process.wait()
        lines = out.decode(errors="replace").strip().splitlines()
        if not lines or (not self._answered and process.returncode != 0):
            return {"ok": False, "why": f"the child exited with {process.returncode}"}
        try:
            return json.loads(lines[0])
        except ValueError:
            return {"ok": False, "why": "the child's answer was not readable"}

    def close(self) -> None:
        """Stop the child if it is still running (an ingest refused before the job);
        one that has answered is left to exit, and waited for by `keep_spare`."""
        if not self._answered:
            _stop(self._process)


class CopyCancelled(Exception):
    """The ingest no longer reads the copy: its writer stops."""


class PartFeed:
    """The parts of a copy as its writer (another thread: reader.plain_copy with
    `parts`) completes them: `next` waits for the next part, None once there is no more;
    then `whole` says whether the copy ended fit for the child."""

    def __init__(self, whole: Callable[[], bool]) -> None:
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._whole = whole
        self._cancelled = threading.Event()
        self.given: list[Path] = []

    def put(self, part: Path | None) -> None:
        """From the writer's thread: a complete part (None: no more). Raises once the
        reader has cancelled, so that the writer stops at its next part."""
        if part is not None:
            self.given.append(part)
            if self._cancelled.is_set():
                raise CopyCancelled()
        self._queue.put(part)

    def cancel(self) -> None:
        self._cancelled.set()

    def next(self, on_progress: Callable[[float], None] | None = None) -> Path | None:
        while True:
            try:
                return self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if on_progress is not None:  # the heartbeat while the copy is written
                    on_progress(0.0)

    def whole(self) -> bool:
        return self._whole()


def _child_environment(limits: IngestLimits) -> dict[str, str]:
    # Polars reads a CSV ahead in chunks of 32 MiB by default, some 400 MB in flight
    # at 10M rows; in chunks of a few MiB (CSV_CHUNK_BYTES) its memory is flat in rows
    chunk = max(CSV_CHUNK_BYTES, 2 * limits.max_row_bytes)
    return {**os.environ, "POLARS_SKIP_CPU_CHECK": "1", "POLARS_CSV_CHUNK_SIZE": str(chunk)}


class _Spare:
    """At most one idle child per process, kept for the next conversion.

    Only a process's main thread keeps one: the child dies with the thread that
    started it (PR_SET_PDEATHSIG), and a request thread ends. A child inherited
    across a fork belongs to the parent and is never used. Idle, it waits on its
    stdin (no CPU; some 120 MB resident, Polars, pyarrow and numpy loaded, most of it
    their shared libraries).
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._environment: dict[str, str] | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._deferred = 0  # `later` blocks open (main thread only)
        self._wanted: IngestLimits | None = None  # a spare asked for within them

    def take(self, environment: dict[str, str]) -> subprocess.Popen | None:
        with self._lock:
            process, self._process = self._process, None
            if process is None:
                return None
            if (
                self._pid != os.getpid()
                or self._environment != environment
                or process.poll() is not None
            ):
                _stop(process)
                return None
            return process

    def keep(self, limits: IngestLimits, *, wait: bool = True) -> None:
        main = threading.current_thread() is threading.main_thread()
        if main and self._deferred:
            self._wanted = limits
            return
        _reap(wait=wait)
        if not main:
            return
        with self._lock:
            if self._process is not None and self._pid == os.getpid():
                if self._process.poll() is None:
                    return
            try:
                self._process = FastConversion(limits)._process
            except OSError:
                self._process = None
                return
            self._environment, self._pid = _child_environment(limits), os.getpid()

    @contextmanager
    def later(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._deferred += 1
        try:
            yield
        finally:
            self._deferred -= 1
            if not self._deferred:
                wanted, self._wanted = self._wanted, None
                # the children still exiting are not waited for (the ingest is over,
                # its caller waits): the next spare's start reaps them
                if wanted is not None:
                    self.keep(wanted, wait=False)
                else:
                    _reap(wait=False)


_spare = _Spare()
#: the children that have answered, exiting: waited for before the next spare starts
_exiting: list[subprocess.Popen] = []
_exiting_lock = threading.Lock()


def _reap(*, wait: bool = True) -> None:
    """Wait for the children that have answered to exit (without `wait`: collect those
    that have exited, and keep the others for the next call)."""
    with _exiting_lock:
        exiting = list(_exiting)
        _exiting.clear()
    for process in exiting:
        if wait or process.poll() is not None:
            _stop(process, kill=False)
        else:
            with _exiting_lock:
                _exiting.append(process)


def keep_spare(limits: IngestLimits) -> None:
    """Start an idle child for the next conversion in this process, if none is waiting."""
    _spare.keep(limits)


def spare_later() -> AbstractContextManager[None]:
    """A block (the whole ingest, its database writes and clean-up included) at whose
    end the spare child a conversion within it asked for is started, not before: the
    new child's start (its interpreter, Polars, pyarrow, a warm-up: a core's worth
    for a good part of a second) would otherwise take the CPU from the ingest's last
    steps."""
    return _spare.later()


def _stop(process: subprocess.Popen, kill: bool = True) -> None:
    """Kill the child (unless `kill` is false: it is exiting) and wait for its end."""
    if process.poll() is None:
        if kill:
            process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None and not stream.closed:
            stream.close()


#: bytes of the file mapped at a time by `_longest_line_over` (a multiple of any page size)
LINE_SEARCH_WINDOW = 64 << 20


def _longest_line_over(source: Path, limit: int) -> bool:
    """Whether a line of the file is longer than `limit` (the careful reader refuses it);
    the search touches a few pages per `limit` bytes of the mapped file.

    The file is mapped one window at a time: every touched page of a mapping counts in
    the process's resident memory (with the pages the kernel maps around it) until
    the mapping closes, so one mapping of the whole file grew the worker's peak RSS
    with the file's size (+280 MB for a 4.9 GB CSV); a window bounds it."""
    line, size = 0, source.stat().st_size
    with open(source, "rb") as handle:
        for offset in range(0, size, LINE_SEARCH_WINDOW):
            length = min(LINE_SEARCH_WINDOW, size - offset)
            with mmap.mmap(handle.fileno(), length, access=mmap.ACCESS_READ, offset=offset) as data:
                line = open_line_after(data, limit, line)
            if line < 0:
                return True
    return False


def arrow_schema(schema: pa.Schema) -> str:
    """The ARROW:schema value pyarrow itself writes for `schema` (base64 of its IPC
    message): given to Polars' writer, so that text reads back as pyarrow's string,
    not large_string."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def _profiles(names: list[str], types: dict[str, str], states: list[dict]) -> list:
    profiles = []
    for position, (name, state) in enumerate(zip(names, states, strict=True)):
        profile = ColumnProfile(name, position, types[name])
        profile.cells = state["cells"]
        if profile.counts is not None:
            profile.counts = state["counts"]
            if profile.counts is not None:
                profile.counted_bytes = sum(len(key.encode()) for key in profile.counts)
        profile.lows, profile.highs = state["lows"], state["highs"]
        profile.readable = state["readable"]
        profiles.append(profile)
    return profiles
