"""Registering data in place never reaches dpportal's own storage (another project's
private files) and never tells what exists on the host or in other buckets.

Against a real S3 server (moto's, tests/s3_support.py) and the real local disk: the
request checks only the syntax, the allow-list and dpportal's own storage (both
directions, after normalisation); the worker lists, within DPPORTAL_EXTERNAL_MAX_FILES,
and records the outcome on the dataset. "Not allowed", "not found", "cannot be read"
and "holds no Parquet" are one message.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import Permission
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from datasets import locations, storage
from datasets.checks import ROOT_OVERLAPS_MEDIA, S3_ROOT_INVALID, S3_ROOT_OVERLAPS_STORAGE
from datasets.ingest.common import IngestRejected
from datasets.models import Dataset
from datasets.services import (
    dataset_confirm_unit,
    dataset_declare,
    dataset_ingest,
    dataset_register_external,
)
from dpportal.catalogues import compile_all
from dpportal.errors import ValidationFailed
from releases import compute, lifecycle
from tests.releases_support import submitted
from tests.s3_support import s3_client

ONE_MESSAGE = locations.UNAVAILABLE


def grant(user):
    user.user_permissions.add(Permission.objects.get(codename="register_external"))
    return type(user).objects.get(pk=user.pk)  # has_perm caches the permissions


def check_ids() -> list[str]:
    return [e.id for e in run_checks() if e.id.startswith("datasets.")]


def parquet_bytes(data: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink)
    return sink.getvalue().to_pybytes()


def small() -> pa.Table:
    return pa.table({"person": list(range(40)), "age": [i % 90 for i in range(40)]})


def refusal(project, owner, location: str) -> str:
    """The message of a registration refused in the request (nothing is created)."""
    with pytest.raises(ValidationFailed) as caught:
        dataset_register_external(project=project, name="x", location=location, registered_by=owner)
    assert not Dataset.objects.filter(name="x").exists()
    return caught.value.reader_message()


def worker_outcome(project, owner, location: str) -> Dataset:
    """Registered in the request (nothing listed there), then listed by the ingest."""
    dataset = dataset_register_external(
        project=project, name="w", location=location, registered_by=owner
    )
    assert dataset.status == Dataset.Status.UPLOADED
    return dataset_ingest(dataset_id=dataset.pk)


# --- S3 ------------------------------------------------------------------------------


@pytest.fixture
def shared_bucket(s3_storage, settings):
    """dpportal's storage under tenant/dp/ of its bucket, holding another project's
    private Parquet; a neighbour prefix (tenant/lake/) that is not dpportal's."""
    endpoint, bucket = s3_storage["DPPORTAL_S3_ENDPOINT_URL"], s3_storage["DPPORTAL_S3_BUCKET"]
    settings.DPPORTAL_S3_PREFIX = "tenant/dp"
    client = s3_client(endpoint)
    body = parquet_bytes(small())
    client.put_object(Bucket=bucket, Key="tenant/dp/datasets/7/data.parquet", Body=body)
    client.put_object(Bucket=bucket, Key="tenant/lake/part-0.parquet", Body=body)
    return endpoint, bucket


@pytest.mark.django_db
def test_s3_locations_touching_our_storage_are_refused_in_the_request(
    project, owner, shared_bucket
):
    endpoint, bucket = shared_bucket
    owner = grant(owner)
    for location in [
        f"s3://{bucket}",  # the bucket root
        f"s3://{bucket}/",
        f"S3://{bucket.upper()}/",  # scheme and bucket case
        f"s3://{bucket}/tenant/",  # the parent prefix
        f"s3://{bucket}/tenant",
        f"s3://{bucket}/tenant/dp/",  # our own prefix
        f"s3://{bucket}/tenant/dp",
        f"s3://{bucket}/tenant/dp/datasets/",  # inside it
        f"s3://{bucket}/tenant/dp/datasets/7/data.parquet",
        f"s3://{bucket}/tenant/%64p/datasets/",  # percent-encoded
        f"s3://{bucket}/%74enant/",
    ]:
        assert refusal(project, owner, location) == ONE_MESSAGE, location
    for location in [
        f"s3://{bucket}/tenant//dp/",  # duplicate slash
        f"s3://{bucket}/tenant/x/../dp/",  # '..'
        f"s3://{bucket}/tenant/./dp/",
    ]:
        assert "no '..', '.' or empty parts" in refusal(project, owner, location), location


@pytest.mark.django_db
def test_a_neighbour_prefix_in_our_bucket_is_allowed(project, owner, shared_bucket):
    """Segments are compared, not strings: tenant/lake/ is not tenant/dp/."""
    endpoint, bucket = shared_bucket
    dataset = worker_outcome(project, grant(owner), f"s3://{bucket}/tenant/lake/")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason


