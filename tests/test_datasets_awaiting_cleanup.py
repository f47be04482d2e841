"""Uploads left `awaiting` confirmation are removed, row and private file, after
DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS (a celery beat task); nothing else is."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets import tasks
from datasets.models import Dataset
from datasets.services import (
    dataset_cleanup_awaiting,
    dataset_confirm_reading,
    dataset_create,
    dataset_ingest,
)
from tests.conftest import wait_for

SEMICOLON = b"a;b\n" + b"1;2\n" * 20  # not plain: it waits for confirmation


def _upload(project, owner, content: bytes = SEMICOLON) -> Dataset:
    return dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile("x.csv", content),
        uploaded_by=owner,
        dispatch=False,
    )


def _age(dataset: Dataset, hours: float) -> None:
    Dataset.objects.filter(pk=dataset.pk).update(
        uploaded_at=dataset.uploaded_at - timedelta(hours=hours)
    )


def _source(dataset: Dataset) -> Path:
    return Path(django_settings.MEDIA_ROOT) / dataset.source_file


@pytest.mark.django_db
def test_only_awaiting_uploads_older_than_the_retention_go(project, owner, settings):
    settings.DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS = 24
    old, recent = _upload(project, owner), _upload(project, owner)
    confirmed = _upload(project, owner)
    dataset_confirm_reading(dataset=confirmed, actor=owner)
    dataset_ingest(dataset_id=confirmed.pk)
    plain = _upload(project, owner, b"a,b\n1,2\n")  # queued at once, never awaiting
    assert old.status == recent.status == Dataset.Status.AWAITING
    for dataset, hours in ((old, 25), (recent, 23), (confirmed, 48), (plain, 48)):
        _age(dataset, hours)
    files = {d.pk: _source(d) for d in (old, recent, confirmed, plain)}
    assert all(f.exists() for pk, f in files.items() if pk != confirmed.pk)

    assert dataset_cleanup_awaiting() == 1
    assert set(Dataset.objects.values_list("pk", flat=True)) == {recent.pk, confirmed.pk, plain.pk}
    assert not files[old.pk].parent.exists()
    assert files[recent.pk].exists() and files[plain.pk].exists()
    assert Dataset.objects.get(pk=confirmed.pk).status == Dataset.Status.READY
    assert dataset_cleanup_awaiting() == 0  # nothing more to remove


@pytest.mark.django_db
def test_the_retention_is_a_setting_and_the_owner_is_told(client, project, owner, settings):
    settings.DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS = 2
    dataset = _upload(project, owner)
    client.force_login(owner)
    page = client.get(reverse("datasets:reading", kwargs={"pk": dataset.pk})).content.decode()
    assert "not confirmed within 2 hours is removed" in page
    _age(dataset, 1)
    assert dataset_cleanup_awaiting() == 0
    _age(dataset, 2.5)  # from the upload time
    assert dataset_cleanup_awaiting() == 1
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


def test_beat_runs_the_cleanup_every_hour():
    beat = django_settings.CELERY_BEAT_SCHEDULE["datasets-cleanup-awaiting"]
    assert beat["task"] == tasks.dataset_cleanup_awaiting_task.name
    assert beat["schedule"] == 3600.0
    assert django_settings.DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS == 24  # the default


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_cleanup_task(project, owner, celery_workers):
    celery_workers.start(concurrency=1)
    dataset = _upload(project, owner)
    _age(dataset, 25)
    folder = _source(dataset).parent
    tasks.dataset_cleanup_awaiting_task.delay()
    wait_for(
        lambda: not Dataset.objects.filter(pk=dataset.pk).exists() and not folder.exists(),
        timeout=60,
        message="the worker did not remove the upload left awaiting",
    )
