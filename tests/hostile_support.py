"""Ingest one file in a real Celery worker process and measure what it took.

A hostile file (a decompression bomb, a huge dictionary, rows of great width) must be
refused with a message naming the limit, or read, with the worker's memory and time
bounded. What is measured is the worker's whole process tree: the main process, the
pool child where the task runs and any child the ingest starts. Each process's peak
resident set (VmHWM) is sampled while the task runs and once more when it is done; a
child that ends before a sample takes its peak with it, so the sampling interval is
short. Used by the hostile-file tests (with the `celery_workers` fixture) and by
bench/hostile.py (with a worker it starts itself).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from django.conf import settings
from django.core.files import File

# The bounds every hostile file is held to (the acceptance): a worker that
# reads or refuses it stays under both.
WORKER_PEAK_LIMIT_MB = 500
WORKER_SECONDS_LIMIT = 60

_SAMPLE_SECONDS = 0.05


def process_peak_mb(pid: int) -> float:
    """One process's peak resident set in MB (VmHWM); 0 once it has gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0.0


def tree_peak_mb(pid: int) -> float:
    """The highest peak resident set of a process and all its descendants, in MB."""
    try:
        pids = [pid] + [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    return max(process_peak_mb(p) for p in pids)


@dataclass(frozen=True)
class IngestRun:
    """How one ingest in a worker ended and what it cost."""

    status: str
    failure_reason: str
    peak_mb: float  # the highest VmHWM of any process in the worker's tree
    seconds: float  # from the upload being stored to the dataset being ready or failed
    leftovers: tuple[str, ...]  # Parquet files under a failed dataset's folder

    @property
    def bounded(self) -> bool:
        return self.peak_mb < WORKER_PEAK_LIMIT_MB and self.seconds < WORKER_SECONDS_LIMIT


def ingest_in_worker(
    *, worker_pid: int, project, owner, path: Path, sheet: str = "", timeout: float = 180.0
) -> IngestRun:
    """Upload `path` to `project` as `owner`, let the running worker (`worker_pid`, the
    main process of a `celery worker` consuming the test's queue) ingest it, and
    measure. The worker should be fresh (started for this file alone), so that its
    peak is this file's."""
    from datasets.models import Dataset
    from datasets.services import dataset_create

    with open(path, "rb") as handle:
        dataset = dataset_create(
            project=project, name=path.stem, uploaded_file=File(handle, name=path.name),
            uploaded_by=owner, sheet=sheet,
        )  # fmt: skip
    started = time.monotonic()
    peak = 0.0
    done = (Dataset.Status.READY, Dataset.Status.FAILED)
    while time.monotonic() - started < timeout:
        peak = max(peak, tree_peak_mb(worker_pid))
        dataset.refresh_from_db()
        if dataset.status in done:
            break
        time.sleep(_SAMPLE_SECONDS)
    seconds = time.monotonic() - started
    peak = max(peak, tree_peak_mb(worker_pid))
    if dataset.status not in done:
        raise TimeoutError(f"{path.name}: not ingested after {timeout:.0f} s ({dataset.status})")
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    leftovers = ()
    if dataset.status == Dataset.Status.FAILED and folder.exists():
        leftovers = tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*.parquet")))
    return IngestRun(
        status=dataset.status, failure_reason=dataset.failure_reason, peak_mb=peak,
        seconds=seconds, leftovers=leftovers,
    )  # fmt: skip
