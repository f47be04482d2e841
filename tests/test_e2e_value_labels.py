"""Stata value labels on the declaration page, in chromium: a SUGGESTION the owner confirms.

The labels come from the file's metadata (private); the page shows them, a button
fills the labelled codes in as the column's categories, marked data-derived, and
the declaration is refused until the owner ticks the confirmation.
"""

from __future__ import annotations

import pandas as pd
import pyreadstat
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import Column, Dataset
from datasets.services import dataset_create, dataset_ingest
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    column_fieldset,
    login,
)

pytestmark = [pytest.mark.browser]


def _stata_dataset(project, owner, tmp_path) -> Dataset:
    df = pd.DataFrame({"性别": [1 + i % 2 for i in range(200)], "age": list(range(200))})
    pyreadstat.write_dta(df, tmp_path / "s.dta", variable_value_labels={"性别": {1: "男", 2: "女"}})
    dataset = dataset_create(
        project=project,
        name="stata",
        uploaded_file=SimpleUploadedFile("s.dta", (tmp_path / "s.dta").read_bytes()),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    return dataset


@pytest.mark.django_db(transaction=True)
def test_value_labels_are_suggested_categories_the_owner_confirms(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    tmp_path,
):
    dataset = _stata_dataset(project, owner, tmp_path)
    pages = Pages(browser, live_server, "value-labels")
    try:
        page = pages.page
        login(pages, owner)
        pages.goto(f"/datasets/{dataset.pk}/declare/")
        sex = column_fieldset(page, "性别")
        assert sex.locator(".value-label-list").inner_text() == "1 = 男, 2 = 女"
        assert column_fieldset(page, "age").locator(".value-labels").count() == 0
        sex.get_by_role("button", name="Use the value labels as the categories").click()
        assert sex.locator("input[type=radio][value=categorical]").is_checked()
        assert sex.locator("textarea").first.input_value() == "1\n2"
        confirm = sex.locator("input[type=checkbox][name^=confirm-derived]")
        assert confirm.is_visible() and not confirm.is_checked()
        age = column_fieldset(page, "age")
        age.locator("input[type=radio][value=excluded]").check()
        page.check("input[name=unit][value=row]")
        pages.shot("labels-filled")
        # not confirmed: refused, nothing declared
        page.get_by_role("button", name="Save the declaration").click()
        page.wait_for_load_state()
        dataset.refresh_from_db()
        assert not dataset.declared
        assert Column.objects.get(dataset=dataset, name="性别").categories in (None, [])
        # confirmed: the codes become the public categories
        sex = column_fieldset(page, "性别")
        sex.locator("input[type=checkbox][name^=confirm-derived]").check()
        page.get_by_role("button", name="Save the declaration").click()
        page.wait_for_load_state()
        dataset.refresh_from_db()
        assert dataset.declared
        column = Column.objects.get(dataset=dataset, name="性别")
        assert column.kind == Column.Kind.CATEGORICAL and column.categories == ["1", "2"]
        assert pages.errors == [] and pages.outside == []
    finally:
        pages.close()
