"""Restartable ingest, in-process: restart of an interrupted run, the lock, the attempt cap,
and which datasets the periodic re-dispatch picks.

A real SIGKILLed worker is in test_datasets_worker.py.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone

from datasets.ingest import temporary_parquet_paths
from datasets.models import Dataset
from datasets.selectors import dataset_ids_to_redispatch
from datasets.services import dataset_create, dataset_folder, dataset_ingest, ingesting

pytestmark = pytest.mark.django_db

CSV = b"person,age,region\n" + b"".join(
    b"%d,%d,r%d\n" % (i, 20 + i % 50, i % 3) for i in range(500)
)


def uploaded(project, owner, name: str = "survey") -> Dataset:
    return dataset_create(
        project=project,
        name=name,
        uploaded_file=SimpleUploadedFile("s.csv", CSV),
        uploaded_by=owner,
        dispatch=False,
    )


def interrupted(dataset: Dataset, *, attempts: int = 1, heartbeat_age: timedelta) -> Path:
    """The state a worker killed mid-ingest leaves: ingesting, a half-written temporary file."""
    Dataset.objects.filter(pk=dataset.pk).update(
        status=Dataset.Status.INGESTING,
        progress=0.4,
        ingest_attempts=attempts,
        heartbeat_at=timezone.now() - heartbeat_age,
    )
    stale = dataset_folder(dataset=dataset) / ".data.parquet.4242-deadbeef.tmp"
    stale.write_bytes(b"PAR1 half a file")
    return stale


def test_an_interrupted_ingest_restarts_from_scratch(project, owner):
    dataset = uploaded(project, owner)
    # a fresh heartbeat: the run died a moment ago; the lock shows nobody holds it
    stale = interrupted(dataset, heartbeat_age=timedelta(seconds=1))

    dataset = dataset_ingest(dataset_id=dataset.pk)

    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert dataset.ingest_attempts == 2
    assert not stale.exists()
    parquet = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    assert temporary_parquet_paths(parquet) == []
    table = pq.read_table(parquet)
    assert table.num_rows == 500 and table.column("person").to_pylist() == list(range(500))
    assert [c.name for c in dataset.columns.order_by("position")] == ["person", "age", "region"]


def test_ready_and_failed_datasets_are_left_alone(project, owner):
    dataset = dataset_ingest(dataset_id=uploaded(project, owner).pk)
    assert dataset.status == Dataset.Status.READY
    again = dataset_ingest(dataset_id=dataset.pk)
    assert (again.status, again.ingest_attempts) == (Dataset.Status.READY, 1)
    assert dataset_ingest(dataset_id=dataset.pk + 1000) is None


@pytest.fixture
def lock_holder():
    """Another database session, as a second worker would have."""
    s = connection.settings_dict
    other = psycopg.connect(
        host=s.get("HOST") or "127.0.0.1",
        port=s.get("PORT") or 5432,
        user=s.get("USER") or "postgres",
        dbname=s["NAME"],
        autocommit=True,
    )
    yield other
    other.close()


def test_a_live_run_keeps_a_second_delivery_out(project, owner, lock_holder, monkeypatch):
    monkeypatch.setattr(ingesting, "LOCK_WAIT_SECONDS", 0.3)
    dataset = uploaded(project, owner)
    stale = interrupted(dataset, heartbeat_age=timedelta(hours=1))
    key = (ingesting.LOCK_NAMESPACE, dataset.pk)
    lock_holder.execute("SELECT pg_advisory_lock(%s, %s)", key)

    during = dataset_ingest(dataset_id=dataset.pk)

    assert (during.status, during.ingest_attempts) == (Dataset.Status.INGESTING, 1)
    assert stale.exists()  # the live run's file is not touched
    lock_holder.execute("SELECT pg_advisory_unlock(%s, %s)", key)
    after = dataset_ingest(dataset_id=dataset.pk)
    assert (after.status, after.ingest_attempts) == (Dataset.Status.READY, 2)


def test_an_ingest_that_keeps_dying_fails_instead_of_looping(project, owner):
    dataset = uploaded(project, owner)
    interrupted(dataset, attempts=ingesting.MAX_INGEST_ATTEMPTS, heartbeat_age=timedelta(0))

    dataset = dataset_ingest(dataset_id=dataset.pk)

    assert dataset.status == Dataset.Status.FAILED
    assert dataset.failure_reason.startswith(
        f"The conversion was interrupted {ingesting.MAX_INGEST_ATTEMPTS} times"
    )
    assert not dataset.columns.exists() and dataset.parquet_file == ""


def test_a_superseded_run_cannot_record_its_outcome(project, owner):
    dataset = uploaded(project, owner)
    interrupted(dataset, attempts=2, heartbeat_age=timedelta(0))
    # a straggler of attempt 1 reports progress and fails: attempt 2 owns the row
    ingesting._progress_reporter(dataset_id=dataset.pk, attempt=1)(0.9)
    ingesting._fail(dataset_id=dataset.pk, attempt=1, reason="late")
    dataset.refresh_from_db()
    assert (dataset.status, dataset.progress, dataset.failure_reason) == ("ingesting", 0.4, "")
    ingesting._progress_reporter(dataset_id=dataset.pk, attempt=2)(0.9)
    dataset.refresh_from_db()
    assert dataset.progress == 0.9


def test_which_datasets_are_sent_again(project, owner):
    now = timezone.now()
    minute, hour = timedelta(minutes=1), timedelta(hours=1)

    def make(name: str, **fields) -> int:
        dataset = uploaded(project, owner, name)
        Dataset.objects.filter(pk=dataset.pk).update(**fields)
        return dataset.pk

    old = now - hour
    lost = make("uploaded long ago, never sent", uploaded_at=old)
    make("uploaded just now", uploaded_at=now)
    resent = make("sent again long ago", uploaded_at=old, dispatched_at=now - 2 * minute)
    make("sent again just now", uploaded_at=old, dispatched_at=now - timedelta(seconds=5))
    dead = make("ingesting, silent", status="ingesting", uploaded_at=old, heartbeat_at=old)
    make("ingesting, alive", status="ingesting", uploaded_at=old, heartbeat_at=now)
    never = make("ingesting, never beat", status="ingesting", uploaded_at=old)
    make("ingesting, silent, just resent", status="ingesting", uploaded_at=old,
         heartbeat_at=old, dispatched_at=now)  # fmt: skip
    make("ready", status="ready", uploaded_at=old)
    make("failed", status="failed", uploaded_at=old, heartbeat_at=old)

    ids = dataset_ids_to_redispatch(now=now, uploaded_after=minute, stalled_after=10 * minute)
    assert sorted(ids) == sorted([lost, resent, dead, never])
