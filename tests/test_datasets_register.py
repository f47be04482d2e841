"""Registering existing Parquet in place, against a real S3 server
(moto's, tests/s3_support.py), the real allow-list on the local disk, and a real worker."""

from __future__ import annotations

import os
import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from rest_framework.test import APIClient

from datasets import storage
from datasets.models import Column, Dataset
from datasets.services import (
    dataset_confirm_unit,
    dataset_declare,
    dataset_delete,
    dataset_ingest,
    dataset_register_external,
)
from dpportal.errors import PermissionDenied, ValidationFailed
from releases import compute, lifecycle
from releases.compute import duckdb_engine
from releases.compute.run import release_aggregate_numpy
from releases.models import Release
from tests.conftest import wait_for
from tests.releases_support import submitted
from tests.s3_support import bucket_keys, s3_client

REGIONS = ["north", "south", "east", "west"]
V1 = "/api/v1"


def table(rows: int, seed: int) -> pa.Table:
    gen = random.Random(seed)  # test DATA, not noise
    return pa.table(
        {
            "person": pa.array([f"p{gen.randint(0, rows // 2)}" for _ in range(rows)]),
            "region": pa.array([gen.choice(REGIONS) for _ in range(rows)]),
            "age": pa.array([gen.randint(0, 99) for _ in range(rows)], type=pa.int64()),
            "income": pa.array([gen.uniform(0, 90000) for _ in range(rows)]),
        }
    )


def put_parquet(endpoint: str, bucket: str, key: str, data: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, row_group_size=500)
    s3_client(endpoint).put_object(Bucket=bucket, Key=key, Body=sink.getvalue().to_pybytes())


def grant(user) -> None:
    user.user_permissions.add(Permission.objects.get(codename="register_external"))


def fresh(user):
    return type(user).objects.get(pk=user.pk)  # has_perm caches the permissions


@pytest.fixture
def lake(s3_storage):
    """A second bucket (the owner's data lake) with two Parquet files of one schema."""
    endpoint = s3_storage["DPPORTAL_S3_ENDPOINT_URL"]
    bucket = s3_storage["DPPORTAL_S3_BUCKET"] + "-lake"
    s3_client(endpoint).create_bucket(Bucket=bucket)
    put_parquet(endpoint, bucket, "survey/part-0.parquet", table(1500, 1))
    put_parquet(endpoint, bucket, "survey/part-1.parquet", table(1200, 2))
    return endpoint, bucket


def declare(dataset: Dataset, owner) -> Dataset:
    columns = {
        "person": {"kind": "excluded"},
        "region": {"kind": "categorical", "categories": REGIONS, "missing": "category"},
        "age": {"kind": "numeric", "lower": "0", "upper": "100", "bin_edges": "0,18,40,65,100"},
        "income": {"kind": "numeric", "lower": "0", "upper": "150000"},
    }
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=columns, id_column="person", contribution_bound=2
    )
    return dataset_confirm_unit(
        dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=2
    )


# --- refusals: nothing created -----------------------------------------------------------


