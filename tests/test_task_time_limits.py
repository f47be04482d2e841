"""Every Celery task has a soft and a hard time limit (named settings); a task stopped
by its soft limit records which limit it reached, leaves nothing half-stored and is not
retried. In process the stop is raised where Celery would raise it (inside the task's
work); one test lets a real worker process reach a 1-second limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import translation

from budgets.models import LedgerEntry
from datasets import tasks as dataset_tasks
from datasets.models import Dataset
from datasets.services import dataset_create, ingesting
from datasets.services import person_rows as person_rows_services
from dpportal import messages
from dpportal.celery import app
from dpportal.tasklimits import SoftTimeLimitExceeded, duration
from releases import lifecycle
from releases.compute import run
from releases.models import Release
from releases.tasks import release_compute_task
from tests.conftest import wait_for
from tests.releases_support import make_dataset, submitted

CSV = b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i) for i in range(200))


def stop(*args, **kwargs):
    raise SoftTimeLimitExceeded()


def uploaded(project, owner) -> Dataset:
    return dataset_create(
        project=project,
        name="slow",
        uploaded_file=SimpleUploadedFile("slow.csv", CSV),
        uploaded_by=owner,
        dispatch=False,
    )


def test_every_task_has_a_soft_and_a_hard_limit():
    ours = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert {"datasets.ingest", "releases.compute", "datasets.person_rows"} <= set(ours)
    grace = settings.DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS
    for name, task in ours.items():
        assert task.soft_time_limit and task.soft_time_limit > 0, name
        assert task.time_limit == task.soft_time_limit + grace, name
    assert app.tasks["datasets.ingest"].soft_time_limit == settings.DPPORTAL_INGEST_SOFT_TIME_LIMIT
    compute_limit = settings.DPPORTAL_COMPUTE_SOFT_TIME_LIMIT
    assert app.tasks["releases.compute"].soft_time_limit == compute_limit


@pytest.mark.parametrize(
    ("seconds", "english"),
    [
        (1200, "20 minutes"),
        (60, "1 minute"),
        (7200, "2 hours"),
        (1, "1 second"),
        (90, "90 seconds"),
    ],
)
def test_durations_are_words(seconds, english):
    assert messages.english([duration(seconds)]) == english


@pytest.mark.django_db
@override_settings(DPPORTAL_INGEST_SOFT_TIME_LIMIT=1200)
def test_an_ingest_stopped_by_its_limit_fails_naming_it(project, owner, monkeypatch):
    dataset = uploaded(project, owner)
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    assert any(folder.iterdir())
    monkeypatch.setattr(ingesting, "ingest_file", stop)
    retries = []
    monkeypatch.setattr(dataset_tasks.dataset_ingest_task, "retry", lambda **kw: retries.append(kw))
    with translation.override("en"):
        dataset_tasks.dataset_ingest_task.apply(args=[dataset.pk])
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.FAILED
    assert dataset.failure_reason.startswith(
        "The conversion stopped after 20 minutes, the limit for reading one file; "
        "nothing was stored."
    )
    assert retries == []
    assert not folder.exists() or not any(folder.iterdir())  # no Parquet, no upload
    assert (dataset.parquet_file, dataset.source_file) == ("", "")
    assert dataset.columns.count() == 0


@pytest.mark.django_db
def test_an_ingest_stopped_while_storing_its_outcome_stores_nothing(project, owner, monkeypatch):
    dataset = uploaded(project, owner)
    monkeypatch.setattr(ingesting, "_create_columns", stop)
    ingesting.dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.FAILED
    assert "the limit for reading one file" in dataset.failure_reason
    assert dataset.columns.count() == 0 and dataset.parquet_file == ""
    assert not (Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk) / "data.parquet").exists()


def ledger_kinds(release) -> list[str]:
    entries = LedgerEntry.objects.filter(request_id=release.budget_request_id).order_by("id")
    return list(entries.values_list("kind", flat=True))


@pytest.mark.django_db
@override_settings(DPPORTAL_COMPUTE_SOFT_TIME_LIMIT=1800)
@pytest.mark.parametrize(
    ("where", "spent"),
    [("run_plan", True), ("duckdb_plan", False)],  # after / before the rows are read
)
def test_a_compute_stopped_by_its_limit_fails_naming_it(
    project, owner, reviewer, monkeypatch, where, spent
):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    release = lifecycle.release_approve(
        release=submitted(project=project, owner=owner, dataset=dataset), reviewer=reviewer
    )
    monkeypatch.setattr(run, where, stop)
    retries = []
    monkeypatch.setattr(release_compute_task, "retry", lambda **kw: retries.append(kw))
    with translation.override("en"):
        release_compute_task.apply(args=[release.pk])
    release.refresh_from_db()
    assert release.status == Release.Status.FAILED
    assert release.failure_reason.startswith(
        "The computation stopped after 30 minutes, the limit for computing one release; "
        "no result was stored."
    )
    assert retries == []
    assert not lifecycle.release_has_result(release=release)
    assert ledger_kinds(release) == ["reserve", "charge" if spent else "release"]


@pytest.mark.django_db
def test_a_person_rows_copy_stopped_by_its_limit_is_not_retried(project, owner, monkeypatch):
    monkeypatch.setattr(dataset_tasks, "dataset_person_rows_build", stop)
    retries = []
    task = dataset_tasks.dataset_person_rows_task
    monkeypatch.setattr(task, "retry", lambda **kw: retries.append(kw))
    task.apply(args=[1])
    assert retries == []
    assert person_rows_services.dataset_person_rows_build is not stop


@pytest.mark.worker
def test_a_real_worker_stops_an_ingest_at_a_one_second_limit(
    celery_workers, project, owner, tmp_path
):
    pause = tmp_path / "pause"
    pause.write_text("hold")  # the ingest waits here (its progress reporter) until stopped
    worker = celery_workers.start(
        DPPORTAL_INGEST_SOFT_TIME_LIMIT="1", DPPORTAL_TEST_INGEST_PAUSE_FILE=str(pause)
    )
    dataset = dataset_create(
        project=project,
        name="slow",
        uploaded_file=SimpleUploadedFile("slow.csv", CSV * 1),
        uploaded_by=owner,
    )

    def failed():
        dataset.refresh_from_db()
        return dataset.status == Dataset.Status.FAILED

    wait_for(failed, timeout=60, message=f"not stopped; log:\n{worker.log()}")
    assert dataset.failure_reason.startswith(
        "The conversion stopped after 1 second, the limit for reading one file"
    )
    assert dataset.ingest_attempts == 1
    assert not (Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)).exists()


def test_the_reasons_read_in_chinese():
    from django.utils import translation

    from datasets.services.ingesting import time_limit_reason
    from dpportal.catalogues import compile_all
    from releases.tasks import time_limit_reason as compute_reason

    compile_all()
    with override_settings(DPPORTAL_INGEST_SOFT_TIME_LIMIT=1200), translation.override("zh-hans"):
        assert messages.translated(time_limit_reason()).startswith("转换在 20 分钟 后停止")
    with override_settings(DPPORTAL_COMPUTE_SOFT_TIME_LIMIT=7200), translation.override("zh-hans"):
        assert "2 小时" in messages.translated(compute_reason())
