"""An upload that committed its dataset answers 201, whatever fails after the commit:
the ingest's dispatch (an on_commit callback), the preview of the file (which a fast
worker may already have ingested and removed) or the detail read back for the body.
Each failure is injected; the dataset, its file and its status stay as committed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DatabaseError
from rest_framework.test import APIClient

from datasets.api import uploads as upload_api
from datasets.models import Dataset
from datasets.services import uploads as upload_services

CSV = b"age,region\n31,north\n44,south\n"


def post_upload(owner, project):
    client = APIClient()
    client.force_authenticate(owner)
    return client.post(
        f"/api/v1/projects/{project.slug}/datasets/upload/",
        {"file": SimpleUploadedFile("survey.csv", CSV, "text/csv")},
        format="multipart",
    )


def only_dataset() -> Dataset:
    (dataset,) = Dataset.objects.all()
    return dataset


def fail(*args, **kwargs):
    raise RuntimeError("injected after the commit")


@pytest.mark.django_db(transaction=True)  # real commits: the on_commit callbacks run
def test_a_failed_dispatch_after_the_commit_still_answers_201(owner, project, monkeypatch):
    calls = []

    def dispatch(**kwargs):
        calls.append(kwargs)
        fail()

    monkeypatch.setattr(upload_services, "dataset_dispatch_ingest", dispatch)
    response = post_upload(owner, project)
    assert response.status_code == 201, response.content[:300]
    assert calls, "the dispatch was not attempted"
    dataset = only_dataset()
    assert response.json()["id"] == dataset.pk
    assert dataset.status == Dataset.Status.UPLOADED  # the periodic re-dispatch sends it
    assert (Path(settings.MEDIA_ROOT) / dataset.source_file).read_bytes() == CSV


@pytest.mark.django_db
def test_a_failed_preview_after_the_commit_answers_201_without_reading(owner, project, monkeypatch):
    monkeypatch.setattr(upload_api.services, "dataset_read_preview", fail)
    response = post_upload(owner, project)
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    assert body["reading"] is None and body["id"] == only_dataset().pk
    assert body["columns"] == []


@pytest.mark.django_db
def test_an_upload_removed_by_a_fast_worker_before_the_preview_answers_201(
    owner, project, monkeypatch
):
    create = upload_services.dataset_create

    def create_then_ingested(**kwargs):
        dataset = create(**kwargs)
        (Path(settings.MEDIA_ROOT) / dataset.source_file).unlink()
        return dataset

    monkeypatch.setattr(upload_api.services, "dataset_create", create_then_ingested)
    response = post_upload(owner, project)
    assert response.status_code == 201, response.content[:300]
    assert response.json()["reading"] is None


@pytest.mark.django_db
def test_a_failed_detail_after_the_commit_answers_201_with_the_id(owner, project, monkeypatch):
    def detail(dataset):
        raise DatabaseError("the database went away")

    monkeypatch.setattr(upload_api, "detail", detail)
    response = post_upload(owner, project)
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    dataset = only_dataset()
    assert (body["id"], body["name"], body["status"]) == (dataset.pk, "survey", "uploaded")
    assert body["reading"]["columns"] == ["age", "region"]