@pytest.mark.django_db
def test_without_the_permission_page_api_and_service_refuse(project, owner, lake, client):
    endpoint, bucket = lake
    with pytest.raises(PermissionDenied):
        dataset_register_external(
            project=project, name="x", location=f"s3://{bucket}/survey/", registered_by=owner
        )
    client.force_login(owner)
    url = reverse("datasets:register", args=[project.slug])
    assert "needs a permission" in client.get(url).content.decode()
    response = client.post(url, {"name": "x", "location": f"s3://{bucket}/survey/"})
    assert response.status_code == 403
    api = APIClient()
    api.force_authenticate(owner)
    response = api.post(
        f"{V1}/projects/{project.slug}/datasets/register/",
        {"name": "x", "location": f"s3://{bucket}/survey/"},
        format="json",
    )
    assert response.status_code == 403, response.content
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_a_reviewer_with_the_permission_is_still_refused(project, reviewer, lake):
    grant(reviewer)
    with pytest.raises(PermissionDenied):
        dataset_register_external(
            project=project, name="x", location=f"s3://{lake[1]}/survey/",
            registered_by=fresh(reviewer),
        )  # fmt: skip
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_mixed_schemas_nested_and_unsupported_columns_fail_in_the_worker(project, owner, lake):
    """The request lists and reads nothing: the worker's profile refuses the data, and
    the dataset fails with the reason."""
    endpoint, bucket = lake
    grant(owner)
    owner = fresh(owner)
    put_parquet(endpoint, bucket, "mixed/a.parquet", pa.table({"x": [1, 2]}))
    put_parquet(endpoint, bucket, "mixed/b.parquet", pa.table({"x": ["a", "b"]}))
    put_parquet(endpoint, bucket, "nested/a.parquet", pa.table({"x": [[1], [2, 3]]}))
    put_parquet(endpoint, bucket, "flag/a.parquet", pa.table({"x": [True, False]}))
    cases = {
        "mixed/": "do not all have the same columns",
        "nested/": "is nested",
        "flag/": "only integer, floating point and text",
        "nothing-here/": "Nothing can be registered at that location",
    }
    for prefix, message in cases.items():
        dataset = dataset_register_external(
            project=project, name=prefix, location=f"s3://{bucket}/{prefix}", registered_by=owner
        )
        dataset = dataset_ingest(dataset_id=dataset.pk)
        assert dataset.status == Dataset.Status.FAILED, prefix
        assert message in dataset.failure_reason, (prefix, dataset.failure_reason)
        assert not dataset.columns.exists()


@pytest.mark.django_db
def test_local_paths_only_inside_the_allow_list(project, owner, settings, tmp_path):
    grant(owner)
    owner = fresh(owner)
    root, outside = tmp_path / "lake", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    pq.write_table(table(50, 3), outside / "secret.parquet")
    pq.write_table(table(50, 4), root / "ok.parquet")

    def register(location: str) -> Dataset:
        return dataset_register_external(
            project=project, name="x", location=location, registered_by=owner
        )

    settings.DPPORTAL_EXTERNAL_ROOTS = []
    with pytest.raises(ValidationFailed, match="turned off"):
        register(str(root))
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(root)]
    with pytest.raises(ValidationFailed, match="Nothing can be registered"):
        register(str(outside))
    with pytest.raises(ValidationFailed, match="Nothing can be registered"):
        register(f"{root}/../outside/secret.parquet")
    os.symlink(outside / "secret.parquet", root / "link.parquet")
    with pytest.raises(ValidationFailed, match="Nothing can be registered"):
        register(str(root / "link.parquet"))
    with pytest.raises(ValidationFailed, match="absolute"):
        register("lake/ok.parquet")
    assert not Dataset.objects.exists()
    # the folder holds a symlink leading out: accepted in the request, refused by the worker
    dataset = dataset_ingest(dataset_id=register(str(root)).pk)
    assert dataset.status == Dataset.Status.FAILED
    assert "Nothing can be registered" in dataset.failure_reason
    (root / "link.parquet").unlink()
    dataset = register(str(root))
    assert (dataset.external_kind, dataset.external_location) == ("local", str(root.resolve()))
    assert dataset_ingest(dataset_id=dataset.pk).status == Dataset.Status.READY


# --- in process: profile, compute, a changed location, deletion -------------------------


