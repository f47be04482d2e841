"""A Stata file's value labels become the public page's labels, in chromium.

The owner fills the categories and their labels in from the file's value labels on
the declaration page (English labels go to the English box, Chinese ones to the
Chinese box), adds the missing Chinese labels by hand and saves; the release is
then submitted, approved, computed and published; the public page shows the labels
(never the codes) in its tables, its chart axes and its statements, in English and
in Chinese, each falling back to the other language where the owner gave only one.
"""

from __future__ import annotations

import pytest

from datasets.models import Column
from tests.labels_support import publish, stata_dataset
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    column_fieldset,
    draw_every_chart,
    login,
)
from tests.test_e2e_public_charts import _ticks

pytestmark = [pytest.mark.browser]


def _declare_from_value_labels(pages: Pages, dataset) -> None:
    page = pages.page
    pages.goto(f"/datasets/{dataset.pk}/declare/")
    sex = column_fieldset(page, "sex")
    sex.get_by_role("button", name="Use the value labels as the categories").click()
    assert sex.locator("textarea.category-labels[lang=en]").input_value() == "1 = Male\n2 = Female"
    assert sex.locator("textarea.category-labels[lang=zh-Hans]").input_value() == ""
    sex.locator("textarea.category-labels[lang=zh-Hans]").fill("1 = 男\n2 = 女")
    sex.locator("input[type=checkbox][name^=confirm-derived]").check()
    region = column_fieldset(page, "region")
    region.get_by_role("button", name="Use the value labels as the categories").click()
    # Chinese value labels fill the Chinese box
    assert region.locator("textarea.category-labels[lang=en]").input_value() == ""
    chinese = region.locator("textarea.category-labels[lang=zh-Hans]").input_value()
    assert chinese == "1 = 北方\n2 = 南方"
    region.locator("input[type=checkbox][name^=confirm-derived]").check()
    column_fieldset(page, "age").locator("input[type=radio][value=excluded]").check()
    page.check("input[name=unit][value=row]")
    pages.shot("labels-declared")
    page.get_by_role("button", name="Save the declaration").click()
    page.wait_for_load_state()


def _public_page(pages: Pages, release) -> None:
    pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/")
    pages.page.wait_for_selector("body[data-charts-ready='1']")
    draw_every_chart(pages.page)


@pytest.mark.django_db(transaction=True)
def test_stata_value_labels_are_the_labels_of_the_published_release(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    tmp_path,
):
    dataset = stata_dataset(project=project, owner=owner, tmp_path=tmp_path)
    pages = Pages(browser, live_server, "category-labels-owner")
    try:
        login(pages, owner)
        _declare_from_value_labels(pages, dataset)
        # the builder's category field offers the codes with their labels
        pages.goto(f"/releases/new/{project.slug}/")
        row = pages.page.locator("#stats tbody tr").first
        row.locator("select[data-f=kind]").select_option("count")
        row.locator("select[data-f=column]").select_option("sex")
        options = row.locator("datalist option")
        assert [o.get_attribute("value") for o in options.all()] == ["1", "2"]
        assert [o.get_attribute("label") for o in options.all()] == ["1 = Male", "2 = Female"]
        assert pages.errors == [] and pages.outside == []
    finally:
        pages.close()
    dataset.refresh_from_db()
    assert dataset.declared
    sex = Column.objects.get(dataset=dataset, name="sex")
    assert sex.categories == ["1", "2"]
    assert sex.category_labels == {
        "1": {"en": "Male", "zh-hans": "男"},
        "2": {"en": "Female", "zh-hans": "女"},
    }
    release = publish(project=project, owner=owner, reviewer=reviewer, dataset=dataset)

    english = Pages(browser, live_server, "category-labels-en")
    try:
        _public_page(english, release)
        page = english.page
        # the histogram of sex: its bars and its table name the labels, not the codes
        assert _ticks(page, 0, "x") == ["Male", "Female", "(Other)"]
        rows = page.locator("#table-body-0 th").all_text_contents()
        assert [r.strip() for r in rows] == ["Male", "Female", "(Other)"]
        # the two-way table: rows by sex, columns by region (Chinese labels only: shown)
        assert _ticks(page, 2, "y")[:2] == ["Male", "Female"]
        assert _ticks(page, 2, "x")[:2] == ["北方", "南方"]
        statement = page.locator("#statement-3").inner_text()
        assert "北方" in statement or "南方" in statement
        english.shot("public-en")
        assert english.errors == [] and english.outside == []
    finally:
        english.close()

    chinese = Pages(browser, live_server, "category-labels-zh")
    chinese.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
    try:
        _public_page(chinese, release)
        page = chinese.page
        assert page.locator("html").get_attribute("lang") == "zh-hans"
        ticks = _ticks(page, 0, "x")
        assert ticks[:2] == ["男", "女"] and "1" not in ticks
        rows = [r.strip() for r in page.locator("#table-body-0 th").all_text_contents()]
        assert rows[:2] == ["男", "女"]
        assert _ticks(page, 2, "y")[:2] == ["男", "女"]
        assert _ticks(page, 2, "x")[:2] == ["北方", "南方"]
        chinese.shot("public-zh")
        assert chinese.errors == [] and chinese.outside == []
    finally:
        chinese.close()
