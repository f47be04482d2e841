"""A published release shows the owner's category labels, frozen at submission: on the
public page in the reader's language (falling back to the other language, then the
code), in data.csv and data.json beside the codes, and in the public API."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.conf import settings
from django.urls import reverse

from datasets.models import Column
from tests.labels_support import GROUPED, STATISTICS, declare_with_labels, publish, stata_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(project, owner, reviewer, tmp_path):
    dataset = stata_dataset(project=project, owner=owner, tmp_path=tmp_path)
    declare_with_labels(dataset, owner)
    statistics = [*STATISTICS, GROUPED]
    return publish(
        project=project, owner=owner, reviewer=reviewer, dataset=dataset, statistics=statistics
    )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _page(client, release, language: str) -> str:
    url = reverse("public:release", args=[release.project.slug, release.pk])
    response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def _chart_data(html: str) -> dict:
    found = re.search(r'<script id="release-data" type="application/json">(.*?)</script>', html)
    assert found, "the page's chart data"
    return json.loads(found.group(1))


def test_the_public_page_shows_labels_in_the_readers_language(client, release):
    english = _page(client, release, "en")
    stats = {s["position"]: s for s in _chart_data(english)["statistics"]}
    assert stats[0]["cells"][:2] == ["Male", "Female"]
    assert stats[0]["cells"][2:] == ["(Other)"]  # dpportal's own bucket, never labelled
    assert stats[1]["cells"] == ["Female"]  # the count of one category
    # no English label for region: the Chinese one, never the code
    assert stats[2]["row_labels"][:2] == ["Male", "Female"]
    assert stats[2]["col_labels"][:2] == ["北方", "南方"]
    assert stats[2]["cells"][0] == "Male / 北方"
    assert stats[3]["argmax"]["label"] == "北方"
    assert "Male" in _text(english) and "北方" in _text(english)
    assert stats[4]["cells"] == ["Male", "Female", "(Other)"]  # the groups of a mean
    assert "whose sex is “Female”" in _text(english)  # the note names the label too

    chinese = _page(client, release, "zh-CN,zh;q=0.9")
    stats = {s["position"]: s for s in _chart_data(chinese)["statistics"]}
    assert stats[0]["cells"][:2] == ["男", "女"]
    assert stats[2]["row_labels"][:2] == ["男", "女"]
    assert stats[2]["cells"][0] == "男 / 北方"
    assert stats[3]["argmax"]["label"] == "北方"
    assert stats[4]["cells"][:2] == ["男", "女"]
    assert "男" in _text(chinese)
    assert "“女”" in _text(chinese) and "“2”" not in _text(chinese)


def test_downloads_and_the_api_keep_the_codes_with_the_labels_beside(client, release):
    args = [release.project.slug, release.pk]
    record = client.get(reverse("public:release-json", args=args)).json()
    cells = record["statistics"][0]["cells"]
    assert [c["cell"] for c in cells[:2]] == ["1", "2"]
    assert cells[0]["cell_label"] == {"en": "Male", "zh-hans": "男"}
    assert cells[-1]["cell_label"] is None  # "Other"
    assert record["statistics"][3]["argmax_label"]["zh-hans"] in ("北方", "南方")
    api = client.get(reverse("api:public-release", args=args)).json()
    assert api["statistics"][0]["cells"][1]["cell_label"]["en"] == "Female"

    response = client.get(reverse("public:release-csv", args=args))
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    first = [r for r in rows if r["statistic_position"] == "0"]
    assert [(r["cell"], r["cell_label"], r["cell_label_zh"]) for r in first[:2]] == [
        ("1", "Male", "男"),
        ("2", "Female", "女"),
    ]
    two_way = [r for r in rows if r["statistic_position"] == "2"]
    assert (two_way[0]["cell"], two_way[0]["cell_label"]) == ("1 / 1", "Male / 北方")


def test_a_published_release_keeps_the_labels_it_was_approved_with(client, release):
    Column.objects.filter(dataset=release.dataset, name="sex").update(
        category_labels={"1": {"en": "Changed", "zh-hans": ""}}
    )
    stats = _chart_data(_page(client, release, "en"))["statistics"]
    assert stats[0]["cells"][:2] == ["Male", "Female"]


def test_owner_results_review_and_builder_show_the_labels(client, release, owner, reviewer):
    client.force_login(owner)
    results = _text(client.get(reverse("releases:detail", args=[release.pk])).content.decode())
    assert "Male (1)" in results and "Female (2)" in results  # label and code
    assert "Male / 北方 (1 / 1)" in results
    assert "sex = Female" in results  # the counted category in the statistics table
    builder = client.get(f"/releases/new/{release.project.slug}/").content.decode()
    found = re.search(r'<script id="datasets-data" type="application/json">(.*?)</script>', builder)
    columns = {c["name"]: c for d in json.loads(found.group(1)) for c in d["columns"]}
    assert columns["sex"]["category_names"] == {"1": "Male", "2": "Female"}
    assert columns["region"]["category_names"] == {"1": "北方", "2": "南方"}  # the fallback
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    builder = client.get(f"/releases/new/{release.project.slug}/").content.decode()
    found = re.search(r'<script id="datasets-data" type="application/json">(.*?)</script>', builder)
    columns = {c["name"]: c for d in json.loads(found.group(1)) for c in d["columns"]}
    assert columns["sex"]["category_names"] == {"1": "男", "2": "女"}
    results = _text(client.get(reverse("releases:detail", args=[release.pk])).content.decode())
    assert "男 (1)" in results
    del client.cookies[settings.LANGUAGE_COOKIE_NAME]

    client.force_login(reviewer)
    url = reverse("review:request_detail", args=[release.budget_request_id])
    review = _text(client.get(url).content.decode())
    assert "1 = Male / 男, 2 = Female / 女" in review
    assert "1 = 北方, 2 = 南方" in review