@pytest.mark.django_db
def test_registered_in_place_is_profiled_and_computed_without_writing_there(
    project, owner, reviewer, lake, django_capture_on_commit_callbacks
):
    endpoint, bucket = lake
    grant(owner)
    owner = fresh(owner)
    before = bucket_keys(endpoint, bucket)
    with django_capture_on_commit_callbacks(execute=False):
        dataset = dataset_register_external(
            project=project, name="lake", location=f"s3://{bucket}/survey/", registered_by=owner
        )
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert dataset.parquet_file == ""
    profile = Column.objects.get(dataset=dataset, name="region").profile
    assert profile  # profiled over both files (its contents are private)
    assert [c.suggested_type for c in dataset.columns.order_by("position")] == [
        "string", "string", "integer", "float",
    ]  # fmt: skip
    dataset = declare(dataset, owner)
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    files = release.spec["external"]["files"]
    assert [f["path"] for f in files] == [
        f"{bucket}/survey/part-0.parquet", f"{bucket}/survey/part-1.parquet",
    ]  # fmt: skip
    # several S3 objects are read by DuckDB as Arrow streams (releases.compute.arrow_source):
    # the same aggregates as the numpy readers (the oracle) on the same frozen files, with L
    # large enough that the two paths' different keyed choices of rows drop nothing
    unit = {**release.spec["privacy_unit"], "contribution_bound": 10**6}
    spec = {**release.spec, "privacy_unit": unit}
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    on_duckdb = duckdb_engine.run_plan(spec, plan)
    oracle = release_aggregate_numpy(spec=spec, release_id=release.pk)
    assert [repr(a) for a in on_duckdb] == [repr(a) for a in oracle]
    assert compute.release_compute(release_id=release.pk) == "computed"
    # the numpy path (the oracle) reads the same frozen files: 2700 rows in all
    assert storage.open_release_data(release.spec).num_rows == 2700
    assert bucket_keys(endpoint, bucket) == before  # nothing written there


@pytest.mark.django_db
def test_deleting_a_registered_dataset_leaves_its_files(
    project, owner, lake, django_capture_on_commit_callbacks
):
    endpoint, bucket = lake
    grant(owner)
    before = bucket_keys(endpoint, bucket)
    dataset = dataset_register_external(
        project=project, name="lake", location=f"s3://{bucket}/survey/",
        registered_by=fresh(owner),
    )  # fmt: skip
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.READY
    with django_capture_on_commit_callbacks(execute=True):
        dataset_delete(dataset=dataset, actor=owner)
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert bucket_keys(endpoint, bucket) == before


@pytest.mark.django_db
def test_a_location_changed_after_approval_is_a_spec_mismatch(project, owner, reviewer, lake):
    endpoint, bucket = lake
    grant(owner)
    dataset = dataset_register_external(
        project=project, name="lake", location=f"s3://{bucket}/survey/",
        registered_by=fresh(owner),
    )  # fmt: skip
    dataset = declare(dataset_ingest(dataset_id=dataset.pk), owner)
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    put_parquet(endpoint, bucket, "survey/part-2.parquet", table(300, 5))
    with pytest.raises(compute.SpecMismatch):
        compute.release_compute(release_id=release.pk)


# --- end to end with a real worker ----------------------------------------------------


