"""End to end with real Celery worker processes: upload through the page and ingest; a
worker SIGKILLed mid-ingest (the redelivered task restarts it); the broker down at upload
time (the periodic re-dispatch sends the ingest later)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.demo import write_census_csv
from datasets.ingest import temporary_parquet_paths
from datasets.models import Dataset
from datasets.services import dataset_redispatch_stale
from tests.conftest import wait_for

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upload(client, project, content: bytes, name: str) -> Dataset:
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    response = client.post(url, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302, response.content.decode()
    return Dataset.objects.get(pk=int(response.url.rstrip("/").rsplit("/", 1)[1]))


def finished(dataset: Dataset):
    dataset.refresh_from_db()
    return dataset if dataset.status in (Dataset.Status.READY, Dataset.Status.FAILED) else None


def test_worker_ingests_an_upload_end_to_end(celery_workers, client, owner, project, tmp_path):
    celery_workers.start(DPPORTAL_MAX_COLUMNS="7")
    client.force_login(owner)
    csv_path = write_census_csv(tmp_path / "census.csv", rows=50_000)
    dataset = upload(client, project, csv_path.read_bytes(), "census.csv")

    wait_for(lambda: finished(dataset), timeout=90, message="the worker did not finish")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    parquet = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    assert parquet.exists()
    assert pq.ParquetFile(parquet).schema_arrow.names == [
        "person_id", "age", "sex", "region", "education", "income", "hours",
    ]  # fmt: skip
    assert dataset.columns.get(name="region").profile["values"][:2] == ["Region 01", "Region 02"]
    status = client.get(reverse("datasets:status", kwargs={"pk": dataset.pk})).json()
    assert status["status"] == "ready" and status["progress"] == 1.0

    # The worker reads its limits from its environment: eight columns are one too many.
    wide = upload(client, project, b"a,b,c,d,e,f,g,h\n1,2,3,4,5,6,7,8\n", "wide.csv")
    wait_for(lambda: finished(wide), timeout=60, message="the worker did not finish")
    assert wide.status == Dataset.Status.FAILED
    assert wide.failure_reason == "The file has 8 columns; at most 7 are allowed."
    assert not (Path(settings.MEDIA_ROOT) / "datasets" / str(wide.pk) / "data.parquet").exists()
    page = client.get(reverse("datasets:detail", kwargs={"pk": wide.pk})).content.decode()
    assert "at most 7 are allowed" in page


def test_worker_killed_mid_ingest_restarts_it(celery_workers, client, owner, project, tmp_path):
    pause = tmp_path / "pause"
    pause.write_text("hold")
    first = celery_workers.start(DPPORTAL_TEST_INGEST_PAUSE_FILE=str(pause))
    client.force_login(owner)
    csv_path = write_census_csv(tmp_path / "census.csv", rows=20_000)
    dataset = upload(client, project, csv_path.read_bytes(), "census.csv")
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    # the first worker wrote some Parquet, reported progress, and waits at the pause point
    wait_for(
        lambda: Dataset.objects.get(pk=dataset.pk).progress > 0,
        timeout=60,
        message=f"no progress; log:\n{first.log()}",
    )
    assert temporary_parquet_paths(folder / "data.parquet") != []
    first.kill()  # SIGKILL the worker and its pool child: the message stays unacknowledged
    pause.unlink()
    dataset.refresh_from_db()
    assert (dataset.status, dataset.ingest_attempts) == ("ingesting", 1)
    time.sleep(1.5)  # older than the new worker's visibility timeout
    # a new worker restores unacknowledged messages older than its visibility timeout
    # when it starts (kombu's redis transport): the redelivery is deterministic
    second = celery_workers.start(CELERY_VISIBILITY_TIMEOUT="1")
    wait_for(lambda: finished(dataset), timeout=90, message=f"not redone; log:\n{second.log()}")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert dataset.ingest_attempts == 2
    assert "restarting an interrupted ingest" in second.log()
    parquet = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    assert pq.ParquetFile(parquet).metadata.num_rows == 20_000
    assert temporary_parquet_paths(parquet) == []  # the dead run's file is gone
    assert dataset.columns.count() == 7


UPLOAD_WITH_BROKER_DOWN = """
import os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
django.setup()
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
client = Client()
client.force_login(get_user_model().objects.get(pk=int(sys.argv[1])))
response = client.post(sys.argv[2], {"file": SimpleUploadedFile("a.csv", b"a,b\\n1,x\\n2,y\\n")})
print("status", response.status_code, response.get("Location"))
"""


def test_upload_with_the_broker_down_is_kept_and_sent_later(celery_workers, client, owner, project):
    env = celery_workers.env(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", DEBUG="1")
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    # Redis is down (nothing listens on that port): the upload must neither hang nor fail
    uploading = subprocess.run(
        [sys.executable, "-c", UPLOAD_WITH_BROKER_DOWN, str(owner.pk), url],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert uploading.returncode == 0, uploading.stderr
    assert "status 302" in uploading.stdout, uploading.stdout + uploading.stderr
    assert "could not send the ingest task" in uploading.stderr
    dataset = Dataset.objects.get()
    assert (dataset.status, dataset.dispatched_at) == ("uploaded", None)
    assert dataset_redispatch_stale() == 0  # too recent: the dispatch may be on its way

    worker = celery_workers.start()  # the broker is back (the suite's Redis)
    assert dataset_redispatch_stale(uploaded_after=timedelta(0)) == 1
    wait_for(lambda: finished(dataset), timeout=60, message=f"not ingested:\n{worker.log()}")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert dataset.dispatched_at is not None
    assert dataset_redispatch_stale(uploaded_after=timedelta(0)) == 0  # nothing left behind
