"""Issue 17: why an upload or a release failed is shown in the reader's language.

The reason is decided in a Celery worker (whose language is nobody's) and stored, in
English and as message records (dpportal.messages); pages and the API translate the
records when they render. Rows stored before records were kept show their English.
"""

from __future__ import annotations

import html

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from datasets.models import Dataset
from datasets.services import dataset_create, dataset_ingest
from dpportal.catalogues import compile_all
from releases import lifecycle
from releases.models import Release
from releases.tasks import release_compute_task
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db

RAGGED_EN = (
    "A row has 3 fields but the header has 2: every row must have as many fields as the "
    "header (a cell containing the separator must be quoted)."
)
RAGGED_ZH = (
    "有一行有 3 个字段，而表头有 2 个：每一行的字段数都必须与表头相同（含有分隔符的单元格"
    "必须加引号）。"
)


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def refused(project, owner) -> Dataset:
    """A ragged CSV run through the worker's service (in English, as a worker is)."""
    dataset = dataset_create(
        project=project,
        name="ragged",
        uploaded_file=SimpleUploadedFile("r.csv", b"a,b\n1,2\n3,4,5\n6,7\n"),
        uploaded_by=owner,
        dispatch=False,
    )
    with translation.override("en"):
        dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def page(client, url: str, language: str | None) -> str:
    if language:
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    else:
        client.cookies.pop(settings.LANGUAGE_COOKIE_NAME, None)
    response = client.get(url)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_refused_upload_is_stored_in_english_with_its_record(project, owner):
    dataset = refused(project, owner)
    assert dataset.status == Dataset.Status.FAILED
    assert dataset.failure_reason == RAGGED_EN
    assert dataset.failure_record == [
        [
            "A row has %(actual)s fields but the header has %(expected)s: every row must have "
            "as many fields as the header (a cell containing the separator must be quoted).",
            {"actual": 3, "expected": 2},
        ]
    ]


def test_the_dataset_page_shows_the_reason_in_the_readers_language(client, project, owner):
    dataset = refused(project, owner)
    client.force_login(owner)
    url = reverse("datasets:detail", kwargs={"pk": dataset.pk})
    chinese = page(client, url, "zh-hans")
    assert f"文件未被接受：{RAGGED_ZH}" in chinese
    assert "A row has" not in chinese
    english = page(client, url, None)
    assert f"The file was not accepted: {RAGGED_EN}" in english
    assert "有一行" not in english


def test_the_status_json_and_the_api_translate_the_reason(client, project, owner):
    dataset = refused(project, owner)
    client.force_login(owner)
    status_url = reverse("datasets:status", kwargs={"pk": dataset.pk})
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    assert client.get(status_url).json()["failure_reason"] == RAGGED_ZH
    api = APIClient()
    api.force_authenticate(owner)
    for path in (f"/api/v1/datasets/{dataset.pk}/", f"/api/v1/datasets/{dataset.pk}/status/"):
        assert api.get(path).json()["failure_reason"] == RAGGED_EN, path
        zh = api.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN").json()
        assert zh["failure_reason"] == RAGGED_ZH, path


def test_a_row_failed_before_records_shows_its_stored_english(client, project, owner):
    dataset = refused(project, owner)
    Dataset.objects.filter(pk=dataset.pk).update(failure_record=[], failure_reason="Old reason.")
    client.force_login(owner)
    url = reverse("datasets:detail", kwargs={"pk": dataset.pk})
    assert "文件未被接受：Old reason." in page(client, url, "zh-hans")


def test_a_refusal_raised_during_a_request_is_shown_in_the_readers_language(project, owner):
    owner.user_permissions.add(Permission.objects.get(codename="register_external"))
    api = APIClient()
    api.force_authenticate(owner)
    url = f"/api/v1/projects/{project.slug}/datasets/register/"
    body = {"name": "lake", "location": "ftp://example.org/data"}
    en = api.post(url, body, format="json")
    zh = api.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert en.status_code == zh.status_code == 400
    assert (
        en.json()["error"]["message"] == "Only s3:// locations and local paths can be registered."
    )
    assert zh.json()["error"]["message"] == "只能登记 s3:// 位置和本地路径。"
    assert en.json()["error"]["code"] == zh.json()["error"]["code"] == "invalid"


def test_a_release_refused_by_the_worker_shows_its_reason_translated(
    client, project, owner, reviewer
):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    Release.objects.filter(pk=release.pk).update(spec={**release.spec, "epsilon": "5"})
    with translation.override("en"):
        release_compute_task.apply(args=[release.pk])
    release.refresh_from_db()
    english = "The release's stored specification does not match its approval."
    returned = "Nothing was spent: the reserved budget was returned."  # refused before reading
    assert (release.status, release.failure_reason) == ("failed", f"{english} {returned}")
    assert release.failure_record == [[english, {}], [returned, {}]]
    client.force_login(owner)
    url = reverse("releases:detail", kwargs={"release_id": release.pk})
    chinese = page(client, url, "zh-hans")
    assert "失败：该发布保存的规格与其批准时的规格不一致。" in chinese
    # the release's history (its "failed" event) says it in the reader's language too
    assert chinese.count("该发布保存的规格与其批准时的规格不一致。") == 2 and english not in chinese
    assert f"Failed: {english}" in page(client, url, None)
    api = APIClient()
    api.force_authenticate(owner)
    for path in (f"/api/v1/releases/{release.pk}/", f"/api/v1/releases/{release.pk}/status/"):
        assert api.get(path).json()["failure_reason"] == f"{english} {returned}", path
        zh = api.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN").json()
        assert zh["failure_reason"] == (
            "该发布保存的规格与其批准时的规格不一致。没有花费任何预算：预留的预算已退回。"
        ), path


def test_an_upload_warning_is_kept_as_a_record_and_read_in_the_readers_language(
    client, project, owner, reviewer
):
    """A warning (the first line looks like data) is written by the worker and read later."""
    body = b"r0,20,0\n" + b"".join(b"r%d,%d,%d\n" % (i, 20 + i % 50, i % 3) for i in range(1, 300))
    dataset = dataset_create(
        project=project, name="no-header", uploaded_by=owner, dispatch=False,
        uploaded_file=SimpleUploadedFile("h.csv", body),
    )  # fmt: skip
    with translation.override("en"):
        dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.READY
    client.force_login(owner)
    url = reverse("datasets:detail", kwargs={"pk": dataset.pk})
    assert "第一行可能是数据而不是表头：3 列中有 3 列的名称" in page(client, url, "zh-hans")
    assert "The first line may be data rather than a header" in page(client, url, None)
    api = APIClient()
    api.force_authenticate(reviewer)
    [english] = api.get(f"/api/v1/datasets/{dataset.pk}/").json()["warnings"]
    assert english.startswith("The first line may be data rather than a header")
    [chinese] = api.get(f"/api/v1/datasets/{dataset.pk}/", HTTP_ACCEPT_LANGUAGE="zh-CN").json()[
        "warnings"
    ]
    assert chinese.startswith("第一行可能是数据")
