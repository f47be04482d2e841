"""No inline style in chromium under the strict policy: the pages (and Plotly's charts,
whose global rules come from a static sheet) draw without one CSP violation.

The policy has no 'unsafe-inline' for styles anywhere: <style> elements and style
attributes in markup are refused (scripts may still set styles through the CSSOM).
Each page is watched for `securitypolicyviolation` events from before its first
script runs; the charts are drawn and hovered, the budget bars measured. plotly.js
probes a style attribute on a heatmap page (refused, harmlessly: see below).
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.public_builders import build_release
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
    login,
)

pytestmark = [pytest.mark.browser]

WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(
    [e.violatedDirective, e.blockedURI, (e.sample || '').slice(0, 80), e.sourceFile || '']));
"""


def violations(page) -> list:
    return page.evaluate("window.__violations")


def test_the_policy_allows_no_inline_style(db):
    header = Client().get("/")["Content-Security-Policy"]
    assert "'unsafe-inline'" not in header
    assert "style-src-attr 'none'" in header


@pytest.mark.django_db(transaction=True)
def test_pages_and_charts_draw_without_inline_styles(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    pages = Pages(browser, live_server, "csp-styles")
    pages.context.add_init_script(WATCH)
    try:
        page = pages.page
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        # plotly.js found our sheet and created no <style> element of its own
        assert page.locator("style").count() == 0
        modebar = page.locator(".modebar").first
        assert modebar.evaluate("(n) => getComputedStyle(n).position") == "absolute"
        area = page.locator("#chart-2 .nsewdrag").first  # the heatmap: hover anywhere
        area.scroll_into_view_if_needed()
        box = area.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.locator("#chart-2 .hoverlayer .hovertext").first.wait_for(state="visible")
        pages.shot("release")
        # The only refusals: the heatmap's probe of `image-rendering`, a style attribute
        # plotly.js sets on a test <image> (d3's attr) to see whether the browser
        # scales images pixelated. Refused, plotly.js draws the heatmap at full size on
        # a canvas instead: the same picture, nothing lost.
        refused = violations(page)
        assert all(v[0] == "style-src-attr" and "plotly-dpportal" in v[3] for v in refused)
        assert page.locator("#chart-2 image").count() == 1

        pages.goto(f"/p/{project.slug}/")
        bar = page.locator("svg.bar").first
        width = bar.bounding_box()["width"]
        spent = page.locator("svg.bar rect.spent").first.bounding_box()["width"]
        assert 0 < spent < width  # the spent share is drawn, and is less than the whole
        assert violations(page) == []

        for path in ("/api/docs/", "/admin/login/"):  # Swagger UI, Django's admin
            pages.goto(path)
            page.wait_for_load_state("networkidle")
            assert violations(page) == [], path
        login(pages, owner)
        for path in (
            f"/projects/{project.slug}/budget/",
            f"/releases/new/{project.slug}/",
            "/api/v1/projects/",  # DRF's browsable API
        ):
            pages.goto(path)
            page.wait_for_load_state("networkidle")
            pages.shot(path.strip("/").replace("/", "-"))
            assert violations(page) == [], path
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
