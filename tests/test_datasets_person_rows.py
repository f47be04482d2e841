"""The person-rows copy's life (datasets.services.person_rows).

Confirming a person-level unit asks for the copy after the commit (a real worker
makes it); the build is idempotent and a release reads the copy; a row-level or
unconfirmed unit, or storage that is not the local disk, gets none; changing the
ID column removes it, and so does deleting the dataset; a dataset registered in
place gets its copy in dpportal's own storage (under the dataset's prefix, which
its deletion removes), its location untouched.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datasets import dispatch, person_rows
from datasets.models import Dataset
from datasets.services import (
    dataset_confirm_unit,
    dataset_declare,
    dataset_delete,
    dataset_ingest,
    dataset_person_rows_build,
    dataset_register_external,
)
from releases import compute, lifecycle
from releases.compute import person_rows as copy_path
from tests.conftest import wait_for
from tests.releases_support import REGIONS, make_dataset, submitted
from tests.test_datasets_register import declare, fresh, grant, table

COLUMNS = {
    "person": {"kind": "excluded"},
    "region": {"kind": "categorical", "categories": REGIONS, "missing": "category"},
    "age": {"kind": "numeric", "lower": "0", "upper": "100", "bin_edges": "0,18,40,65,100"},
    "income": {"kind": "numeric", "lower": "0", "upper": "150000"},
    "secret": {"kind": "excluded"},
}


@pytest.fixture
def sent(monkeypatch):
    """The datasets whose copy was asked for (the task is not sent)."""
    asked: list[int] = []
    monkeypatch.setattr(
        dispatch, "dataset_person_rows_send", lambda *, dataset_id: asked.append(dataset_id)
    )
    return asked


def person_dataset(project, owner, **kwargs) -> Dataset:
    return make_dataset(
        project=project, owner=owner, id_column="person", bound=2, people=1500, **kwargs
    )


@pytest.mark.django_db
def test_confirming_a_person_unit_asks_for_the_copy_after_commit(
    project, owner, sent, django_capture_on_commit_callbacks
):
    dataset = person_dataset(project, owner, unit_confirmed=False)
    with django_capture_on_commit_callbacks(execute=True):
        dataset_confirm_unit(
            dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=2
        )
        assert sent == []  # not before the commit
    assert sent == [dataset.pk]
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    with django_capture_on_commit_callbacks(execute=True):  # a fresh copy: nothing to ask
        dataset_confirm_unit(
            dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=2
        )
    assert sent == [dataset.pk]


@pytest.mark.django_db
def test_the_copy_is_made_once_and_a_release_reads_it(project, owner, reviewer):
    dataset = person_dataset(project, owner)
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    path = person_rows.local_path(dataset.pk)
    made = path.stat().st_mtime_ns
    assert dataset_person_rows_build(dataset_id=dataset.pk)  # fresh: left alone
    assert path.stat().st_mtime_ns == made
    assert pq.read_metadata(path).num_rows == 5000
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    assert copy_path.copy_for(release.spec) == str(path)
    assert compute.release_compute(release_id=release.pk) == "computed"


@pytest.mark.django_db
def test_no_copy_for_a_row_unit_an_unconfirmed_unit_or_remote_storage(
    project, owner, settings, sent, django_capture_on_commit_callbacks
):
    row = make_dataset(project=project, owner=owner, name="rows")
    unconfirmed = person_dataset(project, owner, name="unconfirmed", unit_confirmed=False)
    remote = person_dataset(project, owner, name="remote")
    for dataset in (row, unconfirmed):
        assert not dataset_person_rows_build(dataset_id=dataset.pk)
        assert not person_rows.local_path(dataset.pk).exists()
    settings.DPPORTAL_STORAGE = "s3"  # DuckDB, the copy's only reader, reads the local disk
    with django_capture_on_commit_callbacks(execute=True):
        dataset_confirm_unit(
            dataset=remote, actor=owner, unit="person", id_column="person", contribution_bound=2
        )
    assert sent == []  # not even asked for
    assert not dataset_person_rows_build(dataset_id=remote.pk)
    settings.DPPORTAL_STORAGE = "local"
    assert not person_rows.local_path(remote.pk).exists()


@pytest.mark.django_db
def test_changing_the_id_column_removes_the_copy(
    project, owner, sent, django_capture_on_commit_callbacks
):
    dataset = person_dataset(project, owner)
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    path = person_rows.local_path(dataset.pk)
    with django_capture_on_commit_callbacks(execute=True):
        dataset_declare(
            dataset=dataset, actor=owner, columns=COLUMNS, id_column="secret", unit="person"
        )
    assert not path.exists()
    assert sent == [dataset.pk]  # and a copy for the new ID column is asked for
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    meta = pq.read_metadata(path).metadata[person_rows.META_KEY]
    assert b'"id_column": "secret"' in meta


@pytest.mark.django_db
def test_deleting_the_dataset_deletes_the_copy(project, owner, django_capture_on_commit_callbacks):
    dataset = person_dataset(project, owner)
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    path = person_rows.local_path(dataset.pk)
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        dataset_delete(dataset=dataset, actor=owner)
    assert not path.exists()


def listing(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


@pytest.mark.django_db
def test_a_dataset_registered_in_place_gets_its_copy_in_our_storage(
    project, owner, reviewer, settings, tmp_path, sent, django_capture_on_commit_callbacks
):
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(table(700, 1), lake / "part-0.parquet")
    pq.write_table(table(500, 2), lake / "part-1.parquet")
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(lake)]
    grant(owner)
    owner = fresh(owner)
    before = listing(lake)
    with django_capture_on_commit_callbacks(execute=False):
        dataset = dataset_register_external(
            project=project, name="lake", location=str(lake), registered_by=owner
        )
    dataset = declare(dataset_ingest(dataset_id=dataset.pk), owner)
    assert dataset_person_rows_build(dataset_id=dataset.pk)
    path = person_rows.local_path(dataset.pk)
    assert path.is_relative_to(Path(settings.MEDIA_ROOT))
    assert listing(lake) == before  # nothing written where the data lives
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    assert copy_path.copy_for(release.spec) == str(path)
    assert compute.release_compute(release_id=release.pk) == "computed"
    assert listing(lake) == before


@pytest.mark.worker
def test_a_worker_makes_the_copy_when_the_unit_is_confirmed(celery_worker, project, owner):
    dataset = person_dataset(project, owner, unit_confirmed=False)
    dataset_confirm_unit(
        dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=2
    )
    path = person_rows.local_path(dataset.pk)
    wait_for(path.exists, timeout=60, message="the worker did not make the person-rows copy")
    assert copy_path.copy_for(
        {
            "dataset": dataset.pk,
            "parquet_file": dataset.parquet_file,
            "privacy_unit": {"id_column": "person", "contribution_bound": 2},
        }
    ) == str(path)