@pytest.mark.django_db
def test_s3_missing_and_forbidden_give_one_message(project, owner, shared_bucket):
    endpoint, bucket = shared_bucket
    owner = grant(owner)
    forbidden = refusal(project, owner, f"s3://{bucket}/tenant/dp/datasets/")
    missing_bucket = worker_outcome(project, owner, "s3://no-such-bucket-4f1c/data/")
    missing_prefix = worker_outcome(project, owner, f"s3://{bucket}/tenant/nothing/")
    assert missing_bucket.status == missing_prefix.status == Dataset.Status.FAILED
    assert forbidden == missing_bucket.failure_reason == missing_prefix.failure_reason
    assert forbidden == ONE_MESSAGE


@pytest.mark.django_db
def test_the_worker_refuses_a_stored_location_inside_our_storage(project, owner, shared_bucket):
    """A row that names our storage (made by hand, or before a setting changed) is
    refused when listed, whatever the request checked."""
    endpoint, bucket = shared_bucket
    dataset = Dataset.objects.create(
        project=project, name="sneaky", uploaded_by=owner, external_kind="s3",
        external_location=f"{bucket}/tenant/",
    )  # fmt: skip
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert (dataset.status, dataset.failure_reason) == (Dataset.Status.FAILED, ONE_MESSAGE)
    assert not dataset.columns.exists()


@pytest.mark.django_db
def test_s3_listing_stops_after_the_limit(project, owner, s3_storage, settings, monkeypatch):
    endpoint, bucket = s3_storage["DPPORTAL_S3_ENDPOINT_URL"], s3_storage["DPPORTAL_S3_BUCKET"]
    lake = f"{bucket}-many"
    client = s3_client(endpoint)
    client.create_bucket(Bucket=lake)
    body = parquet_bytes(small())
    for i in range(30):
        client.put_object(Bucket=lake, Key=f"many/part-{i:02}.parquet", Body=body)
    settings.DPPORTAL_EXTERNAL_MAX_FILES = 3
    listed: list[int] = []
    real_client = storage.s3_client

    def counting_client():
        made = real_client()
        made.meta.events.register(
            "after-call.s3.ListObjectsV2",
            lambda parsed, **kwargs: listed.append(len(parsed.get("Contents", []))),
        )
        return made

    monkeypatch.setattr(storage, "s3_client", counting_client)
    dataset = worker_outcome(project, grant(owner), f"s3://{lake}/many/")
    assert dataset.status == Dataset.Status.FAILED
    assert "more than 3 files and folders" in dataset.failure_reason
    assert sum(listed) <= 4  # limit + 1 keys asked for, not the 30 there


@pytest.mark.django_db
def test_the_s3_allow_list_when_set(project, owner, shared_bucket, settings):
    endpoint, bucket = shared_bucket
    owner = grant(owner)
    settings.DPPORTAL_EXTERNAL_S3_ROOTS = [f"s3://{bucket.upper()}/tenant/lake/"]
    assert not [e for e in run_checks() if e.id.startswith("datasets.")]
    for location in [f"s3://{bucket}/tenant/", f"s3://other-{bucket}/tenant/lake/"]:
        assert refusal(project, owner, location) == ONE_MESSAGE, location
    dataset = worker_outcome(project, owner, f"s3://{bucket}/tenant/lake/part-0.parquet")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    settings.DPPORTAL_EXTERNAL_S3_ROOTS = [f"s3://{bucket}/tenant/"]  # holds our prefix
    assert check_ids() == [S3_ROOT_OVERLAPS_STORAGE]
    assert refusal(project, owner, f"s3://{bucket}/tenant/dp/") == ONE_MESSAGE
    settings.DPPORTAL_EXTERNAL_S3_ROOTS = ["https://example.org/x"]  # fails closed
    assert check_ids() == [S3_ROOT_INVALID]
    assert refusal(project, owner, f"s3://{bucket}/tenant/lake/") == ONE_MESSAGE


# --- local -----------------------------------------------------------------------------


@pytest.fixture
def disk(settings, tmp_path):
    """An allowed root (lake/) with data, a folder outside it holding a file, and
    dpportal's own folder (MEDIA_ROOT) holding another project's private Parquet."""
    root, outside, media = tmp_path / "lake", tmp_path / "outside", tmp_path / "media"
    for folder in (root / "survey", outside, media / "datasets" / "7"):
        folder.mkdir(parents=True)
    pq.write_table(small(), root / "survey" / "part-0.parquet")
    pq.write_table(small(), outside / "secret.parquet")
    pq.write_table(small(), media / "datasets" / "7" / "data.parquet")
    settings.MEDIA_ROOT = str(media)
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(root)]
    return root, outside, media


