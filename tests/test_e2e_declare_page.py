"""The declaration page and the dataset page for owners, in chromium, in English and Chinese.

The declaration page shows the inputs of the kind chosen for each column only, and the
"data-derived" badge only on a column something was filled in from the profile for; a
year column's suggested range is a rounded range of the data (decades), not 1000 to
3000. The dataset page shows the rows, each column's share of empty cells, and the
frequent values as a list (a value holding a comma stays one item).
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation

from datasets.models import Column, Dataset
from datasets.services import dataset_create, dataset_ingest
from dpportal.catalogues import compile_all
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    column_fieldset,
    login,
)

pytestmark = [pytest.mark.browser]

STATUSES = ["Unemployed, Laid Off", "Working", "Retired"]
ROWS = 300


def _csv() -> bytes:
    """300 rows: a status (each value in 100 rows), a survey year from 1972 to 2018, and
    an income empty in 39 % of the rows."""
    lines = ["status,year,income"]
    for i in range(ROWS):
        income = "" if i % 100 < 39 else f"{20000 + 37 * i}.5"
        lines.append(f'"{STATUSES[i % 3]}",{1972 + i % 47},{income}')
    return ("\n".join(lines) + "\n").encode()


def _dataset(project, owner) -> Dataset:
    dataset = dataset_create(
        project=project,
        name="wages",
        uploaded_file=SimpleUploadedFile("wages.csv", _csv()),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    return dataset


def _shown(fieldset) -> list[str]:
    """The kinds whose inputs the column shows."""
    return [
        box.get_attribute("data-kind")
        for box in fieldset.locator(".kind-inputs").all()
        if box.is_visible()
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_declaration_page_shows_the_chosen_kind_and_real_badges_only(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    language,
):
    compile_all()
    dataset = _dataset(project, owner)
    with translation.override(language):
        bounds_word = str(Column.Derived.BOUNDS.label)
    pages = Pages(browser, live_server, f"declare-page-{language}")
    try:
        page = pages.page
        login(pages, owner)
        pages.context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_server.url}]
        )
        pages.goto(f"/datasets/{dataset.pk}/declare/")
        assert page.locator("html").get_attribute("lang") == language
        status = column_fieldset(page, "status")
        year = column_fieldset(page, "year")
        income = column_fieldset(page, "income")
        # nothing declared yet: no kind's inputs, and no badge anywhere
        for column in (status, year, income):
            assert _shown(column) == []
        assert page.locator(".derived-badge:visible").count() == 0
        assert page.locator(".derived-confirm:visible").count() == 0
        # each kind shows its own inputs (missing values: every kind but excluded)
        kinds = {
            "categorical": ["categorical", "categorical numeric date"],
            "numeric": ["numeric", "categorical numeric date"],
            "date": ["date", "categorical numeric date"],
            "excluded": [],
        }
        for kind, shown in kinds.items():
            status.locator(f"input[type=radio][value={kind}]").check()
            assert _shown(status) == shown, kind
        assert status.locator("textarea[name^=categories-]").is_hidden()
        # the year's suggestion: numeric, a range in decades, marked data-derived
        year.locator("button[data-fill]:not([data-fill-from])").click()
        assert year.locator("input[type=radio][value=numeric]").is_checked()
        assert _shown(year) == ["numeric", "categorical numeric date"]
        lower = year.locator("input[name^=lower-]").input_value()
        upper = year.locator("input[name^=upper-]").input_value()
        assert lower.endswith("0") and upper.endswith("0"), (lower, upper)
        assert 1970 <= int(lower) <= 1990 and 2000 <= int(upper) <= 2020, (lower, upper)
        badge = year.locator(".derived-badge")
        assert badge.is_visible() and badge.locator(".derived-parts").inner_text() == bounds_word
        assert year.locator(".derived-confirm").is_visible()
        # the other columns took nothing from the profile: still no badge
        assert page.locator(".derived-badge:visible").count() == 1
        # declared excluded, the filled-in bounds are not used: no badge
        year.locator("input[type=radio][value=excluded]").check()
        assert badge.is_hidden() and _shown(year) == []
        year.locator("input[type=radio][value=numeric]").check()
        assert badge.is_visible()
        pages.shot("declare")
        assert pages.errors == [], pages.errors
    finally:
        pages.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_dataset_page_shows_rows_empty_shares_and_frequent_values_as_a_list(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    language,
):
    compile_all()
    dataset = _dataset(project, owner)
    pages = Pages(browser, live_server, f"dataset-page-{language}")
    try:
        page = pages.page
        login(pages, owner)
        pages.context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_server.url}]
        )
        pages.goto(f"/datasets/{dataset.pk}/")
        assert page.locator("html").get_attribute("lang") == language
        assert "300" in page.locator("#dataset-rows").inner_text()
        shares = page.locator(".empty-share").all_inner_texts()
        assert len(shares) == 3
        assert all(re.search(r"(?<![\d.])0 %", share) for share in shares[:2]), shares
        assert "39 %" in shares[2], shares
        items = page.locator("ul.value-list").first.locator("li").all_inner_texts()
        assert items == sorted(STATUSES)  # "Unemployed, Laid Off" is one item
        pages.shot("dataset")
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
