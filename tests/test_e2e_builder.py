"""The release builder in chromium, in English and Chinese: it fits a 1366 px window,
opens on a usable dataset, keeps what the owner typed across a language switch, says
when the project has no reviewer, and saves labels and descriptions in both languages.
Screenshots: artifacts/e2e/."""

from __future__ import annotations

import pytest

from datasets.models import Dataset
from dpportal.catalogues import compile_all
from releases.models import Release
from tests.factories import MembershipFactory, ProjectFactory
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    login,
)

pytestmark = [pytest.mark.browser]

LANGUAGES = ["en", "zh-hans"]
OTHER = {"en": "zh-hans", "zh-hans": "en"}
NO_REVIEWER = "This project has no reviewer yet"


def _pages(browser, live_server, name: str, *, width: int = 1366, height: int = 768) -> Pages:  # noqa: F811
    return Pages(browser, live_server, f"builder-{name}", viewport=(width, height))


def _open(pages: Pages, user, language: str, path: str):
    """Log in (the login form is read in English), then read `path` in `language`."""
    compile_all()
    login(pages, user)
    if language != "en":
        pages.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
    pages.goto(path)
    page = pages.page
    assert page.locator("html").get_attribute("lang") == language
    return page


def _row(page, i: int):
    return page.locator("#stats tbody tr").nth(i)


def _clean(pages: Pages) -> None:
    assert pages.outside == [], f"the page tried to reach the internet: {pages.outside}"
    assert pages.errors == [], f"JavaScript errors: {pages.errors}"


def _box(locator) -> dict:
    box = locator.bounding_box()
    assert box is not None, "not displayed"
    return box


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.django_db(transaction=True)
def test_builder_fits_a_1366_px_window(browser, live_server, project, owner, language):  # noqa: F811
    make_dataset(project=project, owner=owner)
    pages = _pages(browser, live_server, f"fit-{language}")
    try:
        page = _open(pages, owner, language, f"/releases/new/{project.slug}/")
        page.locator("#add-stat").click()
        kinds = (
            _row(page, 0)
            .locator("select[data-f=kind] option")
            .evaluate_all("(options) => options.map((o) => o.value)")
        )
        assert len(kinds) >= 8
        for kind in kinds:  # every kind shows different options: each must fit
            for i in (0, 1):
                _row(page, i).locator("select[data-f=kind]").select_option(kind)
            _row(page, 1).locator("details.stat-description summary").click()
            width = page.evaluate("document.documentElement.clientWidth")
            assert width == 1366
            card = page.evaluate(
                "(() => { const c = document.getElementById('builder');"
                " return [c.clientWidth, c.scrollWidth, c.getBoundingClientRect().right]; })()"
            )
            assert card[1] <= card[0], f"{kind}: the builder scrolls sideways ({card})"
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            for i in (0, 1):
                row = _row(page, i)
                for target in (
                    row.locator("input[data-f=weight]"),
                    row.locator("input[data-f=hold]"),
                    row.locator("input[data-f=epsilon]"),
                    row.locator("input[data-f=target_halfwidth]"),
                    row.locator("button[data-remove]"),
                    row.locator("input[data-f=label_zh]"),
                ):
                    box = _box(target)
                    assert box["x"] >= 0 and box["x"] + box["width"] <= min(width, card[2]), (
                        kind,
                        box,
                    )
            _row(page, 1).locator("details.stat-description summary").click()
        for header in page.locator("#stats thead th").all():
            box = _box(header)
            assert box["x"] + box["width"] <= width
        pages.shot("1366")
        _clean(pages)
    finally:
        pages.close()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.django_db(transaction=True)
def test_builder_opens_on_the_newest_usable_dataset(
    browser,  # noqa: F811
    live_server,
    owner,
    reviewer,
    language,
):
    project = ProjectFactory(created_by=owner)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    older = make_dataset(project=project, owner=owner, name="wave-1")
    usable = make_dataset(project=project, owner=owner, name="wave-2")
    undeclared = make_dataset(project=project, owner=owner, name="wave-3")
    Dataset.objects.filter(pk=undeclared.pk).update(declared=False)
    unconfirmed = make_dataset(project=project, owner=owner, name="wave-4", unit_confirmed=False)
    empty = ProjectFactory(created_by=owner)
    MembershipFactory(project=empty, user=owner, role="owner")
    MembershipFactory(project=empty, user=reviewer, role="reviewer")
    make_dataset(project=empty, owner=owner, name="draft-wave", unit_confirmed=False)
    pages = _pages(browser, live_server, f"dataset-{language}")
    try:
        page = _open(pages, owner, language, f"/releases/new/{project.slug}/")
        assert page.locator("#f-dataset").input_value() == str(usable.pk)
        disabled = page.locator("#f-dataset option[disabled]").evaluate_all(
            "(options) => options.map((o) => o.value)"
        )
        assert sorted(disabled) == sorted([str(undeclared.pk), str(unconfirmed.pk)])
        assert page.locator(f"#f-dataset option[value='{older.pk}']").is_enabled()
        problems = page.locator("#unusable-datasets li")
        assert problems.count() == 2
        assert "wave-3" in problems.nth(0).inner_text() + problems.nth(1).inner_text()
        assert page.locator("#no-usable-dataset").count() == 0
        # the statistics offer the usable dataset's columns, and its preview works
        _row(page, 0).locator("select[data-f=kind]").select_option("histogram")
        _row(page, 0).locator("select[data-f=column]").select_option("region")
        page.wait_for_selector("#preview table")
        pages.shot("usable")

        pages.goto(f"/releases/new/{empty.slug}/")
        assert page.locator("#no-usable-dataset").is_visible()
        assert page.locator("#f-dataset option:not([disabled])").count() == 0
        assert "draft-wave" in page.locator("#unusable-datasets").inner_text()
        if language == "zh-hans":
            assert "还没有就绪的数据集" in page.locator("#no-usable-dataset").inner_text()
        pages.shot("none-usable")
        _clean(pages)
    finally:
        pages.close()


