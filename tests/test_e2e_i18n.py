"""Issue 17 in chromium: the public pages in Simplified Chinese, with a project and
categories named in Chinese. The reader's browser asks for zh-CN (Accept-Language);
charts show the Chinese categories and Chinese hover text. Screenshots: artifacts/e2e/.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dpportal.catalogues import compile_all
from dpportal.privacy.pld import ACCOUNTANT
from tests.factories import MembershipFactory, ProjectFactory
from tests.public_builders import build_release, replace_heatmap
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
)
from tests.test_i18n_owner_pages import ALLOWED as FORMAT_WORDS
from tests.test_i18n_owner_pages import _data_words

pytestmark = [pytest.mark.browser]

ROWS = ["华北", "华东", "西南"]
COLS = ["男", "女"]
#: words that may stay in Latin letters on a Chinese page (the switcher; a flag; the
#: language the verification script is written in)
ALLOWED = {"dpportal", "English", "CSV", "JSON", "ID", "Python", "uninformative"}


def english_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z][A-Za-z']+", text) if w not in ALLOWED}


def _hover(page, position: int) -> str:
    area = page.locator(f"#chart-{position} .nsewdrag").first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    label = page.locator(f"#chart-{position} .hoverlayer .hovertext")
    label.first.wait_for(state="visible", timeout=10_000)
    return label.first.text_content()


@pytest.mark.django_db(transaction=True)
def test_public_pages_in_chinese(browser, live_server, owner, reviewer):  # noqa: F811
    compile_all()
    project = ProjectFactory(
        name="人口普查",
        slug="renkou-pucha",
        description="每月的人口普查统计。",
        privacy_unit_description="一位受访者。",
        created_by=owner,
    )
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    release = build_release(project=project, owner=owner, reviewer=reviewer, title="第一轮调查")
    replace_heatmap(release, row_labels=ROWS, col_labels=COLS)

    pages = Pages(browser, live_server, "i18n-zh")
    pages.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
    try:
        page = pages.page
        pages.goto("/")
        assert page.locator("html").get_attribute("lang") == "zh-hans"
        body = page.locator("body").inner_text()
        assert "已发布的统计数据" in body and "人口普查" in body
        assert english_words(body) == set(), english_words(body)
        pages.shot("home")

        pages.goto(f"/p/{project.slug}/")
        body = page.locator("body").inner_text()
        assert "隐私预算" in body
        assert "拉普拉斯机制" in body
        assert english_words(body) == set(), english_words(body)
        pages.shot("project")

        words = _data_words(project, release) | {"registry", "renkou", "pucha", "json"}
        words |= set(re.findall(r"[A-Za-z]+", ACCOUNTANT["library"]))
        pages.goto(f"/registry/{project.slug}/")
        headings = " ".join(page.locator("main h1, main h2, main th").all_inner_texts())
        assert "ε 登记册" in headings and "群体隐私" in headings
        registry_english = english_words(page.locator("main").inner_text()) - words
        # a citation, a formula, and the OpenDP Deployments Registry's own name
        assert registry_english <= {"Dwork", "Roth", "exp", "OpenDP"}, registry_english
        pages.shot("registry")

        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        for selector in ("header.site", "#about-heading", "#interval-controls", "p.downloads"):
            text = page.locator(selector).first.inner_text()
            assert english_words(text) == set(), (selector, english_words(text))
        ticks = page.evaluate(
            "() => Array.from(document.querySelectorAll('#chart-2 .ytick text'))"
            ".map(n => n.textContent)"
        )
        assert set(ticks) == set(ROWS)
        hover = _hover(page, 2)
        assert "区间" in hover and "至" in hover and "interval" not in hover
        pages.shot("release-heatmap-hover")
        # every word in Latin letters left on the page is the data's own (labels, categories)
        release_english = english_words(page.locator("main").inner_text()) - words
        assert release_english == set(), release_english
        assert pages.errors == [], pages.errors
        assert pages.outside == [], pages.outside
    finally:
        pages.close()


def _login(pages: Pages, user) -> None:
    from tests.factories import PASSWORD

    pages.goto("/accounts/login/")
    pages.page.locator("#id_username").fill(user.username)
    pages.page.locator("#id_password").fill(PASSWORD)
    pages.page.locator("main form [type=submit]").click()
    pages.page.wait_for_load_state()
    assert "/accounts/login/" not in pages.page.url, "login failed"


@pytest.mark.django_db(transaction=True)
def test_owner_and_reviewer_pages_in_chinese(browser, live_server, owner, reviewer):  # noqa: F811
    """The owner's and the reviewer's workflow in chromium, zh-CN asked by the browser: every
    word in Latin letters left in the page's main part is the data's own."""
    compile_all()
    project = ProjectFactory(name="人口普查", slug="renkou-pucha", created_by=owner)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    release = build_release(project=project, owner=owner, reviewer=reviewer, title="第一轮调查")
    replace_heatmap(release, row_labels=ROWS, col_labels=COLS)
    # the data's own words, and the names of formats, encodings and units (Excel, GBK, MiB)
    words = _data_words(project, release) | {"renkou", "pucha"} | FORMAT_WORDS
    dataset = release.dataset
    walks = {
        owner: {
            "home": reverse("accounts:home"),
            "project": reverse("budgets:project_detail", args=[project.slug]),
            "budget": reverse("budgets:project_budget", args=[project.slug]),
            "datasets": reverse("datasets:list", args=[project.slug]),
            "upload": reverse("datasets:upload", args=[project.slug]),
            "dataset": reverse("datasets:detail", args=[dataset.pk]),
            "declare": reverse("datasets:declare", args=[dataset.pk]),
            "codebook": reverse("datasets:codebook", args=[dataset.pk]),
            "builder": f"/releases/new/{project.slug}/",
            "release": reverse("releases:detail", args=[release.pk]),
        },
        reviewer: {
            "inbox": reverse("budgets:inbox"),
            "request": reverse("review:request_detail", args=[release.budget_request_id]),
        },
    }
    for user, walk in walks.items():
        pages = Pages(browser, live_server, f"i18n-zh-{user.username}")
        pages.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
        try:
            _login(pages, user)
            for name, path in walk.items():
                response = pages.goto(path)
                assert response.status == 200, (name, path, response.status)
                assert pages.page.locator("html").get_attribute("lang") == "zh-hans"
                left = english_words(pages.page.locator("main").inner_text()) - words
                assert left == set(), (name, left)
                pages.shot(name)
            assert pages.errors == [], pages.errors
            assert pages.outside == [], pages.outside
        finally:
            pages.close()
