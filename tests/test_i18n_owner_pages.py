"""Issue 17: the owner's and the reviewer's pages in zh-hans leave no English UI text.

Each page is rendered by the test client with the language cookie set to zh-hans, for
a project named in Chinese; what is visible (text nodes and visible attributes, not
scripts or styles) may keep only the data's own names (the project's, the dataset's and
its columns', user names, the statistics' labels) and words that stay as they are in
every language (ALLOWED)."""

from __future__ import annotations

import html
import re

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from datasets.models import Column
from dpportal.catalogues import compile_all
from releases.builder_text import builder_text
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db

#: words kept in every language: formats, codes, the epsilon/delta symbols' names in codes
ALLOWED = {
    "dpportal",
    "uninformative",  # the name of data.json's flag, quoted where a page explains it
    "CSV",
    "TSV",
    "JSON",
    "API",
    "ID",
    "UTF",
    "UTC",
    "Parquet",
    "Excel",
    "Stata",
    "SPSS",
    "SAS",
    "GBK",
    "GB",
    "Big",
    "Shift",
    "JIS",
    "EUC",
    "JP",
    "KR",
    "ISO",
    "CP",
    "HKSCS",
    "Mac",
    "Roman",
    "Windows",
    "Latin",
    "gzip",
    "zip",
    "xlsx",
    "dta",
    "sav",
    "sas",
    "sas7bdat",
    "xpt",
    "csv",
    "tsv",
    "YYYY",
    "MM",
    "DD",
    "Spark",
    "DuckDB",
    "column",
    "kind",
    "categorical",
    "numeric",
    "date",
    "excluded",
    "s3",
    "S3",
    "bucket",
    "prefix",
    "n/a",
    "Swagger",
    "OpenAPI",
    # the OpenDP Deployments Registry and library, named as they name themselves, and the
    # language a release's OpenDP program is written in
    "OpenDP",
    "Python",
    "English",
    "KiB",
    "MiB",
    "GiB",
    "bdat",
    "DD/MM/YYYY",
    "MM/DD/YYYY",
    "YYYYMMDD",
    "categories",
    "lower",
    "upper",
    "bin",
    "edges",
    "missing",
    "codes",
    "format",
    # the codebook's label headers: category_labels, category_labels_zh
    "category",
    "labels",
    "zh",
    # authors cited by name (Dwork & Roth, The Algorithmic Foundations of Differential Privacy)
    "Dwork",
    "Roth",
    # the quantile mechanisms' authors (Kaplan, Schnapp, Stemmer 2022; Drechsler,
    # Globus-Harris, McMillan, Sarathy, Smith 2022)
    "Kaplan",
    "Schnapp",
    "Stemmer",
    "Drechsler",
    "Globus",
    "Harris",
    "McMillan",
    "Sarathy",
    "Smith",
    # math notation
    "exp",
    "ln",
    "max",
    # cited by name: permute-and-flip (McKenna & Sheldon 2020)
    "McKenna",
    "Sheldon",
}
_STRIP = re.compile(r"<(script|style)\b.*?</\1>|<!--.*?-->", re.S | re.I)
_VISIBLE_ATTRIBUTE = re.compile(r'\b(?:title|aria-label|placeholder|alt)="([^"]*)"')


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def english_left(page: str, data_words: set[str]) -> list[str]:
    """Visible English words of a page that are neither allowed nor the data's own."""
    page = _STRIP.sub(" ", page)
    texts = _VISIBLE_ATTRIBUTE.findall(page)
    texts.append(re.sub(r"<[^>]*>", " ", page))
    found = []
    for text in texts:
        for word in re.findall(r"[A-Za-z][A-Za-z'/]+", html.unescape(text)):
            if word not in ALLOWED and word not in data_words:
                found.append(word)
    return sorted(set(found))


def english_on_pages(client, pages: dict[str, str], words: set[str]) -> dict[str, list[str]]:
    """Each page (name -> address) that answers 200 with the English words it leaves."""
    left = {}
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        english = english_left(response.content.decode(), words)
        if english:
            left[name] = english
    return left


def test_the_check_sees_english_and_lets_data_names_through():
    page = '<p title="Hello">数据 region</p><script>var x = "skip";</script>'
    assert english_left(page, {"region"}) == ["Hello"]


@pytest.fixture
def zh_owner_client(client, owner, project):
    project.name = "人口普查"
    project.save()
    client.force_login(owner)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    return client