def _fill(page) -> None:
    page.locator("#builder[data-ready]").wait_for()  # typed after the script filled the form
    page.locator("#f-title").fill("Incomes by region")
    page.locator("#f-title-zh").fill("各地区收入")
    page.locator("#f-description").fill("Survey wave 1.")
    page.locator("#f-description-zh").fill("第一轮调查。")
    page.locator("#f-epsilon").fill("0.4")
    row = _row(page, 0)
    row.locator("select[data-f=kind]").select_option("mean")
    row.locator("select[data-f=column]").select_option("income")
    row.locator("input[data-f=lower]").fill("0")
    row.locator("input[data-f=upper]").fill("100000")
    row.locator("input[data-f=n_guess]").fill("4000")
    row.locator("input[data-f=label]").fill("Average income")
    row.locator("input[data-f=label_zh]").fill("平均收入")
    row.locator("details.stat-description summary").click()
    row.locator("textarea[data-f=description]").fill("Clipped at 100,000.")
    row.locator("textarea[data-f=description_zh]").fill("截断于 100,000。")
    page.locator("#add-stat").click()
    row = _row(page, 1)
    row.locator("select[data-f=kind]").select_option("histogram")
    row.locator("select[data-f=column]").select_option("region")
    row.locator("input[data-f=weight]").fill("2")
    row.locator("input[data-f=label_zh]").fill("各地区人数")


def _assert_filled(page) -> None:
    assert page.locator("#f-title").input_value() == "Incomes by region"
    assert page.locator("#f-title-zh").input_value() == "各地区收入"
    assert page.locator("#f-description").input_value() == "Survey wave 1."
    assert page.locator("#f-description-zh").input_value() == "第一轮调查。"
    assert page.locator("#f-epsilon").input_value() == "0.4"
    assert page.locator("#stats tbody tr").count() == 2
    row = _row(page, 0)
    assert row.locator("select[data-f=kind]").input_value() == "mean"
    assert row.locator("select[data-f=column]").input_value() == "income"
    assert row.locator("input[data-f=upper]").input_value() == "100000"
    assert row.locator("input[data-f=n_guess]").input_value() == "4000"
    assert row.locator("input[data-f=label]").input_value() == "Average income"
    assert row.locator("input[data-f=label_zh]").input_value() == "平均收入"
    assert row.locator("textarea[data-f=description]").input_value() == "Clipped at 100,000."
    assert row.locator("textarea[data-f=description_zh]").is_visible()
    row = _row(page, 1)
    assert row.locator("select[data-f=kind]").input_value() == "histogram"
    assert row.locator("select[data-f=column]").input_value() == "region"
    assert row.locator("input[data-f=weight]").input_value() == "2"
    assert row.locator("input[data-f=label_zh]").input_value() == "各地区人数"


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.django_db(transaction=True)
def test_builder_keeps_its_state_across_a_language_switch(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    language,
):
    make_dataset(project=project, owner=owner)
    pages = _pages(browser, live_server, f"switch-{language}")
    try:
        page = _open(pages, owner, language, f"/releases/new/{project.slug}/")
        _fill(page)
        page.locator("#preview table").first.wait_for()
        # the owner was editing the second statistic's Chinese label
        _row(page, 1).locator("input[data-f=label_zh]").focus()
        with page.expect_navigation():
            page.locator(f"form.languages button[value='{OTHER[language]}']").click()
        page.wait_for_load_state()
        assert page.locator("html").get_attribute("lang") == OTHER[language]
        _assert_filled(page)
        assert page.evaluate("document.activeElement.dataset.f") == "label_zh"
        assert page.evaluate(
            "document.activeElement.closest('tr')"
            " === document.querySelectorAll('#stats tbody tr')[1]"
        )
        page.locator("#preview table").first.wait_for()
        pages.shot("after-switch")
        # kept once: a later visit opens a fresh builder
        pages.goto(f"/releases/new/{project.slug}/")
        assert page.locator("#f-title").input_value() == ""
        assert page.locator("#stats tbody tr").count() == 1
        _clean(pages)
    finally:
        pages.close()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.django_db(transaction=True)