@pytest.mark.django_db
def test_a_root_containing_our_folder_fails_the_system_check_and_registration(
    project, owner, disk, settings
):
    root, outside, media = disk
    owner = grant(owner)
    assert not [e for e in run_checks() if e.id == ROOT_OVERLAPS_MEDIA]
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(root), str(media.parent)]  # contains MEDIA_ROOT
    errors = [e for e in run_checks() if e.id == ROOT_OVERLAPS_MEDIA]
    assert len(errors) == 1 and str(media.parent) in errors[0].msg
    with pytest.raises(SystemCheckError, match=ROOT_OVERLAPS_MEDIA):
        call_command("check")
    # registration refuses our folder and what contains it, whatever the roots say
    for location in [media.parent, media, media / "datasets", media / "datasets" / "7"]:
        assert refusal(project, owner, str(location)) == ONE_MESSAGE, location
    assert refusal(project, owner, f"{media}//datasets/7/") == ONE_MESSAGE
    # a root inside our folder is refused too
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(media / "datasets")]
    assert [e.id for e in run_checks() if e.id == ROOT_OVERLAPS_MEDIA] == [ROOT_OVERLAPS_MEDIA]
    assert refusal(project, owner, str(media / "datasets" / "7")) == ONE_MESSAGE
    # elsewhere under the wide root is still allowed
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(media.parent)]
    dataset = worker_outcome(project, owner, str(outside))
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason


@pytest.mark.django_db
def test_symlinks_and_dots_into_our_folder_or_out_of_the_roots_are_refused(project, owner, disk):
    root, outside, media = disk
    owner = grant(owner)
    os.symlink(media, root / "to-media")
    os.symlink(outside / "secret.parquet", root / "secret.parquet")
    for location in [
        root / "to-media",  # a symlink to our folder
        root / "to-media" / "datasets" / "7" / "data.parquet",
        root / "secret.parquet",  # a symlink leading out of the roots
        f"{root}/../media/datasets/7/data.parquet",  # '..'
        f"{root}/survey/../../outside/secret.parquet",
        f"{root}/../outside/",
    ]:
        assert refusal(project, owner, str(location)) == ONE_MESSAGE, location
    # '..', duplicate and trailing slashes that stay inside the root are fine
    dataset = worker_outcome(project, owner, f"{root}/survey/..//survey/")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert dataset.external_location == str((root / "survey").resolve())


@pytest.mark.django_db
def test_a_folder_holding_a_symlink_into_our_folder_fails_in_the_worker(project, owner, disk):
    root, outside, media = disk
    owner = grant(owner)
    os.symlink(media / "datasets" / "7" / "data.parquet", root / "survey" / "copy.parquet")
    dataset = worker_outcome(project, owner, str(root / "survey"))
    assert (dataset.status, dataset.failure_reason) == (Dataset.Status.FAILED, ONE_MESSAGE)
    assert not dataset.columns.exists()


@pytest.mark.django_db
def test_local_missing_and_forbidden_give_one_message(project, owner, disk):
    root, outside, media = disk
    owner = grant(owner)
    forbidden = refusal(project, owner, str(outside / "secret.parquet"))
    missing_outside = refusal(project, owner, str(outside / "nothing.parquet"))
    own = refusal(project, owner, str(media / "datasets" / "7" / "data.parquet"))
    missing_inside = worker_outcome(project, owner, str(root / "nothing"))
    empty = root / "empty"
    empty.mkdir()
    no_parquet = worker_outcome(project, owner, str(empty))
    assert missing_inside.status == no_parquet.status == Dataset.Status.FAILED
    assert forbidden == missing_outside == own == ONE_MESSAGE
    assert missing_inside.failure_reason == no_parquet.failure_reason == ONE_MESSAGE


