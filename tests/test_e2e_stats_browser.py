"""Issue 14 in chromium: a grouped mean, the median and quartiles, a standard deviation.

The owner builds the release in the builder (grouping columns, the quartiles
preset, the grid step), the reviewer reads the review document and approves, a
real Celery worker computes, the owner publishes, and an anonymous reader sees
each statistic with its interval: grouped bars with error bars by the second
grouping column, a quantile plot with the rank error in words, and the standard
deviation's interval, all equal to what releases.kinds computes from the
stored explanation.
"""

from __future__ import annotations

import pytest

from releases import kinds
from releases.models import Release
from tests.conftest import wait_for
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
    login,
    publish,
)


def _intervals(entry, **options):
    """Each cell's value and interval as the statistic's kind states them (as dicts)."""
    return [c.as_dict() for c in kinds.get(entry["kind"]).intervals(entry, **options)]


pytestmark = [pytest.mark.browser, pytest.mark.worker]

TITLE = "Income and age, issue 14"


def _row(page, i: int):
    return page.locator("#stats tbody tr").nth(i)


def _build(pages: Pages, project) -> None:
    page = pages.page
    pages.goto(f"/releases/new/{project.slug}/")
    page.locator("#f-title").fill(TITLE)
    page.locator("#f-epsilon").fill("0.9")  # the project's budget is 1
    # 1. mean income by region, then by age band (two grouping columns)
    row = _row(page, 0)
    row.locator("select[data-f=kind]").select_option("grouped_mean")
    row.locator("select[data-f=column]").select_option("income")
    assert row.locator("select[data-f=group_by]").is_visible()
    assert not row.locator("input[data-f=quantiles]").is_visible()
    row.locator("select[data-f=group_by]").select_option("region")
    row.locator("select[data-f=group_by2]").select_option("age")
    row.locator("input[data-f=n_guess]").fill("100")
    # 2. the median and quartiles of income on a grid of step 1000
    page.get_by_role("button", name="Add a statistic").click()
    row = _row(page, 1)
    row.locator("select[data-f=kind]").select_option("quantiles")
    row.locator("select[data-f=column]").select_option("income")
    row.get_by_label("quantile presets").select_option(label="Median and quartiles")
    assert row.locator("input[data-f=quantiles]").input_value() == "0.25, 0.5, 0.75"
    row.locator("input[data-f=step]").fill("1000")
    # 3. the standard deviation of age
    page.get_by_role("button", name="Add a statistic").click()
    row = _row(page, 2)
    row.locator("select[data-f=kind]").select_option("stddev")
    row.locator("select[data-f=column]").select_option("age")
    row.locator("input[data-f=n_guess]").fill("3000")
    # the preview: half-widths, and a rank error for the quantiles
    page.wait_for_selector("#preview tr[data-kind=quantiles]")
    preview = page.locator("#preview").inner_text()
    assert "Total cost: epsilon" in preview and "rank ±" in preview
    pages.shot("builder-preview")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url("**/releases/*/")


def _public_checks(pages: Pages, release: Release) -> None:
    page = pages.page
    page.wait_for_selector("body[data-charts-ready='1']")
    draw_every_chart(page)  # charts are drawn as they scroll into view, as a reader sees them
    entries = {e["kind"]: e for e in release.result.payload["statistics"]}
    mean, quartiles, sd = entries["grouped_mean"], entries["quantiles"], entries["stddev"]

    # grouped bars: one trace per age band, error bars = the 95 % intervals per group
    traces = page.evaluate(
        """(p) => document.getElementById('chart-' + p).data.map((t) => ({
            type: t.type, name: t.name, x: t.x, y: t.y, plus: t.error_y.array,
            minus: t.error_y.arrayminus}))""",
        mean["position"],
    )
    rows, cols = mean["shape"]
    assert [t["name"] for t in traces] == mean["col_labels"] and len(traces) == cols
    cells = _intervals(mean, confidence="0.95")
    # dpportal's own groups ("Other", "Missing") are written as such, apart from categories
    groups = [f"({g})" if g in ("Other", "Missing") else g for g in mean["row_labels"]]
    assert groups[-2:] == ["(Other)", "(Missing)"]
    for c, trace in enumerate(traces):
        assert trace["type"] == "bar" and trace["x"] == groups
        for r in range(rows):
            cell = cells[r * cols + c]
            if cell["flag"] == kinds.UNINFORMATIVE:  # too few records: no bar, no error bar
                assert trace["y"][r] is None and trace["minus"][r] is None
                continue
            assert trace["y"][r] == pytest.approx(cell["value"])
            assert trace["y"][r] + trace["plus"][r] == pytest.approx(cell["high"])
            assert trace["y"][r] - trace["minus"][r] == pytest.approx(cell["low"])
    box = " ".join(page.locator(f"#stat-{mean['position']}").text_content().split())
    assert "24 groups with its interval in the table below" in box
    assert "the number of rows is not published" in box

    # the quantile plot: the three quartiles at 25, 50, 75 %; the rank error in words
    plot = page.evaluate(
        "(p) => { const t = document.getElementById('chart-' + p).data[0];"
        " return {x: t.x, y: t.y, type: t.type}; }",
        quartiles["position"],
    )
    assert plot["x"] == [25, 50, 75] and plot["type"] == "scatter"
    assert plot["y"] == [float(v) for v in quartiles["values"]]
    # the explanation folds under the chart: the reader opens it
    page.locator(f"#stat-{quartiles['position']} details.explanation summary").click()
    text = page.locator(f"#stat-{quartiles['position']}").inner_text()
    assert "permute-and-flip" in text
    assert "the median is" in text and "with 95 % confidence the true median lies" in text
    assert "values lie between it and the published value" in text
    table = page.locator(f"#quantile-table-{quartiles['position']}").inner_text()
    assert "Median" in table and "±" in table

    # the standard deviation with its interval, in the figure and in words
    sd_cell = _intervals(sd, confidence="0.95")[0]
    figure = page.evaluate(
        "(p) => { const t = document.getElementById('chart-' + p).data[0];"
        " return {x: t.x[0], plus: t.error_x.array[0], minus: t.error_x.arrayminus[0]}; }",
        sd["position"],
    )
    assert figure["x"] + figure["plus"] == pytest.approx(sd_cell["high"])
    assert figure["x"] - figure["minus"] == pytest.approx(sd_cell["low"])
    page.locator(f"#stat-{sd['position']} details.explanation summary").click()
    words = page.locator(f"#stat-{sd['position']}").inner_text()
    assert "standard deviation it estimates lies between" in words

    # 99 %: the sentences and the bars switch to the wider intervals
    # a page carries one level's numbers: another level is a new page
    with page.expect_navigation():
        page.get_by_label("99 %").check()
    # the new page draws the charts near its first window only: scroll to them, as a reader
    page.wait_for_selector("body[data-charts-ready='1']")
    draw_every_chart(page)
    wide = _intervals(mean, confidence="0.99")[0]
    page.wait_for_function(
        "([p, h]) => Math.abs(document.getElementById('chart-' + p).data[0].y[0]"
        " + document.getElementById('chart-' + p).data[0].error_y.array[0] - h) < 1e-6",
        arg=[mean["position"], wide["high"]],
    )
    quartile_words = page.locator(f"#stat-{quartiles['position']}").text_content()
    assert "with 99 % confidence" in " ".join(quartile_words.split())
    pages.shot("public-99")


