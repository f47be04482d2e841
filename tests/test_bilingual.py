"""Owner texts in English and Simplified Chinese, and the names dpportal makes translated.

Each surface shows an owner's text in the reader's language and falls back to the
other; the API, the registry JSON and the downloads keep both; a name dpportal made
for an unnamed statistic is stored (and in the API) in English and made again in the
reader's language when a page renders.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from budgets.services import project_create
from datasets.services import dataset_create, dataset_declare, dataset_ingest
from dpportal import statistic_names
from dpportal.catalogues import compile_all
from releases import lifecycle, services
from releases.models import Release
from releases.services.freeze import release_spec_build
from tests.bilingual_support import (
    bilingual_dataset,
    bilingual_project,
    bilingual_release,
    proposed_chinese,
)
from tests.factories import PASSWORD
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

V1 = "/api/v1"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


@pytest.fixture
def chinese(monkeypatch):
    proposed_chinese(monkeypatch)


def api(user) -> APIClient:
    client = APIClient()
    token = client.post(
        f"{V1}/auth/token/", {"username": user.username, "password": PASSWORD}, format="json"
    )
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    return client


# --- the names dpportal makes -------------------------------------------------------------


@pytest.mark.parametrize(
    "parts, english",
    [
        ({"kind": "count", "columns": []}, "Rows"),
        ({"kind": "count", "columns": ["sex"], "category": "f"}, "Rows with sex = f"),
        ({"kind": "histogram", "columns": ["a", "b"]}, "Histogram of a x b"),
        ({"kind": "sum", "columns": ["income"]}, "Sum of income"),
        ({"kind": "argmax", "columns": ["region"]}, "Most common region"),
        ({"kind": "grouped_mean", "columns": ["w"], "groups": ["a", "b"]}, "Mean of w by a and b"),
        ({"kind": "stddev", "columns": ["w"]}, "Standard deviation of w"),
        ({"kind": "quantiles", "columns": ["w"], "quantiles": ["0.5"]}, "Median of w"),
        (
            {"kind": "quantiles", "columns": ["w"], "quantiles": ["0.25", "0.5", "0.75"]},
            "Median and quartiles of w",
        ),
    ],
)
def test_the_stored_names_stay_the_english_ones(parts, english):
    assert statistic_names.statistic_default_label(**parts) == english
    with translation.override("zh-hans"):  # the stored name never depends on the reader
        assert statistic_names.statistic_default_label(**parts) == english


def test_a_made_name_is_translated_with_the_columns_titles(chinese):
    stat = {"label": "Mean of income by region", "kind": "grouped_mean",
            "columns": ["income"], "group_columns": ["region"]}  # fmt: skip
    titles = {"income": "年收入", "region": "地区"}
    with translation.override("zh-hans"):
        assert statistic_names.label_of(stat, titles=titles) == "按地区分组的年收入均值"
        assert statistic_names.label_of({**stat, "label": "Pay by area"}) == "Pay by area"
        assert statistic_names.label_of({**stat, "label_zh": "各地区收入"}) == "各地区收入"
        assert statistic_names.cell_name("All rows") == "全部行"
        assert statistic_names.release_title(title="Untitled release") == "未命名的发布"
    with translation.override("en"):
        assert statistic_names.label_of(stat, titles={"income": "Pay"}) == "Mean of Pay by region"
        # only a Chinese label: the English reader sees it (fallback)
        assert statistic_names.label_of({**stat, "label": "", "label_zh": "收入"}) == "收入"


# --- input: API, forms, declaration ------------------------------------------------------


def test_release_api_takes_both_languages_and_returns_both(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    client = api(owner)
    body = builder_data(
        dataset,
        statistics=[
            {"kind": "count", "label": {"en": "People", "zh-hans": "人数"}},
            {"kind": "histogram", "column": "region", "label": "By region",
             "description": {"zh-hans": "每个地区"}},
            {"kind": "mean", "column": "age", "n_guess": 500},
        ],
        title={"en": "Wave 1", "zh-hans": "第一轮"},
        description={"zh-hans": "只有中文"},
    )  # fmt: skip
    response = client.post(
        f"{V1}/projects/{project.slug}/releases/create/", body, format="json", **ZH
    )
    assert response.status_code == 201, response.content
    doc = response.json()
    assert (doc["title"], doc["title_i18n"]) == ("Wave 1", {"en": "Wave 1", "zh-hans": "第一轮"})
    assert doc["description_i18n"] == {"en": "", "zh-hans": "只有中文"}
    labels = [(s["label"], s["label_i18n"]) for s in doc["statistics"]]
    assert labels == [
        ("People", {"en": "People", "zh-hans": "人数"}),
        ("By region", {"en": "By region", "zh-hans": ""}),
        ("Mean of age", {"en": "Mean of age", "zh-hans": ""}),  # made: English, even for zh
    ]
    assert doc["statistics"][1]["description_i18n"] == {"en": "", "zh-hans": "每个地区"}
    release = Release.objects.get(pk=doc["id"])
    assert (release.title_zh, release.statistics.get(position=0).label_zh) == ("第一轮", "人数")
    # what the builder reads back keeps both
    form = services.release_form_data(release=release)
    assert (form["title_zh"], form["statistics"][0]["label_zh"]) == ("第一轮", "人数")


@pytest.mark.parametrize(
    "title, message",
    [
        ({"en": "x", "fr": "y"}, "Give a string or an object"),
        ({"en": 3}, "Give a string or an object"),
        ({"zh-hans": "长" * 201}, "at most 200 characters"),
    ],
)
def test_release_api_refuses_malformed_texts_clearly(project, owner, title, message):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    response = api(owner).post(
        f"{V1}/projects/{project.slug}/releases/create/",
        builder_data(dataset, statistics=[{"kind": "count"}], title=title),
        format="json",
    )
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not Release.objects.exists()


def test_project_api_and_form_take_both_languages(client, owner):
    response = api(owner).post(
        f"{V1}/projects/",
        {"name": {"en": "Census", "zh-hans": "人口普查"}, "description": "Figures.",
         "privacy_unit_description": {"zh-hans": "一位受访者"}, "epsilon_cap": "1"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    doc = response.json()
    assert (doc["name"], doc["name_i18n"]) == ("Census", {"en": "Census", "zh-hans": "人口普查"})
    assert doc["privacy_unit_description_i18n"] == {"en": "", "zh-hans": "一位受访者"}

    client.force_login(owner)
    response = client.post(
        reverse("budgets:project_create"),
        {"name": "Survey", "name_zh": "调查", "description": "d", "description_zh": "说明",
         "privacy_unit_description": "p", "epsilon_cap": "1", "delta_cap": "0"},
    )  # fmt: skip
    assert response.status_code == 302
    page = client.get(response["Location"], **ZH).content.decode()
    assert "<h1>调查</h1>" in page and "说明" in page


def test_a_name_in_chinese_only_is_the_plain_name(owner):
    project = project_create(
        name="", name_zh="人口普查", description="", privacy_unit_description="",
        epsilon_cap="1", delta_cap="0", created_by=owner,
    )  # fmt: skip
    assert (project.name, project.name_zh, project.slug) == ("人口普查", "", "人口普查")


def test_column_labels_are_declared_and_kept_when_not_given(project, owner):
    dataset = dataset_ingest(
        dataset_id=dataset_create(
            project=project, name="s", uploaded_file=SimpleUploadedFile("s.csv", b"a,b\n1,x\n"),
            uploaded_by=owner, dispatch=False,
        ).pk
    )  # fmt: skip
    columns = {
        "a": {"kind": "numeric", "lower": "0", "upper": "9", "label": " Age ", "label_zh": "年龄"},
        "b": {"kind": "categorical", "categories": "x", "label": "‮evil"},
    }
    with pytest.raises(Exception) as refused:
        dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")
    assert "direction control" in str(refused.value.extra["errors"]["b"])
    columns["b"]["label"] = "Kind"
    dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")
    labels = dict(dataset.columns.values_list("name", "label_zh"))
    assert labels == {"a": "年龄", "b": ""}
    assert dataset.columns.get(name="a").label == "Age"
    # a declaration without labels (the API's, a codebook's) keeps them
    for spec in columns.values():
        spec.pop("label"), spec.pop("label_zh", None)
    dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")
    assert dataset.columns.get(name="a").label_zh == "年龄"


def test_dataset_texts_are_edited_by_owners_only(client, project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=100)
    url = reverse("datasets:texts", args=[dataset.pk])
    texts = {"name": "", "name_zh": "调查", "description": "About", "description_zh": "关于"}
    client.force_login(reviewer)
    assert client.post(url, texts).status_code == 403
    client.force_login(owner)
    assert client.post(url, texts).status_code == 302
    dataset.refresh_from_db()
    assert (dataset.name, dataset.name_zh, dataset.description_zh) == ("调查", "", "关于")
    page = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert "About" in page and "关于" not in page.split('id="dataset-texts"')[0]


# --- frozen and shown ---------------------------------------------------------------------


def test_the_spec_freezes_chinese_texts_only_when_given(project, owner):
    dataset = bilingual_dataset(project=bilingual_project(project), owner=owner)
    plain = services.release_save_draft(
        project=project, actor=owner,
        data=builder_data(dataset, statistics=[{"kind": "count", "label": "n"}]),
    )  # fmt: skip
    spec = release_spec_build(release=plain)
    assert set(spec["statistics"][0]) >= {"label"} and "label_zh" not in spec["statistics"][0]
    both = services.release_save_draft(
        project=project, actor=owner,
        data=builder_data(dataset, statistics=[
            {"kind": "histogram", "column": "region", "label": {"en": "n", "zh-hans": "数"}}
        ]),
    )  # fmt: skip
    entry = release_spec_build(release=both)["statistics"][0]
    assert entry["label_zh"] == "数"
    assert entry["columns"][0]["label"] == {"en": "Region", "zh-hans": "地区"}
    # a column without labels keeps the domain it had, so earlier specifications (and
    # their hashes, which the worker checks) are unchanged
    ages = services.release_save_draft(
        project=project, actor=owner,
        data=builder_data(dataset, statistics=[{"kind": "histogram", "column": "age"}]),
    )  # fmt: skip
    domain = release_spec_build(release=ages)["statistics"][0]["columns"][0]
    assert set(domain) == {
        "name", "kind", "type", "categories", "lower", "upper", "bin_edges", "missing"
    }  # fmt: skip


@pytest.fixture
def published(project, owner, reviewer):
    return bilingual_release(project=bilingual_project(project), owner=owner, reviewer=reviewer)


def _headings(html: str) -> list[str]:
    import re

    return re.findall(r'<h2 id="stat-\d+-heading">([^<]*)</h2>', html)


def test_the_public_page_in_each_language(client, published, chinese):
    url = reverse("public:release", args=[published.project.slug, published.pk])
    en = client.get(url).content.decode()
    assert "<h1>Census wave 1</h1>" in en and "Counts of the first wave." in en
    assert _headings(en) == [
        "Rows", "Mean of age", "Mean of Yearly income by Region", "Rows by region",
        "收入总和", "The most common region",
    ]  # fmt: skip
    assert "One bar per region." in en
    zh = client.get(url, **ZH).content.decode()
    assert "<h1>人口普查第一轮</h1>" in zh and "Counts of the first wave." in zh
    assert _headings(zh) == [
        "行数", "age的均值", "按地区分组的年收入均值", "各地区行数", "收入总和",
        "The most common region",
    ]  # fmt: skip
    assert "每个地区一个条形。" in zh and "全部行" in zh and "人口普查" in zh
    # the privacy unit's note names the dataset in the reader's language
    assert "调查" in zh and "survey" not in zh.lower().split("<main")[1].split("</dl>")[0]
    assert "“survey”" in en and "调查" not in en


def test_downloads_and_registry_keep_both_languages(client, published):
    slug = published.project.slug
    doc = json.loads(
        client.get(reverse("public:release-json", args=[slug, published.pk])).getvalue()
    )
    assert doc["release"]["title_i18n"] == {"en": "Census wave 1", "zh-hans": "人口普查第一轮"}
    labels = [s["label_i18n"] for s in doc["statistics"]]
    assert labels[0] == {"en": "Rows", "zh-hans": ""} and labels[4] == {
        "en": "",
        "zh-hans": "收入总和",
    }
    body = client.get(reverse("public:release-csv", args=[slug, published.pk])).getvalue()
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    assert {r["release_title_zh"] for r in rows} == {"人口普查第一轮"}
    assert {r["statistic_label_zh"] for r in rows} >= {"各地区行数", "收入总和"}
    registry = client.get(reverse("registry:project_json", args=[slug])).json()
    assert registry["project"]["name_i18n"] == {"en": "Census", "zh-hans": "人口普查"}
    assert registry["releases"][0]["title_i18n"]["zh-hans"] == "人口普查第一轮"
    page = client.get(reverse("registry:project", args=[slug]), **ZH).content.decode()
    assert "人口普查第一轮" in page and "调查" in page and "One respondent." in page


def test_owner_pages_inbox_and_review_in_chinese(client, project, owner, reviewer, chinese):
    bilingual_project(project)
    release = bilingual_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    client.force_login(owner)
    page = client.get(reverse("releases:detail", args=[release.pk]), **ZH).content.decode()
    assert "人口普查第一轮" in page and "按地区分组的年收入均值" in page and "各地区行数" in page
    assert "Mean of income by region" not in page
    detail = client.get(reverse("budgets:project_detail", args=[project.slug]), **ZH)
    assert "<h1>人口普查</h1>" in detail.content.decode()
    second = services.release_save_draft(
        project=project, actor=owner,
        data=builder_data(release.dataset, statistics=[{"kind": "mean", "column": "age",
                                                        "n_guess": 100}], epsilon="0.5",
                          title={"zh-hans": "第二轮"}),
    )  # fmt: skip
    second = lifecycle.release_submit(release=second, actor=owner)
    client.force_login(reviewer)
    inbox = client.get(reverse("budgets:inbox"), **ZH).content.decode()
    assert "第二轮" in inbox and "age的均值" in inbox
    request_url = reverse("review:request_detail", args=[second.budget_request_id])
    review = client.get(request_url, **ZH).content.decode()
    assert "第二轮" in review and "age的均值" in review
    english = client.get(request_url).content.decode()
    assert "第二轮" in english and "Mean of age" in english  # fallback; made name in English


def test_a_clone_keeps_the_texts_in_both_languages(project, owner, reviewer):
    dataset = bilingual_dataset(project=bilingual_project(project), owner=owner)
    data = builder_data(
        dataset,
        statistics=[
            {"kind": "count", "label": {"en": "People", "zh-hans": "人数"},
             "description": {"en": "Everyone.", "zh-hans": "所有人。"}},
        ],
        title={"en": "Wave 1", "zh-hans": "第一轮"},
        description={"en": "First.", "zh-hans": "第一次。"},
    )  # fmt: skip
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    release = lifecycle.release_reject(release=release, reviewer=reviewer, comment="no")
    clone = services.release_clone(release=release, actor=owner)
    assert (clone.title, clone.title_zh) == ("Wave 1 (copy)", "第一轮（副本）")
    assert (clone.description, clone.description_zh) == ("First.", "第一次。")
    stat = clone.statistics.get()
    assert (stat.label, stat.label_zh, stat.description_zh) == ("People", "人数", "所有人。")
