"""Public charts in chromium: categorical heatmaps and labels Plotly must not render as HTML.

Labels that look like numbers ("0%", "1e3", "007") must stay categories, in the
declared order, with "Other" kept and hover text shown (issue 11, point 5). A
category holding markup must show as text, never as a live link inside a public
chart (issue 12, point 1): Plotly reads its strings as pseudo-HTML.
"""

from __future__ import annotations

import pytest

from dpportal.privacy import accuracy
from releases.models import ReleaseResult
from tests.public_builders import build_release, replace_heatmap
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    chart_error_bars,
    draw_every_chart,
)

pytestmark = [pytest.mark.browser]

EVIL = '<a href="https://evil.example/phish">Click here</a>'
NUMBERISH = ["0%", "25%", "1e3", "007", "Other"]


def _ticks(page, position: int, axis: str) -> list[str]:
    """The tick labels as the reader sees them: left to right, or top to bottom."""
    return page.evaluate(
        """([position, axis]) => Array.from(
            document.querySelectorAll('#chart-' + position + ' .' + axis + 'tick text')
        ).map((node) => [node.getBoundingClientRect(), node.textContent])
         .sort((a, b) => axis === 'x' ? a[0].left - b[0].left : a[0].top - b[0].top)
         .map((pair) => pair[1])""",
        [position, axis],
    )


def _hover(page, position: int) -> str:
    """Move the mouse over the middle of the plot area; the hover label's text."""
    area = page.locator(f"#chart-{position} .nsewdrag").first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    label = page.locator(f"#chart-{position} .hoverlayer .hovertext")
    label.first.wait_for(state="visible", timeout=10_000)
    return label.first.text_content()


@pytest.mark.django_db(transaction=True)
def test_heatmap_axes_stay_categorical_and_markup_stays_text(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    rows = ["female", "male", EVIL]
    replace_heatmap(release, row_labels=rows, col_labels=NUMBERISH)
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    payload["statistics"][1]["cells"] = ["North", EVIL, "East", "West"]
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)

    pages = Pages(browser, live_server, "public-charts")
    try:
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page = pages.page
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        layout = page.evaluate(
            """() => {
                const node = document.getElementById('chart-2');
                return {x: node._fullLayout.xaxis.type, y: node._fullLayout.yaxis.type,
                        trace: node.data[0].type};
            }"""
        )
        assert layout == {"x": "category", "y": "category", "trace": "heatmap"}
        # every label on the axis, in the declared order, dpportal's "Other" included (in
        # its own form, apart from the declared labels), as text
        assert _ticks(page, 2, "x") == [*NUMBERISH[:-1], "(Other)"]
        assert _ticks(page, 2, "y") == rows  # the markup shows as its own text
        hover = _hover(page, 2)
        assert "interval" in hover and " to " in hover
        pages.shot("heatmap-hover")
        # the bar chart's category axis too
        assert _ticks(page, 1, "x") == ["North", EVIL, "East", "West"]
        # no element from the data: no link to the phishing site anywhere, no <a> in a chart
        assert page.locator('a[href*="evil.example"]').count() == 0
        assert page.locator(".main-svg a").count() == 0
        # the tables show the label as text too
        assert page.locator("#table-body-1 th", has_text="Click here").first.text_content() == EVIL
        assert pages.errors == [], pages.errors
        assert pages.outside == [], pages.outside
    finally:
        pages.close()


@pytest.mark.django_db(transaction=True)
def test_charts_are_drawn_as_they_scroll_into_view(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
):
    """A first visit draws only the charts in the window (issue 11, point 7: interactive
    in 1 s); one further down is drawn when the reader scrolls to it, with the controls
    as they are then. Its numbers are in its table from the start, without Plotly."""
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    payload = release.result.payload["statistics"]
    hist = next(e for e in payload if e["kind"] == "histogram" and not e.get("shape"))
    position = hist["position"]
    pages = Pages(browser, live_server, "public-lazy-charts")
    try:
        # a narrow window (one statistic under the other) whose fold lies above the
        # histogram's chart: measured on a first visit, then the page is opened afresh
        pages.page.set_viewport_size({"width": 800, "height": 700})
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        top = pages.page.evaluate(
            f"document.getElementById('chart-{position}').getBoundingClientRect().top"
        )
        # the script draws a chart within 200 px of the window at once: 260 px keeps it out
        pages.page.set_viewport_size({"width": 800, "height": int(top) - 260})
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page = pages.page
        page.wait_for_selector("body[data-charts-ready='1']")
        page.wait_for_timeout(500)  # nothing more is drawn while the reader does not scroll
        charts = page.evaluate(
            """() => Array.from(document.querySelectorAll('.plot[id^=chart-]')).map((node) => ({
                id: node.id, top: node.getBoundingClientRect().top,
                height: node.getBoundingClientRect().height,
                drawn: node.hasAttribute('data-drawn'),
                svg: node.querySelectorAll('.main-svg').length}))"""
        )
        window = page.evaluate("window.innerHeight")
        in_view = [c for c in charts if c["top"] < window]
        far = [c for c in charts if c["top"] > window + 400]
        assert in_view and far, charts  # the page has charts on both sides of the fold
        assert all(c["drawn"] and c["svg"] for c in in_view), charts
        assert not any(c["drawn"] or c["svg"] for c in far), charts
        assert f"chart-{position}" in [c["id"] for c in charts if not c["drawn"]], charts
        # its numbers are already there as text
        assert page.locator(f"#table-body-{position} tr").count() == len(hist["values"])
        # the reader picks 99 %, all bars at once, then scrolls to the histogram
        # a page carries one level's numbers: another level is a new page
        with page.expect_navigation():
            page.get_by_label("99 %").check()
        page.get_by_label("for all bars of a chart at once").check()
        big_h = accuracy.result_halfwidth(hist["explanation"], confidence="0.99", simultaneous=True)
        assert page.locator(f"#chart-{position} .main-svg").count() == 0
        page.locator(f"#chart-{position}").scroll_into_view_if_needed()
        page.wait_for_selector(f"#chart-{position}[data-drawn] .main-svg")
        bars = chart_error_bars(page, position)
        assert bars["error_y"]["array"] == [big_h] * len(hist["values"])
        assert bars["y"] == [float(v) for v in hist["values"]]
        # every chart drawn: each kept the box it had before (no jump under the reader)
        draw_every_chart(page)
        heights = page.evaluate(
            """() => Array.from(document.querySelectorAll('.plot[id^=chart-]'))
                .map((node) => node.getBoundingClientRect().height)"""
        )
        assert heights == [c["height"] for c in charts]
        assert pages.errors == [], pages.errors
        pages.shot("all-charts-drawn")
    finally:
        pages.close()
