"""Owner texts in both languages, in chromium: each reader sees the owner's text in their
language, the other language when the owner wrote only one, and the names dpportal
gives unnamed statistics and cells in their language.

The owner writes the texts in the forms (project, dataset, column labels on the
declaration page) in the English interface and the Chinese one; the public pages are
read by an English and a Chinese browser (Accept-Language). Screenshots:
artifacts/e2e/.
"""

from __future__ import annotations

import pytest

from datasets.models import Column
from dpportal.catalogues import compile_all
from tests.bilingual_support import bilingual_project, bilingual_release, proposed_chinese
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    column_fieldset,
    draw_every_chart,
    login,
)

pytestmark = [pytest.mark.browser]

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def _headings(page) -> list[str]:
    return [t.strip() for t in page.locator("section.statistic h2").all_inner_texts()]


@pytest.mark.django_db(transaction=True)
def test_each_reader_sees_the_owner_texts_in_their_language(
    browser,  # noqa: F811
    live_server,
    monkeypatch,
    project,
    owner,
    reviewer,
):
    compile_all()
    proposed_chinese(monkeypatch)
    project = bilingual_project(project)
    release = bilingual_release(project=project, owner=owner, reviewer=reviewer)
    url = f"/p/{project.slug}/releases/{release.pk}/"
    expected = {
        "en": [
            "Rows",  # made by dpportal
            "Mean of age",  # made; the column has no label
            "Mean of Yearly income by Region",  # made, with the columns' labels
            "Rows by region",  # the owner's, in both languages
            "收入总和",  # the owner's, in Chinese only: the fallback
            "The most common region",  # the owner's, in English only
        ],
        "zh": ["行数", "age的均值", "按地区分组的年收入均值", "各地区行数", "收入总和",
               "The most common region"],
    }  # fmt: skip
    for language in ("en", "zh"):
        pages = Pages(browser, live_server, f"bilingual-public-{language}")
        if language == "zh":
            pages.context.set_extra_http_headers(CHINESE)
        try:
            page = pages.page
            pages.goto("/")
            home = page.locator("main").inner_text()
            assert ("人口普查" if language == "zh" else "Census") in home
            assert ("Census" not in home) if language == "zh" else ("人口普查" not in home)

            pages.goto(f"/p/{project.slug}/")
            about = page.locator("main").inner_text()
            description = "每月的人口普查数据。" if language == "zh" else "Monthly census figures."
            assert description in about
            assert "One respondent." in about  # written in English only: both see it
            title = "人口普查第一轮" if language == "zh" else "Census wave 1"
            assert page.get_by_role("link", name=title).count() == 1
            pages.shot("project")

            pages.goto(url)
            page.wait_for_selector("body[data-charts-ready='1']")
            draw_every_chart(page)
            assert page.locator("h1").inner_text() == title
            assert page.locator("#release-description").inner_text() == (
                "Counts of the first wave."  # English only: the fallback for Chinese readers
            )
            assert _headings(page) == expected[language]
            described = page.locator("#stat-3 .stat-description").inner_text()
            assert described == (
                "每个地区一个条形。" if language == "zh" else "One bar per region."
            )
            count_table = page.locator("#stat-0").inner_text()
            assert ("全部行" if language == "zh" else "All rows") in count_table
            if language == "zh":
                assert "All rows" not in count_table and "Mean of" not in page.inner_text("main")
            # the chart of the mean by region names its values by the column's label
            axes = page.evaluate(
                "() => { const n = document.getElementById('chart-2');"
                " return JSON.stringify([n.layout.xaxis.title, n.layout.yaxis.title]); }"
            )
            assert ("年收入" if language == "zh" else "Yearly income") in axes, axes
            pages.shot("release")
            assert pages.errors == [], pages.errors
            assert pages.outside == [], pages.outside
        finally:
            pages.close()


@pytest.mark.django_db(transaction=True)
def test_the_owner_writes_both_languages_in_the_forms(
    browser,  # noqa: F811
    live_server,
    monkeypatch,
    owner,
):
    compile_all()
    pages = Pages(browser, live_server, "bilingual-owner")
    try:
        page = pages.page
        login(pages, owner)
        # --- in English: a new project named in both languages --------------------------
        pages.goto("/projects/new/")
        page.get_by_label("Name", exact=True).fill("Household survey")
        page.get_by_label("Name in Chinese").fill("住户调查")
        page.get_by_label("Description", exact=True).fill("Regional statistics.")
        page.get_by_label("Description in Chinese").fill("地区统计。")
        page.get_by_label("Privacy unit", exact=True).fill("One household.")
        pages.shot("project-form")
        page.get_by_role("button", name="Create project").click()
        page.wait_for_load_state()
        assert page.locator("h1").inner_text() == "Household survey"
        assert "One household." in page.locator("main").inner_text()
        from budgets.models import Project

        project = Project.objects.get(created_by=owner)
        assert (project.name_zh, project.description_zh) == ("住户调查", "地区统计。")
        dataset = make_dataset(project=project, owner=owner, rows=300)

        # --- in Chinese: the column labels and the dataset's texts ----------------------
        pages.context.set_extra_http_headers(CHINESE)
        pages.goto(f"/projects/{project.slug}/")
        assert page.locator("h1").inner_text() == "住户调查"
        body = page.locator("main").inner_text()
        assert "地区统计。" in body and "One household." in body  # the fallback
        pages.goto(f"/datasets/{dataset.pk}/declare/")
        income = column_fieldset(page, "income")
        income.locator("input[name='label-3']").fill("Yearly income")
        income.locator("input[name='label-zh-3']").fill("年收入")
        page.check("input[name=unit][value=row]")
        pages.shot("declare-labels")
        page.locator("#declare-form button[type=submit]").click()
        page.wait_for_load_state()
        column = Column.objects.get(dataset=dataset, name="income")
        assert (column.label, column.label_zh) == ("Yearly income", "年收入")
        pages.goto(f"/datasets/{dataset.pk}/")
        assert "年收入" in page.locator("main table").inner_text()
        page.locator("#dataset-texts summary").click()
        page.locator("#dataset-texts input[name=name_zh]").fill("住户样本")
        page.locator("#dataset-texts textarea[name=description_zh]").fill("一千户。")
        page.locator("#dataset-texts button[type=submit]").click()
        page.wait_for_load_state()
        assert page.locator("h1").inner_text() == "住户样本"
        assert page.locator("#dataset-description").inner_text() == "一千户。"
        pages.shot("dataset-zh")

        # --- back in English: the English texts, the Chinese where there is no English ---
        pages.context.set_extra_http_headers({"Accept-Language": "en"})
        pages.goto(f"/datasets/{dataset.pk}/")
        assert page.locator("h1").inner_text() == "survey"
        assert page.locator("#dataset-description").inner_text() == "一千户。"  # the fallback
        assert "Yearly income" in page.locator("main table").inner_text()
        pages.shot("dataset-en")
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
