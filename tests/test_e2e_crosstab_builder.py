"""A cross-tabulation declared in the builder in chromium: picked columns, tables, total."""

from __future__ import annotations

import pytest

from releases.models import Release
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    login,
)

pytestmark = [pytest.mark.browser]


@pytest.mark.django_db(transaction=True)
def test_the_builder_saves_a_crosstab(browser, live_server, project, owner):  # noqa: F811
    make_dataset(project=project, owner=owner)
    pages = Pages(browser, live_server, "builder-crosstab", viewport=(1366, 768))
    try:
        login(pages, owner)
        pages.goto(f"/releases/new/{project.slug}/")
        page = pages.page
        page.locator("#builder[data-ready]").wait_for()
        page.locator("#f-mechanism").select_option("gaussian")
        page.locator("#f-delta").fill("0.000001")
        page.locator("#f-epsilon").fill("1")
        row = page.locator("#stats tbody tr").first
        row.locator("select[data-f=kind]").select_option("crosstab")
        row.locator("select[data-f=columns]").select_option(["region", "age"])
        row.locator("select[data-f=way]").select_option("")  # a list of tables
        row.locator("input[data-f=marginals]").fill("region × age")
        row.locator("input[data-f=total]").check()
        page.locator("#preview table tr[data-kind=crosstab]").wait_for()
        page.locator("#builder button[type=submit]").click()
        page.wait_for_url("**/releases/*/")
        (stat,) = Release.objects.get(project=project).statistics.all()
        assert stat.kind == "crosstab"
        assert stat.crosstab == {
            "columns": ["region", "age"], "way": None, "marginals": [[0, 1]], "total": True,
        }  # fmt: skip
        # the draft opens again as it was declared
        release = Release.objects.get(project=project)
        pages.goto(f"/releases/{release.pk}/edit/")
        page.locator("#builder[data-ready]").wait_for()
        row = page.locator("#stats tbody tr").first
        picked = row.locator("select[data-f=columns]").evaluate(
            "(s) => [...s.selectedOptions].map((o) => o.value)"
        )
        assert picked == ["region", "age"]
        assert row.locator("input[data-f=marginals]").input_value() == "region × age"
        assert row.locator("input[data-f=total]").is_checked()
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
