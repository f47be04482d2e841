"""Issue 17 foundations: the language comes from the switcher's cookie, else the reader's
Accept-Language, else English; the switcher is on every page and remembers the choice."""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dpportal.catalogues import compile_all
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db

FOOTER_ZH = "差分隐私统计"
FOOTER_EN = "Differentially private statistics"


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def test_default_is_english(client):
    html = client.get("/").content.decode()
    assert FOOTER_EN in html and FOOTER_ZH not in html
    assert '<html lang="en' in html


def test_accept_language_is_honoured_for_anonymous_readers(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5")
    html = response.content.decode()
    assert FOOTER_ZH in html and FOOTER_EN not in html
    assert '<html lang="zh-hans">' in html
    assert "Accept-Language" in response["Vary"]


def test_switcher_on_every_page_posts_to_set_language_without_inline_script(client):
    for url in ("/", reverse("accounts:login")):
        html = client.get(url).content.decode()
        form = re.search(
            r'<form method="post" action="([^"]+)" class="languages".*?</form>', html, re.S
        )
        assert form, url
        assert form.group(1) == reverse("set_language")
        assert 'name="language" value="zh-hans"' in form.group(0)
        assert 'name="language" value="en"' in form.group(0)
        assert "<script" not in form.group(0) and "onclick" not in form.group(0)


def test_the_choice_is_remembered_over_accept_language(client):
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": "/registry/x/"})
    assert response.status_code == 302 and response["Location"] == "/registry/x/"
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "zh-hans" and int(cookie["max-age"]) >= 30 * 24 * 3600
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert FOOTER_ZH in html
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    assert FOOTER_EN in client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()


def test_switcher_works_without_a_csrf_token_from_cached_pages():
    strict = Client(enforce_csrf_checks=True)
    response = strict.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"


def test_bad_choices_change_nothing(client):
    response = client.post(
        reverse("set_language"), {"language": "xx", "next": "https://evil.example/"}
    )
    assert response.status_code == 302
    assert "evil.example" not in response["Location"]
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies
    assert client.get(reverse("set_language")).status_code in (302, 405)


def test_a_cached_release_page_is_cached_per_language(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("public:release", args=[release.project.slug, release.pk])
    en = client.get(url)
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert FOOTER_EN in en.content.decode() and FOOTER_ZH in zh.content.decode()
    assert en["ETag"] != zh["ETag"]
    assert "Cookie" in zh["Vary"] and "Accept-Language" in zh["Vary"]
    # the English page is still served from the cache in English
    assert FOOTER_EN in client.get(url).content.decode()


def test_public_pages_in_chinese(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}
    home = client.get("/", **zh).content.decode()
    assert "已发布的统计数据" in home and "ε 登记册" in home
    dashboard = client.get(reverse("public:project", args=[project.slug]), **zh).content.decode()
    assert "隐私预算" in dashboard and "ε 上限已用去" in dashboard
    assert "Privacy budget" not in dashboard
    url = reverse("public:release", args=[project.slug, release.pk])
    page = client.get(url, **zh).content.decode()
    assert "这些数字是如何受到保护的" in page and "置信水平" in page
    assert re.search(r"ε = <span class=\"amount\"[^>]*>[0-9.]+</span>（全部统计量合计）", page)
    assert "How these numbers were protected" not in page


def test_chart_words_come_from_the_server_in_the_readers_language(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("public:release", args=[project.slug, release.pk])
    for language, interval in (
        ("en", "interval {lower} to {upper}"),
        ("zh-CN", "区间 {lower} 至 {upper}"),
    ):
        html = client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        node = re.search(
            r'<script id="chart-text" type="application/json">(.*?)</script>', html, re.S
        )
        assert node, language
        assert json.loads(node.group(1))["interval"] == interval