@pytest.mark.django_db
def test_the_request_lists_nothing(project, owner, disk, monkeypatch, client):
    """The page answers at once for a folder of any size: the worker lists it."""
    root, outside, media = disk

    def no_listing(location):
        raise AssertionError("listed in the request")

    monkeypatch.setattr(locations, "list_files", no_listing)
    client.force_login(grant(owner))
    response = client.post(
        reverse("datasets:register", args=[project.slug]),
        {"name": "lake", "location": str(root / "survey")},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Dataset.objects.get(name="lake").status == Dataset.Status.UPLOADED


@pytest.mark.django_db
def test_local_listing_stops_after_the_limit(project, owner, disk, settings, monkeypatch):
    root, outside, media = disk
    many = root / "many"
    many.mkdir()
    for i in range(50):
        (many / f"part-{i:02}.parquet").write_bytes(b"")
    settings.DPPORTAL_EXTERNAL_MAX_FILES = 5
    seen: list[str] = []
    real_scandir = os.scandir

    class Counting:
        def __init__(self, path):
            self.inner = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def __iter__(self):
            for entry in self.inner:
                seen.append(entry.name)
                yield entry

    monkeypatch.setattr(locations.os, "scandir", Counting)
    dataset = worker_outcome(project, grant(owner), str(many))
    assert dataset.status == Dataset.Status.FAILED
    assert "more than 5 files and folders" in dataset.failure_reason
    assert len(seen) == 6  # stopped at the sixth entry, not after all 50
    with pytest.raises(IngestRejected):
        locations.list_files(locations.Location(storage.EXTERNAL_LOCAL, str(many)))


# --- a swapped local file ----------------------------------------------------------------


def fixed_size(ages: list[int]) -> pa.Table:
    return pa.table(
        {"person": pa.array(range(len(ages)), pa.int64()), "age": pa.array(ages, pa.int64())}
    )


def write_fixed(table: pa.Table, path: Path) -> None:
    """Plain, uncompressed, without statistics: the same size whatever the values."""
    pq.write_table(table, path, compression="none", use_dictionary=False, write_statistics=False)


def approved_on(project, owner, reviewer, location: Path):
    dataset = worker_outcome(project, owner, str(location))
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    columns = {
        "person": {"kind": "excluded"},
        "age": {"kind": "numeric", "lower": "0", "upper": "100"},
    }
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=columns, id_column="person", contribution_bound=1
    )
    dataset = dataset_confirm_unit(
        dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=1
    )
    statistics = [{"kind": "count"}, {"kind": "sum", "column": "age"}]
    release = submitted(project=project, owner=owner, dataset=dataset, statistics=statistics)
    return lifecycle.release_approve(release=release, reviewer=reviewer)


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["replaced", "rewritten"])
def test_a_file_swapped_with_size_and_mtime_kept_is_not_computed(
    project, owner, reviewer, disk, tmp_path, how
):
    root, outside, media = disk
    owner = grant(owner)
    folder = root / "swap"
    folder.mkdir()
    target = folder / "part-0.parquet"
    write_fixed(fixed_size([30] * 200), target)
    release = approved_on(project, owner, reviewer, folder)
    before = target.stat()
    other = tmp_path / "other.parquet"
    write_fixed(fixed_size([99] * 200), other)
    assert other.stat().st_size == before.st_size
    if how == "replaced":  # a new file renamed over the old one
        os.replace(other, target)
    else:  # the same inode overwritten in place
        target.write_bytes(other.read_bytes())
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(storage.StorageError, match="rewritten or replaced"):
        storage.check_external_unchanged(release.spec["external"])
    with pytest.raises(compute.SpecMismatch) as caught:
        compute.release_compute(release_id=release.pk)
    assert "registered in place was changed, replaced" in caught.value.reader_message()


@pytest.mark.django_db
def test_an_untouched_registered_file_computes(project, owner, reviewer, disk):
    root, outside, media = disk
    folder = root / "same"
    folder.mkdir()
    write_fixed(fixed_size([30] * 200), folder / "part-0.parquet")
    release = approved_on(project, grant(owner), reviewer, folder)
    assert compute.release_compute(release_id=release.pk) == "computed"


@pytest.mark.django_db
def test_the_page_and_the_api_answer_a_forbidden_path_with_the_one_message(
    project, owner, disk, client
):
    root, outside, media = disk
    compile_all()  # the Chinese catalogue, as installed
    owner = grant(owner)
    client.force_login(owner)
    api = APIClient()
    api.force_authenticate(owner)
    for location in [str(outside / "secret.parquet"), str(outside / "nothing.parquet")]:
        body = {"name": "lake", "location": location}
        page = client.post(reverse("datasets:register", args=[project.slug]), body)
        assert page.status_code == 400
        assert escape(ONE_MESSAGE) in page.content.decode()
        answer = api.post(f"/api/v1/projects/{project.slug}/datasets/register/", body, "json")
        assert answer.status_code == 400
        assert answer.json()["error"]["message"] == ONE_MESSAGE
        zh = api.post(
            f"/api/v1/projects/{project.slug}/datasets/register/", body, "json",
            HTTP_ACCEPT_LANGUAGE="zh-CN",
        )  # fmt: skip
        assert zh.json()["error"]["message"].startswith("无法登记该位置")
    assert not Dataset.objects.exists()
