"""The storage layer against a real S3-protocol server (moto's, tests/s3_support.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from datasets import storage
from datasets.models import Dataset
from datasets.services import dataset_create, dataset_delete, dataset_ingest
from releases import compute, lifecycle
from releases.compute import duckdb_engine
from releases.models import Release, ReleaseResult
from tests.conftest import wait_for
from tests.releases_support import make_dataset, submitted
from tests.s3_support import bucket_keys

CSV = b"age,region\n" + b"".join(f"{i % 90},r{i % 4}\n".encode() for i in range(500))


def ingest(project, owner, content: bytes) -> Dataset:
    dataset = dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile("data.csv", content, content_type="text/csv"),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def local_parquet() -> list[Path]:
    return [p for p in Path(settings.MEDIA_ROOT).rglob("*") if "parquet" in p.name]


@pytest.mark.django_db
def test_ingest_with_s3_leaves_parquet_in_bucket_and_none_on_disk(
    project, owner, s3_storage, django_capture_on_commit_callbacks
):
    dataset = ingest(project, owner, CSV)
    assert dataset.status == Dataset.Status.READY
    bucket = s3_storage["DPPORTAL_S3_BUCKET"]
    assert bucket_keys(s3_storage["DPPORTAL_S3_ENDPOINT_URL"], bucket) == [dataset.parquet_file]
    assert local_parquet() == []
    table = storage.open_parquet(dataset.parquet_file).read()
    assert table.num_rows == 500
    assert table.column("age").to_pylist()[:3] == [0, 1, 2]

    with django_capture_on_commit_callbacks(execute=True):
        dataset_delete(dataset=dataset, actor=owner)
    assert bucket_keys(s3_storage["DPPORTAL_S3_ENDPOINT_URL"], bucket) == []


@pytest.mark.django_db
def test_failed_ingest_leaves_nothing_in_bucket(project, owner, s3_storage):
    dataset = ingest(project, owner, b"age,region\n")  # a header and no rows
    assert dataset.status == Dataset.Status.FAILED
    assert (
        bucket_keys(s3_storage["DPPORTAL_S3_ENDPOINT_URL"], s3_storage["DPPORTAL_S3_BUCKET"]) == []
    )
    assert local_parquet() == []


@pytest.mark.django_db
def test_stored_names_cannot_leave_the_storage(s3_storage):
    for name in ("/etc/passwd", "../x.parquet", "datasets/../../x", ""):
        with pytest.raises(storage.StorageError):
            storage.filesystem_and_path(name)


@pytest.mark.django_db
def test_output_stream_round_trip_and_exists(s3_storage):
    table = pa.table({"x": [1, 2, 3]})
    with storage.open_output_stream("datasets/9/data.parquet") as out:
        pq.write_table(table, out)
    assert storage.exists("datasets/9/data.parquet")
    assert storage.open_parquet("datasets/9/data.parquet").read().equals(table)
    storage.delete_dataset_files(9)
    assert not storage.exists("datasets/9/data.parquet")


def move_to_bucket(dataset: Dataset) -> None:
    local = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    storage.store_local_file(local, dataset.parquet_file)
    local.unlink()


@pytest.mark.worker
def test_release_computed_by_a_real_worker_from_the_bucket(
    project, owner, reviewer, s3_storage, celery_workers
):
    dataset = make_dataset(project=project, owner=owner, rows=3000)
    move_to_bucket(dataset)
    assert local_parquet() == []
    celery_workers.start(**s3_storage)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    wait_for(
        lambda: Release.objects.get(pk=release.pk).status == "computed",
        timeout=90,
        message="the worker did not compute the release from the bucket",
    )
    assert ReleaseResult.objects.filter(release=release).exists()


@pytest.mark.django_db
def test_compute_reads_the_bucket_in_process(project, owner, reviewer, s3_storage):
    dataset = make_dataset(project=project, owner=owner, rows=3000)
    move_to_bucket(dataset)
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    # object storage is read by DuckDB too, through pyarrow's Arrow streams
    assert duckdb_engine.duckdb_plan(release.spec) is not None
    assert compute.release_compute(release_id=release.pk) == "computed"


@pytest.mark.django_db
@pytest.mark.parametrize("id_column", ["", "person"])
def test_duckdb_gives_the_same_aggregates_from_the_bucket_as_from_the_disk(
    project, owner, reviewer, s3_storage, settings, id_column
):
    """The same rows, the same key: the same true aggregates, twelve times in a row (the
    fsspec route this replaces failed about once in twelve reads)."""
    from dpportal.privacy.rng import SeededTestRandom

    settings.DPPORTAL_STORAGE = "local"
    dataset = make_dataset(
        project=project, owner=owner, rows=6000, people=1500 if id_column else None,
        id_column=id_column, bound=2, row_group_size=1000,
    )  # fmt: skip
    release = submitted(project=project, owner=owner, dataset=dataset)
    spec = lifecycle.release_approve(release=release, reviewer=reviewer).spec
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None

    def aggregates(seed: int) -> list:
        out = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(seed))
        return [repr(v) for v in out]

    on_disk = [aggregates(seed) for seed in range(12)]
    settings.DPPORTAL_STORAGE = "s3"
    move_to_bucket(dataset)
    assert not (Path(settings.MEDIA_ROOT) / dataset.parquet_file).exists()
    assert [aggregates(seed) for seed in range(12)] == on_disk
    if id_column:  # the key chooses the rows: another key, other rows (so the seed is used)
        assert len(set(map(tuple, on_disk))) > 1


def test_check_connections_local(settings):
    out = io.StringIO()
    call_command("check_connections", stdout=out)
    text = out.getvalue()
    assert "ok: storage local" in text
    assert "spark: not configured" in text


@pytest.mark.django_db
def test_check_connections_s3_and_a_missing_bucket(settings, s3_storage):
    out = io.StringIO()
    call_command("check_connections", stdout=out)
    assert "ok: storage s3" in out.getvalue()
    assert "reachable, writable" in out.getvalue()

    settings.DPPORTAL_S3_BUCKET = "no-such-bucket-here"
    settings.DPPORTAL_SPARK_MASTER = "local[2]"  # a real local Spark session
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_connections", stdout=out)
    assert "FAILED: storage s3" in out.getvalue()
    assert "spark: ok: Spark 4.3.0 at local" in out.getvalue()


def _local_parquet_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if "parquet" in p.name)


@pytest.mark.django_db
def test_ingest_streams_its_parquet_to_the_bucket_with_nothing_staged_on_disk(tmp_path, s3_storage):
    """Every progress report of a multi-row-group ingest finds no Parquet (nor temporary
    file) on the local disk: the row groups leave for the bucket as they are written."""
    from datasets.ingest.common import IngestLimits
    from datasets.ingest.formats import ingest_file
    from datasets.ingest.writer import ROW_GROUP_ROWS

    rows = 2 * ROW_GROUP_ROWS + 7
    source = tmp_path / "big.csv"
    source.write_bytes(
        b"age,region\n" + b"".join(f"{i % 90},r{i % 4}\n".encode() for i in range(rows))
    )
    folder = tmp_path / "work"
    folder.mkdir()
    seen: list[list[str]] = []
    result = ingest_file(
        source=source,
        destination=folder / "data.parquet",
        limits=IngestLimits(10**9, 10**9, 10),
        on_progress=lambda _: seen.append(_local_parquet_files(folder)),
        sink=storage.parquet_sink("datasets/77/data.parquet"),
    )
    assert len(seen) > 2 and all(found == [] for found in seen)
    assert _local_parquet_files(folder) == []
    table = storage.open_parquet("datasets/77/data.parquet").read()
    assert table.num_rows == rows and table.column("age").to_pylist()[:3] == [0, 1, 2]
    assert [p.name for p in result.profiles] == ["age", "region"]


@pytest.mark.django_db
def test_an_ingest_refused_midway_deletes_what_it_streamed(tmp_path, s3_storage):
    from datasets.ingest.common import IngestLimits, IngestRejected
    from datasets.ingest.formats import ingest_file
    from datasets.ingest.writer import ROW_GROUP_ROWS

    body = b"".join(f"{i},r{i % 4}\n".encode() for i in range(2 * ROW_GROUP_ROWS))
    source = tmp_path / "bad.csv"
    source.write_bytes(b"age,region\n" + body + b"1,2,3\n")  # a ragged row at the end
    with pytest.raises(IngestRejected):
        ingest_file(
            source=source,
            destination=tmp_path / "data.parquet",
            limits=IngestLimits(10**9, 10**9, 10),
            sink=storage.parquet_sink("datasets/78/data.parquet"),
        )
    assert not storage.exists("datasets/78/data.parquet")
    endpoint, bucket = s3_storage["DPPORTAL_S3_ENDPOINT_URL"], s3_storage["DPPORTAL_S3_BUCKET"]
    assert bucket_keys(endpoint, bucket) == []