@pytest.mark.django_db(transaction=True)
def test_grouped_mean_quartiles_and_sd_from_builder_to_public_page(
    browser,  # noqa: F811
    live_server,
    celery_workers,
    project,
    owner,
    reviewer,
):
    celery_workers.start(concurrency=1)
    make_dataset(project=project, owner=owner, rows=3000)
    owner_pages = Pages(browser, live_server, "stats-owner")
    reviewer_pages = Pages(browser, live_server, "stats-reviewer")
    public_pages = Pages(browser, live_server, "stats-public")
    try:
        login(owner_pages, owner)
        _build(owner_pages, project)
        release = Release.objects.get(project=project, title=TITLE)
        assert [s.kind for s in release.statistics.order_by("position")] == [
            "grouped_mean",
            "quantiles",
            "stddev",
        ]
        owner_pages.page.get_by_role("button", name="Submit for review").click()
        owner_pages.page.wait_for_load_state()
        release.refresh_from_db()
        assert release.status == "submitted"

        # the reviewer reads the review document and approves
        rpage = reviewer_pages.page
        login(reviewer_pages, reviewer)
        reviewer_pages.goto(f"/projects/requests/{release.budget_request_id}/")
        document = rpage.locator("main").inner_text()
        assert "Permute-and-flip" in document and "Candidate grid" in document
        assert "Group bound" in document and "sum of squares" in document
        reviewer_pages.shot("review-document")
        rpage.get_by_role("button", name="Approve and reserve").click()
        rpage.wait_for_load_state()

        # a real worker computes; the owner publishes through the preview
        wait_for(
            lambda: Release.objects.filter(pk=release.pk, status="computed").exists(),
            timeout=180,
            message="the worker did not compute the release: "
            + str(Release.objects.filter(pk=release.pk).values_list("status", "failure_reason")),
        )
        owner_pages.goto(f"/releases/{release.pk}/")
        assert "rank error" in owner_pages.page.locator("main").inner_text()
        publish(owner_pages, release)

        # an anonymous reader
        public_pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        _public_checks(public_pages, release)
        for p in (owner_pages, reviewer_pages, public_pages):
            assert p.outside == [], f"a page tried to reach the internet: {p.outside}"
            assert p.errors == [], f"JavaScript errors: {p.errors}"
    finally:
        for p in (owner_pages, reviewer_pages, public_pages):
            p.close()


@pytest.mark.django_db(transaction=True)
def test_seeded_demo_draws_every_new_kind(browser, live_server):  # noqa: F811
    """The demo a new user sees first: every issue-14 chart drawn, no script error."""
    from io import StringIO

    from django.core.management import call_command

    from releases.demo import PUBLISHED_TITLE

    call_command("seed_demo", stdout=StringIO())
    release = Release.objects.get(title=PUBLISHED_TITLE)
    pages = Pages(browser, live_server, "stats-demo")
    try:
        pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/")
        pages.page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(pages.page)
        for entry in release.result.payload["statistics"]:
            if kinds.get(entry["kind"]).fields != "grouped":
                continue
            traces = pages.page.evaluate(
                "(p) => (document.getElementById('chart-' + p).data || []).map((t) => "
                "({type: t.type, y: t.y, err: t.error_y || t.error_x || null}))",
                entry["position"],
            )
            assert traces, f"no chart for {entry['kind']}"
            if entry["kind"] in ("grouped_sum", "grouped_mean", "quantiles"):
                # a cell its kind flags uninformative has no bar
                cells = kinds.get(entry["kind"]).intervals(entry, confidence="0.95")
                shown = [
                    float(v)
                    for v, cell in zip(entry["values"], cells or entry["values"], strict=True)
                    if not cells or cell.flag != kinds.UNINFORMATIVE
                ]
                drawn = sorted(y for t in traces for y in t["y"] if y is not None)
                assert drawn == pytest.approx(sorted(shown))
            if entry["kind"] != "quantiles":  # intervals as error bars
                assert all(t["err"] for t in traces), entry["kind"]
        pages.shot("demo")
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
        assert pages.outside == []
    finally:
        pages.close()
