"""The hostile-file harness measures a real worker: a plain file is read with a peak
that is the worker's (tens of MB at least, the Django process), and a broken file fails
with nothing half-stored."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.hostile_support import WORKER_PEAK_LIMIT_MB, ingest_in_worker

pytestmark = pytest.mark.worker


def test_a_plain_parquet_is_read_and_measured(celery_workers, owner, project, tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"age": list(range(1000)), "x": [1.5] * 1000}), path)
    worker = celery_workers.start()
    run = ingest_in_worker(worker_pid=worker.proc.pid, project=project, owner=owner, path=path)
    assert run.status == "ready", run.failure_reason
    assert 50 < run.peak_mb < WORKER_PEAK_LIMIT_MB
    assert run.bounded and run.leftovers == ()


def test_a_broken_parquet_fails_with_nothing_stored(celery_workers, owner, project, tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 100 + b"PAR1")
    worker = celery_workers.start()
    run = ingest_in_worker(worker_pid=worker.proc.pid, project=project, owner=owner, path=path)
    assert run.status == "failed" and run.failure_reason
    assert run.leftovers == ()