def _data_words(project, release) -> set[str]:
    words = set()
    texts = [
        release.dataset.name,
        release.title,
        release.description,
        project.description,
        project.privacy_unit_description,
        project.slug,
        "olivia-owner",
        "ravi-reviewer",
        *Column.objects.filter(dataset=release.dataset).values_list("name", flat=True),
        *release.statistics.values_list("label", flat=True),
        # the cells' labels are the declared categories (the data's own words)
        *(str(cell) for entry in release.result.payload["statistics"] for cell in entry["cells"]),
        "Looks fine.",
        "computed",
    ]
    for text in texts:
        words.update(re.findall(r"[A-Za-z][A-Za-z'/]+", text or ""))
    return words


def test_owner_pages_in_chinese(zh_owner_client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    # the builder's request summary is a bare count ({"statistics": 6}): the page shows no
    # preview table for it (it used to fail on it)
    words = _data_words(project, release)
    dataset = release.dataset
    pages = {
        "home": reverse("accounts:home"),
        "project": reverse("budgets:project_detail", args=[project.slug]),
        "budget": reverse("budgets:project_budget", args=[project.slug]),
        "new project": reverse("budgets:project_create"),
        "datasets": reverse("datasets:list", args=[project.slug]),
        "upload": reverse("datasets:upload", args=[project.slug]),
        "dataset": reverse("datasets:detail", args=[dataset.pk]),
        "codebook": reverse("datasets:codebook", args=[dataset.pk]),
        "declare": reverse("datasets:declare", args=[dataset.pk]),
        "release": reverse("releases:detail", args=[release.pk]),
        "builder": f"/releases/new/{project.slug}/",
    }
    assert english_on_pages(zh_owner_client, pages, words) == {}


def test_reviewer_pages_in_chinese(client, project, owner, reviewer):
    project.name = "人口普查"
    project.save()
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    words = _data_words(project, release)
    client.force_login(reviewer)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    pages = {
        "inbox": reverse("budgets:inbox"),
        "request": reverse("review:request_detail", args=[release.budget_request_id]),
    }
    assert english_on_pages(client, pages, words) == {}


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_the_builder_scripts_words_in_chinese():
    """The builder's scripts hold no English: every word they show comes from builder_text."""
    with translation.override("zh-hans"):
        words = builder_text()
    # codes the scripts send back, never show: the kinds', the bounds search's ends and
    # its tail models
    choices = [*words["kinds"], *words["bounds_end_choices"], *words["bounds_tail_choices"]]
    codes = {code for code, _ in choices}
    shown = [re.sub(r"\{\w+\}", " ", s) for s in _strings(words) if s not in codes]
    assert english_left("\n".join(shown), set()) == []
    with translation.override("en"):
        assert builder_text()["remove"] == "Remove"


def test_the_review_of_grouped_quantile_and_spread_statistics_in_chinese(
    client, project, owner, reviewer
):
    """The reviewer's page of the issue-14 kinds (releases/review/stats_text.py)."""
    from releases import lifecycle, services
    from tests.releases_support import builder_data, make_dataset
    from tests.test_review_stats import NEW

    dataset = make_dataset(project=project, owner=owner, rows=200)
    data = builder_data(dataset, statistics=NEW, epsilon="1")
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    words = set()
    columns = Column.objects.filter(dataset=dataset)
    texts = [
        project.name, project.privacy_unit_description, dataset.name, release.title, "olivia-owner",
        "ravi-reviewer", *release.statistics.values_list("label", flat=True),
        *columns.values_list("name", flat=True),
        *(str(c) for column in columns for c in column.categories or []),
    ]  # fmt: skip
    for text in texts:
        words.update(re.findall(r"[A-Za-z][A-Za-z'/]+", text or ""))
    client.force_login(reviewer)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    response = client.get(reverse("review:request_detail", args=[release.budget_request_id]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "置换翻转" in page and "秩误差" in page and "分组上限" in page
    assert english_left(page, words) == []


def test_the_reading_page_in_chinese(zh_owner_client, project, owner):
    """The detection preview of a GBK, semicolon-separated upload: the encodings', separators'
    and quotes' names are words of the page, the codes stay the form's values."""
    from tests.test_datasets_encodings import CHINESE, upload, write

    dataset = upload(project, owner, write(CHINESE, "gbk", ";"))
    response = zh_owner_client.get(reverse("datasets:reading", kwargs={"pk": dataset.pk}))
    assert response.status_code == 200
    page = response.content.decode()
    assert "GB18030 / GBK（简体中文）" in page and '<option value="semicolon" selected>分号' in page
    assert english_left(page, {"data", "csv", "olivia", "owner"}) == []