def test_builder_saves_labels_and_descriptions_in_both_languages(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    language,
):
    make_dataset(project=project, owner=owner)
    pages = _pages(browser, live_server, f"texts-{language}")
    try:
        page = _open(pages, owner, language, f"/releases/new/{project.slug}/")
        _fill(page)
        page.locator("#preview table").first.wait_for()
        pages.shot("filled")
        page.locator("#builder button[type=submit]").click()
        page.wait_for_url("**/releases/*/")
        release = Release.objects.get(project=project)
        assert (release.title, release.title_zh) == ("Incomes by region", "各地区收入")
        assert (release.description, release.description_zh) == ("Survey wave 1.", "第一轮调查。")
        mean, histogram = release.statistics.order_by("position")
        assert (mean.label, mean.label_zh) == ("Average income", "平均收入")
        assert (mean.description, mean.description_zh) == (
            "Clipped at 100,000.",
            "截断于 100,000。",
        )
        assert histogram.label_zh == "各地区人数"
        # only a Chinese label: English readers fall back to it (dpportal.bilingual)
        assert histogram.label == ""
        assert (histogram.description, histogram.description_zh) == ("", "")
        # the draft opens again with every text in its input
        pages.goto(f"/releases/{release.pk}/edit/")
        _assert_filled(page)
        # a refused save keeps them too
        page.locator("#f-epsilon").fill("50")
        page.locator("#builder button[type=submit]").click()
        page.locator("#builder-error").wait_for()
        page.locator("#builder[data-ready]").wait_for()  # the script has filled the form
        _assert_filled_but_epsilon(page)
        _clean(pages)
    finally:
        pages.close()


def _assert_filled_but_epsilon(page) -> None:
    page.locator("#f-epsilon").fill("0.4")
    _assert_filled(page)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.django_db(transaction=True)
def test_a_project_without_reviewer_says_so_where_the_owner_submits(
    browser,  # noqa: F811
    live_server,
    owner,
    reviewer,
    language,
):
    lonely = ProjectFactory(created_by=owner)
    MembershipFactory(project=lonely, user=owner, role="owner")
    # the owner holding the reviewer role too does not count: nobody decides on their own
    MembershipFactory(project=lonely, user=owner, role="reviewer")
    make_dataset(project=lonely, owner=owner)
    staffed = ProjectFactory(created_by=owner)
    MembershipFactory(project=staffed, user=owner, role="owner")
    MembershipFactory(project=staffed, user=reviewer, role="reviewer")
    make_dataset(project=staffed, owner=owner)
    pages = _pages(browser, live_server, f"reviewer-{language}")
    try:
        page = _open(pages, owner, language, f"/releases/new/{staffed.slug}/")
        assert page.locator("#no-reviewer").count() == 0

        pages.goto(f"/releases/new/{lonely.slug}/")
        notice = page.locator("#no-reviewer")
        assert notice.is_visible()
        if language == "en":
            assert NO_REVIEWER in notice.inner_text()
        link = notice.get_by_role("link")
        assert link.get_attribute("href") == f"/projects/{lonely.slug}/"
        page.locator("#f-title").fill("Nobody reviews this")
        _row(page, 0).locator("select[data-f=kind]").select_option("histogram")
        _row(page, 0).locator("select[data-f=column]").select_option("region")
        page.locator("#preview table").first.wait_for()
        pages.shot("builder")
        page.locator("#builder button[type=submit]").click()
        page.wait_for_url("**/releases/*/")
        # the draft's page says it again beside the submit button
        assert page.locator("#no-reviewer").is_visible()
        submit = page.locator("form[action$='/submit/'] button")
        assert _box(page.locator("#no-reviewer"))["y"] < _box(submit)["y"]
        pages.shot("draft")
        # submitting still works: the request waits for a reviewer, and the owner is told
        submit.click()
        page.wait_for_load_state()
        release = Release.objects.get(project=lonely)
        assert release.status == Release.Status.SUBMITTED
        warning = page.locator(".messages li.warning")
        assert warning.is_visible()
        if language == "en":
            assert NO_REVIEWER in warning.inner_text()
        assert page.locator("#no-reviewer").is_visible()
        pages.shot("submitted")

        # once a reviewer joins, the notice is gone
        MembershipFactory(project=lonely, user=reviewer, role="reviewer")
        pages.goto(f"/releases/{release.pk}/")
        assert page.locator("#no-reviewer").count() == 0
        _clean(pages)
    finally:
        pages.close()
