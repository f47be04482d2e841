"""A cross-tabulation's public page in chromium: a heatmap above its two-way table, and
its numbers refilled for another confidence level."""

from __future__ import annotations

import pytest

from releases.models import Statistic
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
)
from tests.test_kind_crosstab_surfaces import release  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser]


@pytest.mark.django_db(transaction=True)
def test_the_two_way_table_gets_a_heatmap_and_follows_the_controls(
    browser,  # noqa: F811
    live_server,
    release,  # noqa: F811
):
    position = Statistic.objects.get(kind="crosstab").position
    pages = Pages(browser, live_server, "crosstab")
    try:
        pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/")
        page = pages.page
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        chart = page.evaluate(
            """(id) => {
                const node = document.getElementById(id);
                return {trace: node.data[0].type, rows: node.data[0].z.length,
                        cols: node.data[0].z[0].length, x: node._fullLayout.xaxis.type};
            }""",
            f"chart-{position}-3",
        )
        assert chart == {"trace": "heatmap", "rows": 2, "cols": 3, "x": "category"}
        span = page.locator(f"#crosstab-{position} [data-halfwidth-of]").first
        before = span.text_content()
        page.check('input[name=confidence][value="0.99"]')
        page.wait_for_function(
            "([sel, old]) => document.querySelector(sel).textContent !== old",
            arg=[f"#crosstab-{position} [data-halfwidth-of]", before],
        )
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
