"""A three-column cross-tabulation from the builder to the public page, in chromium.

The owner declares region x age x income (every table of up to three columns, and
the total) in the builder under the Gaussian mechanism and submits it; the reviewer
approves it in the browser; a real worker computes it; the owner publishes it. The
public page, in English and in Chinese (the browser asks for zh-CN), shows every
table; in its whole-number display every lower table is exactly the sum of each
higher table containing it, read from the cells on the page; the unbiased tables in
data.json agree the same way (to float precision).
"""

from __future__ import annotations

import math
import re
from itertools import combinations

import numpy as np
import pytest

from datasets.models import Column
from dpportal.catalogues import compile_all
from releases.models import Release
from tests.conftest import wait_for
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
    login,
    publish,
    submit_for_review,
)

pytestmark = [pytest.mark.browser, pytest.mark.worker]

TITLE = "Region by age by income"


def _build(pages: Pages, project) -> None:
    page = pages.page
    pages.goto(f"/releases/new/{project.slug}/")
    page.locator("#builder[data-ready]").wait_for()
    page.locator("#f-title").fill(TITLE)
    page.locator("#f-mechanism").select_option("gaussian")
    page.locator("#f-delta").fill("0.000001")
    page.locator("#f-epsilon").fill("1")
    row = page.locator("#stats tbody tr").first
    row.locator("select[data-f=kind]").select_option("crosstab")
    row.locator("select[data-f=columns]").select_option(["region", "age", "income"])
    row.locator("select[data-f=way]").select_option("3")
    row.locator("input[data-f=total]").check()
    page.locator("#preview table tr[data-kind=crosstab]").wait_for()
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url("**/releases/*/")


def _tables(entry: dict, values: list[float]) -> dict[tuple[int, ...], np.ndarray]:
    out = {}
    for table in entry["tables"]:
        size = math.prod(table["shape"])
        block = values[table["start"] : table["start"] + size]
        out[tuple(table["marginal"])] = np.asarray(block, dtype=float).reshape(table["shape"])
    return out


def _assert_consistent(tables: dict[tuple[int, ...], np.ndarray], *, atol: float) -> int:
    checked = 0
    for low, high in combinations(sorted(tables, key=len), 2):
        if set(low) < set(high):
            drop = tuple(k for k, i in enumerate(high) if i not in low)
            np.testing.assert_allclose(tables[high].sum(axis=drop), tables[low], atol=atol)
            checked += 1
    return checked


def _check_public(pages: Pages, release: Release, *, chinese: bool) -> None:
    entry = release.result.payload["statistics"][0]
    position = entry["position"]
    page = pages.page
    pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/?display=rounded")
    page.wait_for_selector("body[data-charts-ready='1']")
    draw_every_chart(page)
    assert page.locator("html").get_attribute("lang") == ("zh-hans" if chinese else "en")
    box = page.locator(f"#crosstab-{position}")
    assert box.locator("table").count() >= len(entry["tables"])
    shown = page.evaluate(
        """(p) => Object.fromEntries([...document.querySelectorAll(
            '#crosstab-' + p + ' [data-value-of]')].map(
            (td) => [td.dataset.valueOf, td.textContent.trim()]))""",
        position,
    )
    values = [int(re.sub(r"[^\d]", "", shown[str(i)])) for i in range(len(entry["values"]))]
    assert min(values) >= 0
    assert _assert_consistent(_tables(entry, values), atol=0) >= 12
    # the charts: bars above each one-column table, a heatmap above each two-column one and
    # above each grid of the three-column one, drawn with the whole numbers shown
    charts = page.evaluate(
        """(p) => [...document.querySelectorAll('#crosstab-' + p + ' .plot')].map(
            (n) => ({id: n.id, type: n.data[0].type, y: n.data[0].y, z: n.data[0].z}))""",
        position,
    )
    kinds_drawn = [c["type"] for c in charts]
    (cube,) = [t for t in entry["tables"] if len(t["marginal"]) == 3]
    grids = cube["shape"][0]
    assert kinds_drawn.count("bar") == 3 and kinds_drawn.count("heatmap") == 3 + grids
    size = cube["shape"][1] * cube["shape"][2]
    for b in range(grids):
        (grid,) = [c for c in charts if c["id"] == f"chart-{position}-7-{b}"]
        start = cube["start"] + b * size
        flat = [v for row in grid["z"] for v in row]
        assert flat == values[start : start + size]
    text = box.inner_text()
    notice = page.locator(f"#stat-{position} .notice[data-show-when-rounded]").inner_text()
    if chinese:
        assert "每个计数的误差在正负" in text, text[:300]
        assert "各表之间仍然精确相加一致" in notice, notice
    else:
        assert "each count within plus or minus" in text, text[:300]
        assert "still add up exactly" in notice, notice
    pages.shot("crosstab-public-" + ("zh" if chinese else "en"))


@pytest.mark.django_db(transaction=True)
def test_a_three_column_crosstab_is_built_approved_computed_and_published(
    browser,  # noqa: F811
    live_server,
    celery_workers,
    project,
    owner,
    reviewer,
):
    compile_all()
    celery_workers.start(concurrency=1)
    dataset = make_dataset(project=project, owner=owner, rows=3000)
    Column.objects.filter(dataset=dataset, name="income").update(
        bin_edges=[0, 50000, 100000, 150000]
    )
    opened: list[Pages] = []

    def open_pages(name: str, user, *, chinese: bool = False) -> Pages:
        pages = Pages(browser, live_server, name)
        if chinese:
            pages.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
        if user is not None:
            login(pages, user)
        opened.append(pages)
        return pages

    try:
        owner_en = open_pages("xt-owner", owner)
        _build(owner_en, project)
        release = Release.objects.get(project=project, title=TITLE)
        submit_for_review(owner_en, release)

        reviewer_en = open_pages("xt-reviewer", reviewer)
        reviewer_en.goto(f"/projects/requests/{release.budget_request_id}/")
        assert "ResidualPlanner" in reviewer_en.page.locator("main").inner_text()
        reviewer_en.page.get_by_role("button", name="Approve and reserve").click()
        reviewer_en.page.wait_for_load_state()
        wait_for(
            lambda: Release.objects.filter(pk=release.pk, status="computed").exists(),
            timeout=180,
            message="the worker did not compute the release",
        )
        release.refresh_from_db()
        entry = release.result.payload["statistics"][0]
        assert len(entry["tables"]) == 8  # the total, 3 one-way, 3 two-way, 1 three-way
        assert _assert_consistent(_tables(entry, entry["values"]), atol=1e-6) == 19

        publish(owner_en, release)

        for chinese in (False, True):
            public = open_pages("xt-public-" + ("zh" if chinese else "en"), None, chinese=chinese)
            _check_public(public, release, chinese=chinese)
        for p in opened:
            assert p.outside == [], f"a page tried to reach the internet: {p.outside}"
            assert p.errors == [], f"JavaScript errors: {p.errors}"
    finally:
        for p in opened:
            p.close()
