"""Quantiles' accuracy in the data's units, with the rank statement beside it, in chromium.

The owner builds the median and quartiles of income with a guess of n in the builder:
the preview and the accuracy-versus-epsilon chart (a line for the quantiles, their
table column filled) state the planning figure; the draft page, the reviewer's inbox
and the review document state it too, in English and in Chinese (the browser asks for
zh-CN); a real worker computes, the owner publishes, and the owner's results and the
public page state each quantile's range in the data's units beside its rank error, in
both languages. Every figure is compared with what releases.kinds computes.
"""

from __future__ import annotations

import math
import re

import pytest

from dpportal import formatting
from dpportal.catalogues import compile_all
from releases import kinds
from releases.kinds import quantile_words
from releases.models import Release
from tests.conftest import wait_for
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
    publish,
    submit_for_review,
)

pytestmark = [pytest.mark.browser, pytest.mark.worker]

TITLE = "Income quartiles in data units"
N_GUESS = 3000


def _login(pages: Pages, user) -> None:
    """Log in by the form's fields (their labels are in the reader's language)."""
    from tests.factories import PASSWORD

    pages.goto("/accounts/login/")
    pages.page.locator("#id_username").fill(user.username)
    pages.page.locator("#id_password").fill(PASSWORD)
    pages.page.locator("main form [type=submit]").click()
    pages.page.wait_for_load_state()
    assert "/accounts/login/" not in pages.page.url, "login failed"


def _pages(browser, live_server, name: str, user, *, chinese: bool) -> Pages:  # noqa: F811
    pages = Pages(browser, live_server, name)
    if chinese:
        pages.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
    if user is not None:
        _login(pages, user)
    return pages


def _lang(pages: Pages, chinese: bool) -> None:
    expected = "zh-hans" if chinese else "en"
    assert pages.page.locator("html").get_attribute("lang") == expected


def _planning_numbers(summary_stat: dict, *, simultaneous: bool = False) -> tuple[str, str]:
    """The interval's planned reach and the rank error's texts, as the kind words them."""
    suffix = "_simultaneous" if simultaneous else ""
    width = formatting.halfwidth(summary_stat["interval_value_reach"])
    ranks = formatting.integer(math.ceil(summary_stat["rank_error" + suffix]))
    return f"± {width}", f"± {ranks}"


def _build(pages: Pages, project) -> None:
    page = pages.page
    pages.goto(f"/releases/new/{project.slug}/")
    page.locator("#f-title").fill(TITLE)
    page.locator("#f-epsilon").fill("0.5")
    row = page.locator("#stats tbody tr").nth(0)
    row.locator("select[data-f=kind]").select_option("quantiles")
    row.locator("select[data-f=column]").select_option("income")
    row.get_by_label("quantile presets").select_option(label="Median and quartiles")
    row.locator("input[data-f=step]").fill("1000")
    row.locator("input[data-f=n_guess]").fill(str(N_GUESS))
    # the preview: the planning figure in data units beside the rank error
    cell = page.locator("#preview tr[data-kind=quantiles] td").nth(4)
    cell.wait_for()
    page.wait_for_function(
        "() => (document.querySelector('#preview tr[data-kind=quantiles] td:nth-child(5)')"
        " || {}).textContent.includes('data')"
    )
    one = cell.inner_text()
    assert re.search(r"interval about ± [\d,]+ in the data's units \(planning figure: if "
                     r"about [\d,]+ values were spread evenly from 0 to 150,000\); "
                     r"rank ± [\d,]+ values$", one), one  # fmt: skip
    together = page.locator("#preview tr[data-kind=quantiles] td").nth(5).inner_text()
    assert "in the data's units" in together and "rank ±" in together
    # the chart: a line for the quantiles, and their column of the table filled
    page.wait_for_selector("#tradeoff-numbers", state="attached")
    page.locator("#tradeoff-table-box > summary").click()  # the table, as a reader opens it
    trace = page.evaluate(
        "() => { const t = document.getElementById('tradeoff-chart').data[0];"
        " return {name: t.name, y: t.y}; }"
    )
    assert trace["name"] == "Median and quartiles of income"
    assert len(trace["y"]) > 5 and all(y is not None and y > 0 for y in trace["y"])
    assert trace["y"] == sorted(trace["y"], reverse=True)  # more epsilon, a smaller error
    column = page.locator("#tradeoff-numbers tbody tr td:nth-child(3)").all_inner_texts()
    assert column and all(
        re.fullmatch(r"interval about ± [\d,.]+ \(rank ± [\d,]+\)", t) for t in column
    )
    pages.shot("builder-preview-and-chart")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url("**/releases/*/")


def _check_draft(pages: Pages, release: Release, chinese: bool) -> None:
    """The draft page's accuracy preview: the planning figure beside the rank error."""
    pages.goto(f"/releases/{release.pk}/")
    _lang(pages, chinese)
    cell = pages.page.locator("tr[data-kind=quantiles] [data-param=quantile-accuracy]")
    text = cell.inner_text()
    width, ranks = _planning_numbers(_preview_stat(release))
    assert width in text and ranks in text, text
    if not chinese:
        assert "in the data's units (planning figure" in text and "rank ±" in text
    pages.shot("draft-" + ("zh" if chinese else "en"))


def _preview_stat(release: Release) -> dict:
    """The quantiles' preview as the draft page computes it (the services' own)."""
    from releases import services

    data = services.release_form_data(release=release)
    preview = services.release_preview(project=release.project, data=data, accounting=False)
    return preview["statistics"][0]


