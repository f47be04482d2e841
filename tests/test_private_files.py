"""A dataset's files are private: 0600 in folders 0700 (MEDIA_ROOT down), whatever the
process's umask; and the raw upload is deleted once the dataset is ready, or failed for
good, but kept while a retry may still need it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DatabaseError

from datasets import person_rows
from datasets.models import Dataset
from datasets.services import (
    dataset_create,
    dataset_ingest,
    dataset_person_rows_build,
    ingesting,
)
from tests.releases_support import make_dataset

pytestmark = pytest.mark.django_db

CSV = b"person,age,region\n1,31,north\n2,44,south\n3,27,north\n"


@pytest.fixture(autouse=True)
def permissive_umask():
    """The usual umask (022): files would be 0644 and folders 0755 if left to it."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def folders_from_media_root(path: Path) -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [root, *[p for p in path.parents if p.is_relative_to(root) and p != root]]


def upload(project, owner) -> Dataset:
    return dataset_create(
        project=project,
        name="survey",
        uploaded_file=SimpleUploadedFile("survey.csv", CSV),
        uploaded_by=owner,
        dispatch=False,
    )


def test_the_upload_and_its_parquet_are_private_and_the_upload_goes(project, owner):
    dataset = upload(project, owner)
    source = Path(settings.MEDIA_ROOT) / dataset.source_file
    assert mode(source) == 0o600
    for folder in folders_from_media_root(source):
        assert mode(folder) == 0o700, folder

    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.READY
    parquet = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    assert mode(parquet) == 0o600
    assert not source.exists() and dataset.source_file == ""
    assert sorted(p.name for p in parquet.parent.iterdir()) == ["data.parquet"]


def test_the_person_rows_copy_is_private(project, owner):
    dataset = make_dataset(project=project, owner=owner, id_column="person", bound=2, rows=500)
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    copy = person_rows.local_path(dataset.pk)
    assert mode(copy) == 0o600
    for folder in folders_from_media_root(copy):
        assert mode(folder) == 0o700, folder


def test_a_failed_ingest_removes_the_upload(project, owner):
    dataset = dataset_create(
        project=project,
        name="ragged",
        uploaded_file=SimpleUploadedFile("r.csv", b"a,b\n1,2\n3,4,5\n"),
        uploaded_by=owner,
        dispatch=False,
    )
    source = Path(settings.MEDIA_ROOT) / dataset.source_file
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.FAILED
    assert not source.exists()


def test_an_attempt_that_will_be_retried_keeps_the_upload(project, owner, monkeypatch):
    dataset = upload(project, owner)
    source = Path(settings.MEDIA_ROOT) / dataset.source_file

    def database_away(*args, **kwargs):
        raise DatabaseError("gone")

    monkeypatch.setattr(ingesting, "_create_columns", database_away)
    with pytest.raises(DatabaseError):  # the task retries on this
        dataset_ingest(dataset_id=dataset.pk)
    assert source.read_bytes() == CSV
    monkeypatch.undo()
    dataset = dataset_ingest(dataset_id=dataset.pk)  # the retry finds its upload
    assert dataset.status == Dataset.Status.READY
    assert not source.exists()
