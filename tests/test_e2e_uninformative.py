"""Honest empty cells and clamped counts in chromium, in English and Chinese.

A grouped mean of income by region whose group "Other" has no rows: the reader sees
no bar for it, the words "too few records to estimate" where the bar would stand
and in the table, and one warning (not two). A count whose noisy value is far below
zero, shown rounded and clamped at zero, gets an error bar and an interval that
start at 0 and contain the value shown.
"""

from __future__ import annotations

import pytest
from django.utils import translation

from releases.public import notes
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    ARTIFACTS,
    Pages,
    browser,
    chart_error_bars,
    draw_every_chart,
)
from tests.uninformative_builders import build

pytestmark = [pytest.mark.browser]

LANGUAGES = {"en": "en", "zh-hans": "zh-CN,zh;q=0.9"}


def _chart(page, position: int) -> dict:
    return page.evaluate(
        """(position) => {
            const node = document.getElementById('chart-' + position);
            const trace = node.data[0];
            return {y: trace.y, error_y: trace.error_y,
                    notes: (node.layout.annotations || []).map((a) => [a.x, a.text]),
                    drawn: Array.from(node.querySelectorAll('.annotation-text'))
                        .map((el) => el.textContent)};
        }""",
        position,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", list(LANGUAGES))
def test_an_empty_group_has_no_bar_the_words_and_one_warning(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    release = build(project=project, owner=owner, reviewer=reviewer)
    position = 6
    with translation.override(language):
        words = notes.too_few()
    pages = Pages(browser, live_server, f"uninformative-{language}")
    pages.context.set_extra_http_headers({"Accept-Language": LANGUAGES[language]})
    try:
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page = pages.page
        assert page.locator("html").get_attribute("lang") == language
        page.wait_for_selector("body[data-charts-ready='1']")
        # the numbers fold under each chart: the reader unfolds them
        page.evaluate(
            "document.querySelectorAll('main details').forEach((d) => { d.open = true; })"
        )
        draw_every_chart(page)
        chart = _chart(page, position)
        # no bar and no error bar for "Other"; the others are drawn
        assert chart["y"][2] is None and chart["y"][0] > 0 and chart["y"][1] > 0
        assert chart["error_y"]["array"][2] is None and chart["error_y"]["array"][0] > 0
        # the words where its bar would stand (category 2), drawn by Plotly
        assert chart["notes"] == [[2, words]]
        assert chart["drawn"] == [words]
        # the table says the words, with no interval
        section = page.locator(f"#stat-{position}")
        row = section.locator(f"#table-body-{position} tr").nth(2)
        cells = row.locator("td").all_inner_texts()
        assert cells[0] == words and cells[1] == "—" and cells[2] == "—"
        assert "100,000" not in section.inner_text()
        # one warning, naming the group
        notices = section.locator(".notice")
        assert notices.count() == 1
        assert row.locator("th").inner_text() in notices.first.inner_text()
        # the release's ungrouped mean (few rows at a small epsilon): no point, no line
        mean = page.evaluate(
            """() => { const t = document.getElementById('chart-4').data[0];
                       return {mode: t.mode, text: t.text, error_x: t.error_x || null}; }"""
        )
        assert mean == {"mode": "text", "text": [words], "error_x": None}
        assert page.locator("#table-body-4 td").first.inner_text() == words
        assert page.locator("#stat-4 .notice").count() == 1
        page.locator("#stat-4").screenshot(
            path=str(ARTIFACTS / f"uninformative-{language}-mean.png")
        )
        # switching to all bars at once keeps the group out of the chart and the words in
        page.locator("input[name=intervals][value=simultaneous]").check()
        chart = _chart(page, position)
        assert chart["y"][2] is None and chart["notes"] == [[2, words]]
        assert row.locator("td").first.inner_text() == words
        pages.shot("grouped-mean-empty-group")
        section.screenshot(path=str(ARTIFACTS / f"uninformative-{language}-statistic.png"))
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_clamped_count_never_contradicts_its_interval(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    release = build(project=project, owner=owner, reviewer=reviewer)
    hist = release.result.payload["statistics"][1]
    pages = Pages(browser, live_server, f"clamped-{language}")
    pages.context.set_extra_http_headers({"Accept-Language": LANGUAGES[language]})
    try:
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page = pages.page
        page.wait_for_selector("body[data-charts-ready='1']")
        # the numbers fold under each chart: the reader unfolds them
        page.evaluate(
            "document.querySelectorAll('main details').forEach((d) => { d.open = true; })"
        )
        draw_every_chart(page)
        page.locator("input[name=display][value=rounded]").check()
        bars = chart_error_bars(page, 1)
        for y, value, plus, minus in zip(
            bars["y"], hist["values"], bars["error_y"]["array"], bars["error_y"]["arrayminus"],
            strict=True,
        ):  # fmt: skip
            assert y == max(0, round(value))
            assert y - minus >= 0 and plus >= 0 and minus >= 0
        # the sunk cell: 0, its error bar from 0 up, never below
        assert hist["values"][0] < 0 and bars["y"][0] == 0
        assert bars["error_y"]["arrayminus"][0] == 0 and bars["error_y"]["array"][0] > 0
        row = page.locator("#table-body-1 tr").first.locator("td").all_inner_texts()
        value, lower, upper = row[0], row[1], row[2]
        assert value == "0" and lower == "0"
        assert float(upper.replace(",", "")) == pytest.approx(bars["error_y"]["array"][0], abs=1)
        assert page.locator("[data-show-when-rounded]").is_visible()
        # back to the noisy values: the noisy value with its own interval, below zero
        page.locator("input[name=display][value=rounded]").uncheck()
        row = page.locator("#table-body-1 tr").first.locator("td").all_inner_texts()
        assert float(row[0].replace(",", "")) == hist["values"][0]
        assert float(row[2].replace(",", "")) < 0
        pages.shot("clamped-count")
        page.locator("input[name=display][value=rounded]").check()
        page.locator("#stat-1").screenshot(
            path=str(ARTIFACTS / f"clamped-{language}-statistic.png")
        )
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()
