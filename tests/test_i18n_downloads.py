"""Issue 17: a CSV download in Chinese opens in Excel with the right characters.

Excel reads a CSV as UTF-8 only when it starts with a byte-order mark; otherwise it
uses the system code page (GBK on a Chinese Windows). The test decodes the bytes the
way Excel does: BOM -> UTF-8, else GBK.
"""

from __future__ import annotations

import codecs
import csv
import io
import json

import pytest
from django.urls import reverse

from dpportal.catalogues import compile_all
from tests.factories import MembershipFactory, ProjectFactory
from tests.public_builders import build_release, replace_heatmap

pytestmark = pytest.mark.django_db

ROWS = ["华北", "华东", "西南"]
COLS = ["男", "女"]


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


@pytest.fixture
def release(owner, reviewer):
    project = ProjectFactory(name="人口普查", slug="census-zh", created_by=owner)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    release = build_release(project=project, owner=owner, reviewer=reviewer, title="第一轮调查")
    replace_heatmap(release, row_labels=ROWS, col_labels=COLS)
    return release


def excel_decode(body: bytes) -> str:
    """What Excel shows: UTF-8 when the file starts with a BOM, else the ANSI code page (GBK)."""
    if body.startswith(codecs.BOM_UTF8):
        return body[len(codecs.BOM_UTF8) :].decode("utf-8")
    return body.decode("gbk", errors="replace")


def csv_url(release, **query) -> str:
    url = reverse("public:release-csv", args=[release.project.slug, release.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_zh_hans_csv_has_a_bom_and_excel_shows_the_chinese(client, release):
    response = client.get(csv_url(release), HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 200
    body = response.getvalue()
    assert body.startswith(codecs.BOM_UTF8)
    rows = list(csv.DictReader(io.StringIO(excel_decode(body))))
    assert {row["release_title"] for row in rows} == {"第一轮调查"}
    heat = [row for row in rows if row["row"]]
    assert {row["row"] for row in heat} == set(ROWS) and {row["column"] for row in heat} == set(
        COLS
    )


def test_without_the_bom_excel_would_show_mojibake(client, release):
    """The reason for the BOM: the same bytes without it are not what the owner wrote."""
    body = client.get(csv_url(release, bom=0), HTTP_ACCEPT_LANGUAGE="zh-CN").getvalue()
    assert not body.startswith(codecs.BOM_UTF8)
    assert "第一轮调查" not in excel_decode(body)
    assert "第一轮调查" in body.decode("utf-8")


def test_english_readers_get_no_bom_unless_they_ask(client, release):
    plain = client.get(csv_url(release)).getvalue()
    assert not plain.startswith(codecs.BOM_UTF8)
    asked = client.get(csv_url(release, bom=1)).getvalue()
    assert asked == codecs.BOM_UTF8 + plain


def test_a_bad_bom_option_is_a_clear_400(client, release):
    response = client.get(csv_url(release, bom="maybe"))
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "bom must be 1 or 0."


def test_json_is_the_same_in_every_language(client, release):
    url = reverse("public:release-json", args=[release.project.slug, release.pk])
    en = client.get(url).getvalue()
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN").getvalue()
    assert en == zh and not zh.startswith(codecs.BOM_UTF8)
    assert json.loads(zh)["release"]["title"] == "第一轮调查"


def test_a_bad_option_is_explained_in_chinese_with_the_english_code(client, release):
    response = client.get(csv_url(release, confidence="0.5"), HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("confidence 参数只能是")
    assert error["code"].isascii()
