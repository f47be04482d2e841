"""Issue 15's acceptance walk in chromium: a GBK survey export to a submitted release.

The owner uploads a GBK-encoded, semicolon-separated CSV with Chinese column
names and categories (written here with Python's codecs), sees the detected
encoding and the Chinese text decoded in the preview, confirms, lets a real
Celery worker convert it, declares the columns by importing a codebook, confirms
the privacy unit, and builds a release (a histogram of the Chinese categorical
column and a clipped sum) that is submitted for review.
"""

from __future__ import annotations

import pytest

from datasets.models import Dataset
from releases.models import Release
from tests.conftest import wait_for
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    login,
)

pytestmark = [pytest.mark.browser, pytest.mark.worker]

REGIONS = [("北京", 40), ("上海", 30), ("广州", 20)]
HEADER = "地区;收入;备注"
ROWS = [
    f"{region};{1000 + 10 * i};第{i}行"
    for region, n in REGIONS
    for i in range(n)  # a third free-text column, excluded by the codebook
]
CODEBOOK = (
    "column,kind,categories,lower,upper,missing_codes\n"
    "地区,categorical,北京|上海|广州|深圳,,,\n"
    "收入,numeric,,0,5000,-9\n"
    "备注,excluded,,,,\n"
)
TITLE = "各地区收入 (issue 15)"


def _upload_and_confirm(pages: Pages, project, tmp_path) -> Dataset:
    page = pages.page
    source = tmp_path / "survey_gbk.csv"
    source.write_bytes(("\r\n".join([HEADER, *ROWS]) + "\r\n").encode("gbk"))
    pages.goto(f"/projects/{project.slug}/")
    page.get_by_role("link", name="Upload a dataset").click()
    page.get_by_label("Name", exact=True).fill("调查 2024")
    page.set_input_files("input[type=file]", str(source))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url("**/reading/")
    detected = page.locator("#detected").inner_text()
    assert "GB18030 / GBK" in detected, detected
    assert "semicolon" in page.locator("#detected-delimiter").inner_text().lower()
    preview = page.locator("#reading-preview")
    assert preview.locator("thead th").all_inner_texts() == ["地区", "收入", "备注"]
    first = preview.locator("tbody tr").first.locator("td").all_inner_texts()
    assert first == ["北京", "1000", "第0行"]
    pages.shot("reading-preview")
    page.get_by_role("button", name="Confirm and convert the file").click()
    page.wait_for_load_state()
    dataset = Dataset.objects.get(project=project, name="调查 2024")
    wait_for(
        lambda: Dataset.objects.filter(pk=dataset.pk, status="ready").exists(),
        timeout=120,
        message="the worker did not ingest the GBK upload: "
        + str(Dataset.objects.filter(pk=dataset.pk).values_list("status", "failure_reason")),
    )
    dataset.refresh_from_db()
    assert [c.name for c in dataset.columns.order_by("position")] == ["地区", "收入", "备注"]
    return dataset


def _declare_from_codebook(pages: Pages, dataset: Dataset, tmp_path) -> None:
    page = pages.page
    codebook = tmp_path / "codebook.csv"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    pages.goto(f"/datasets/{dataset.pk}/declare/")
    page.get_by_role("link", name="Import a codebook").click()
    page.set_input_files("#codebook-file", str(codebook))
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/declare/")
    assert "The codebook declared 3 columns" in page.locator("body").inner_text()
    region = page.locator("fieldset", has=page.locator("legend code", has_text="地区"))
    assert region.locator("input[type=radio][value=categorical]").is_checked()
    assert region.locator("textarea").first.input_value().split("\n") == [
        "北京",
        "上海",
        "广州",
        "深圳",
    ]
    # the privacy unit is the owner's choice, confirmed by saving this page
    page.check("input[name=unit][value=row]")
    pages.shot("declared-from-codebook")
    page.get_by_role("button", name="Save the declaration").click()
    page.wait_for_load_state()
    dataset.refresh_from_db()
    assert dataset.declared and dataset.unit_confirmed_at is not None


def _build_and_submit(pages: Pages, project) -> Release:
    page = pages.page
    pages.goto(f"/releases/new/{project.slug}/")
    page.locator("#f-title").fill(TITLE)
    page.locator("#f-epsilon").fill("0.5")
    row = page.locator("#stats tbody tr").nth(0)
    row.locator("select[data-f=kind]").select_option("histogram")
    row.locator("select[data-f=column]").select_option("地区")
    page.get_by_role("button", name="Add a statistic").click()
    row = page.locator("#stats tbody tr").nth(1)
    row.locator("select[data-f=kind]").select_option("sum")
    row.locator("select[data-f=column]").select_option("收入")
    page.wait_for_selector("#preview table")
    assert "Total cost: epsilon" in page.locator("#preview").inner_text()
    pages.shot("builder")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url("**/releases/*/")
    release = Release.objects.get(project=project, title=TITLE)
    assert [s.kind for s in release.statistics.order_by("position")] == ["histogram", "sum"]
    page.get_by_role("button", name="Submit for review").click()
    page.wait_for_load_state()
    release.refresh_from_db()
    assert release.status == "submitted"
    pages.shot("submitted")
    return release


@pytest.mark.django_db(transaction=True)
def test_gbk_semicolon_upload_to_submitted_release(
    browser,  # noqa: F811
    live_server,
    celery_workers,
    project,
    owner,
    tmp_path,
):
    celery_workers.start(concurrency=1)
    pages = Pages(browser, live_server, "ingest-gbk")
    try:
        login(pages, owner)
        dataset = _upload_and_confirm(pages, project, tmp_path)
        assert dataset.read_options["encoding"] == "gb18030"
        assert dataset.read_options["delimiter"] == ";"
        _declare_from_codebook(pages, dataset, tmp_path)
        _build_and_submit(pages, project)
        assert pages.outside == [], f"a page tried to reach the internet: {pages.outside}"
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()