def _check_inbox_and_review(pages: Pages, release: Release, chinese: bool) -> None:
    summary = release.budget_request.summary["statistics"][0]
    width, ranks = _planning_numbers(summary)
    width_all, ranks_all = _planning_numbers(summary, simultaneous=True)
    page = pages.page
    pages.goto("/projects/inbox/")
    _lang(pages, chinese)
    table = page.locator(f"section[aria-labelledby=request-{release.budget_request_id}]")
    assert ("中位数与分位数" if chinese else "Median and quantiles") in table.inner_text()
    assert "<td>quantiles</td>" not in table.inner_html()  # the label, not the code
    one = table.locator("[data-param=quantile-accuracy]").inner_text()
    together = table.locator("[data-param=quantile-accuracy-all]").inner_text()
    assert width in one and ranks in one and width_all in together and ranks_all in together
    assert "3" in together
    if not chinese:
        assert "not recorded" not in one and "3 values at once:" in together
        assert "in the data's units" in one
    pages.shot("inbox-" + ("zh" if chinese else "en"))
    pages.goto(f"/projects/requests/{release.budget_request_id}/")
    _lang(pages, chinese)
    document = page.locator("main")
    review = document.locator("[data-param=halfwidth]").inner_text()
    assert width in review and ranks in review, review
    assert document.locator("[data-param=rank-error]").count() == 1
    assert document.locator("[data-param=interval]").count() == 1
    if not chinese:
        assert "in the data's units (planning figure" in review
    pages.shot("review-" + ("zh" if chinese else "en"))


def _check_results(pages: Pages, release: Release, chinese: bool, *, public: bool) -> None:
    """Each quantile's released interval beside its rank error, as the kind states them."""
    entry = release.result.payload["statistics"][0]
    cells = kinds.get("quantiles").intervals(entry, confidence=str(release.confidence))
    page = pages.page
    if public:
        pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/")
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        # the explanations open, as a reader who unfolds them reads them
        page.evaluate(
            "document.querySelectorAll('main details').forEach((d) => { d.open = true; })"
        )
        rows = page.locator(f"#quantile-body-{entry['position']} tr")
    else:
        pages.goto(f"/releases/{release.pk}/")
        rows = page.locator(".result table tbody tr")
    _lang(pages, chinese)
    assert rows.count() == 3
    for i, cell in enumerate(cells):
        low, high = quantile_words.about_range_texts(cell.low, cell.high)
        assert low and high and cell.low <= cell.high
        ranks = formatting.integer(max(1, math.ceil(cell.rank_error)))
        text = rows.nth(i).inner_text()
        assert low in text and high in text and ranks in text, text
        if public:
            about = rows.nth(i).locator("td[data-q=about]").inner_text()
            assert about.endswith(f"{low} to {high}") or (chinese and low in about)
    basis = page.locator("[data-param=quantile-basis]").inner_text()
    if not chinese:
        assert "whatever the data" in basis and "95 %" in basis
    if public:
        words = page.locator(f"#stat-{entry['position']}").inner_text()
        low, high = quantile_words.about_range_texts(cells[1].low, cells[1].high)
        assert f"{low}" in words and f"{high}" in words
        if not chinese:
            assert "confidence the true median lies between" in words
        hover = page.evaluate(
            "(p) => document.getElementById('chart-' + p).data[0].hovertext[1]",
            entry["position"],
        )
        assert low in hover and high in hover
    pages.shot(("public-" if public else "results-") + ("zh" if chinese else "en"))


@pytest.mark.django_db(transaction=True)
def test_quantile_accuracy_in_data_units_on_every_surface_in_both_languages(
    browser,  # noqa: F811
    live_server,
    celery_workers,
    project,
    owner,
    reviewer,
):
    compile_all()
    celery_workers.start(concurrency=1)
    make_dataset(project=project, owner=owner, rows=3000)
    opened: list[Pages] = []

    def open_pages(name, user, chinese):
        pages = _pages(browser, live_server, name, user, chinese=chinese)
        opened.append(pages)
        return pages

    try:
        owner_en = open_pages("q-owner-en", owner, False)
        _build(owner_en, project)
        release = Release.objects.get(project=project, title=TITLE)
        owner_zh = open_pages("q-owner-zh", owner, True)
        for pages, chinese in ((owner_en, False), (owner_zh, True)):
            _check_draft(pages, release, chinese)
        submit_for_review(owner_en, release)

        reviewer_en = open_pages("q-reviewer-en", reviewer, False)
        reviewer_zh = open_pages("q-reviewer-zh", reviewer, True)
        for pages, chinese in ((reviewer_en, False), (reviewer_zh, True)):
            _check_inbox_and_review(pages, release, chinese)
        reviewer_en.page.get_by_role("button", name="Approve and reserve").click()
        reviewer_en.page.wait_for_load_state()

        wait_for(
            lambda: Release.objects.filter(pk=release.pk, status="computed").exists(),
            timeout=180,
            message="the worker did not compute the release",
        )
        release.refresh_from_db()
        for pages, chinese in ((owner_en, False), (owner_zh, True)):
            _check_results(pages, release, chinese, public=False)
        publish(owner_en, release)

        public_en = open_pages("q-public-en", None, False)
        public_zh = open_pages("q-public-zh", None, True)
        for pages, chinese in ((public_en, False), (public_zh, True)):
            _check_results(pages, release, chinese, public=True)
        for p in opened:
            assert p.outside == [], f"a page tried to reach the internet: {p.outside}"
            assert p.errors == [], f"JavaScript errors: {p.errors}"
    finally:
        for p in opened:
            p.close()
