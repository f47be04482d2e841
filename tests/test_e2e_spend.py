"""One spend figure in chromium, in English and in Simplified Chinese.

The project of tests/test_spend_figure.py (tight loss far below the plain sum, which
is past the cap): the registry's table and paragraph, the public project page and
the builder's preview show the same tight epsilon and the same remainder, each with
the basic sum beside it, and the builder says what remains after a release that fits
(never a negative number). Screenshots: artifacts/e2e/.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from budgets.selectors import project_spend_figure
from dpportal import formatting
from dpportal.catalogues import compile_all
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    login,
)
from tests.test_spend_figure import spend_project

pytestmark = [pytest.mark.browser]

LANGUAGES = {
    "en": ("en", "epsilon (tight accounting)", "epsilon (basic sum)"),
    "zh": ("zh-CN,zh;q=0.9", "ε（精确核算）", "ε（基本相加）"),
}


def number(text: str) -> str:
    """A number as the page writes it, in the plain style (Chinese pages use it too)."""
    return text.strip()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_same_spend_on_registry_public_page_and_builder(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    compile_all()
    dataset = spend_project(project, owner, reviewer)
    figure = project_spend_figure(project=project)
    spent = formatting.budget(figure.spent_epsilon)
    remaining = formatting.budget(figure.remaining_epsilon)
    accept, tight_label, basic_label = LANGUAGES[language]

    pages = Pages(browser, live_server, f"spend-{language}")
    try:
        page = pages.page
        login(pages, owner)  # in English; then the reader's language
        pages.context.set_extra_http_headers({"Accept-Language": accept})

        pages.goto(reverse("registry:project", kwargs={"slug": project.slug}))
        if language == "zh":
            assert page.locator("html").get_attribute("lang") == "zh-hans"
        table_spent = page.get_by_test_id("registry-epsilon-spent").inner_text()
        figure_box = page.get_by_test_id("spend-figure")
        headline = figure_box.locator("strong").inner_text()
        paragraph = page.get_by_test_id("registry-tight").locator("strong").inner_text()
        assert number(table_spent) == number(headline) == number(paragraph) == spent
        assert number(page.get_by_test_id("registry-epsilon-remaining").inner_text()) == remaining
        figure_numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", figure_box.inner_text())
        assert remaining in figure_numbers and "3.3" in figure_numbers
        assert page.get_by_role("rowheader", name=tight_label).is_visible()
        assert page.get_by_role("rowheader", name=basic_label).is_visible()
        assert number(page.get_by_test_id("registry-basic-spent").inner_text()) == "3.3"
        assert "3.3" in page.get_by_test_id("spend-basic").inner_text()
        pages.shot("registry")

        pages.goto(reverse("public:project", args=[project.slug]))
        text = page.locator("#epsilon-spent").inner_text()
        assert re.findall(r"\d[\d,]*(?:\.\d+)?", text) == [spent, "3"]
        assert page.locator("#epsilon-remaining").inner_text().strip() == remaining
        assert "3.3" in page.get_by_test_id("spend-basic").inner_text()
        pages.shot("public-project")

        pages.goto(reverse("releases:new", args=[project.slug]))
        page.locator("#f-dataset").select_option(str(dataset.pk))
        page.locator("#f-mechanism").select_option("gaussian")
        page.locator("#f-delta").fill("0.000001")
        page.locator("#f-epsilon").fill("0.5")
        page.locator("#f-epsilon").dispatch_event("input")
        remaining_line = page.locator("#preview-remaining")
        remaining_line.wait_for(state="visible")
        page.wait_for_function(
            "document.getElementById('preview-remaining') && "
            "document.querySelector('#spend [data-param=tight-before]')"
        )
        committed = page.locator("#spend [data-param=tight-before]").inner_text()
        assert number(committed) == spent
        numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", remaining_line.inner_text())
        now, after = numbers[-2], numbers[-1]
        assert now == remaining
        assert 0 <= float(after) < float(remaining)
        assert "-" not in remaining_line.inner_text()
        # the plain sums beside it: past the cap, and no "does not fit" for a release that fits
        assert "-0.8" in page.locator("#preview-basic").inner_text()
        assert page.locator("#preview .error").count() == 0
        pages.shot("builder")
        assert pages.outside == [], f"the page tried to reach the internet: {pages.outside}"
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()