@pytest.mark.worker
def test_register_profile_declare_compute_on_spark_publish_with_a_real_worker(
    project, owner, reviewer, lake, s3_storage, celery_workers, client
):
    """The issue's end to end: data registered in a bucket, computed by a real worker on
    the Spark backend (local[2]; executors read the bucket through pyarrow), published."""
    endpoint, bucket = lake
    grant(owner)
    worker = celery_workers.start(**s3_storage, DPPORTAL_SPARK_MASTER="local[2]")
    client.force_login(owner)
    response = client.post(
        reverse("datasets:register", args=[project.slug]),
        {"name": "lake survey", "location": f"s3://{bucket}/survey/"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    dataset = Dataset.objects.get(name="lake survey")
    assert client.get(response.url).status_code == 200  # the dataset's page
    wait_for(
        lambda: Dataset.objects.get(pk=dataset.pk).status == Dataset.Status.READY,
        timeout=60,
        message="the worker did not profile the registered data",
    )
    page = client.get(response.url).content.decode()
    assert "region" in page  # the profiled columns, for the owner to declare
    dataset = declare(Dataset.objects.get(pk=dataset.pk), owner)
    dataset.compute_backend = "spark"
    dataset.save(update_fields=["compute_backend"])
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    try:
        wait_for(lambda: Release.objects.get(pk=release.pk).status == "computed", timeout=240)
    except BaseException:
        print(worker.log())  # what the worker did, when it did not compute in time
        raise
    assert f"release {release.pk}: aggregating on spark" in worker.log()
    release = lifecycle.release_publish(release=Release.objects.get(pk=release.pk), actor=owner)
    client.logout()
    page = client.get(reverse("public:release", args=[project.slug, release.pk]))
    assert page.status_code == 200
    assert release.title in page.content.decode()


# --- the person bound over several files -----------------------------------------------


@pytest.mark.parametrize("bound", [1, 2, 3])
def test_each_person_keeps_min_L_rows_across_several_files(tmp_path, bound):
    """Row numbers restart in every file: the bound must still drop the right rows (a
    row dropped in one file must not take the same-numbered row of another with it)."""
    gen = random.Random(bound)  # test DATA, not noise
    people = [f"p{gen.randint(0, 9)}" for _ in range(90)]
    files = []
    for part in range(3):
        rows = range(part * 30, part * 30 + 30)
        path = tmp_path / f"part-{part}.parquet"
        data = {"k": list(rows), "person": [people[i] for i in rows]}
        pq.write_table(pa.table(data), path, row_group_size=7)
        etag = storage.local_fingerprint(path, path.stat())
        files.append({"path": str(path), "size": path.stat().st_size, "etag": etag})
    edges = [str(e) for e in range(len(people) + 1)]
    k = {"name": "k", "kind": "numeric", "missing": "drop", "bin_edges": edges}
    spec = {
        "parquet_file": "",
        "external": {"kind": "local", "location": str(tmp_path), "files": files},
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    (kept,) = duckdb_engine.run_plan(spec, plan)
    assert set(kept.tolist()) <= {0, 1}
    per_person = Counter(people[i] for i in np.flatnonzero(kept))
    rows_of = Counter(people)
    assert {p: per_person.get(p, 0) for p in rows_of} == {
        p: min(bound, n) for p, n in rows_of.items()
    }


@pytest.mark.django_db
def test_the_api_registers_with_the_permission_and_refuses_bad_input(project, owner, lake):
    endpoint, bucket = lake
    grant(owner)
    api = APIClient()
    api.force_authenticate(fresh(owner))
    url = f"{V1}/projects/{project.slug}/datasets/register/"
    response = api.post(url, {"name": "lake", "location": "s3://"}, format="json")
    assert response.status_code == 400, response.content
    assert not Dataset.objects.exists()
    response = api.post(url, {"name": "lake", "location": f"s3://{bucket}/survey/"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "uploaded"
    dataset = Dataset.objects.get()
    assert (dataset.external_kind, dataset.external_location) == ("s3", f"{bucket}/survey/")
    schema = api.get("/api/schema/")
    assert schema.status_code == 200 and b"datasets_register" in schema.content


@pytest.mark.django_db
def test_the_list_links_the_register_page_only_with_the_permission(project, owner, client):
    client.force_login(owner)
    url = reverse("datasets:list", args=[project.slug])
    register = reverse("datasets:register", args=[project.slug])
    assert register not in client.get(url).content.decode()
    grant(owner)
    assert register in client.get(url).content.decode()


@pytest.mark.django_db
def test_the_admin_cannot_point_a_dataset_at_another_location(project, owner, client):
    dataset = Dataset.objects.create(
        project=project, name="lake", uploaded_by=owner, external_kind="s3",
        external_location="lake/survey/",
    )  # fmt: skip
    admin = type(owner).objects.create_superuser("root-admin", "r@example.org", "x-pass-12345")
    client.force_login(admin)
    url = reverse("admin:datasets_dataset_change", args=[dataset.pk])
    data = {"name": "lake", "external_kind": "local", "external_location": "/etc"}
    data.update({"columns-TOTAL_FORMS": "0", "columns-INITIAL_FORMS": "0"})
    client.post(url, data)
    dataset.refresh_from_db()
    assert (dataset.external_kind, dataset.external_location) == ("s3", "lake/survey/")
