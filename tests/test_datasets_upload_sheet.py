"""The upload page's Excel sheet choice (by name or number from 1), as the API takes it.

A sheet that does not exist fails the ingest with the workbook's sheet names; a
sheet given for another format than Excel is refused at upload, nothing stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import Dataset
from datasets.services import dataset_ingest
from tests.test_datasets_formats import assert_same, frame, write_xlsx

pytestmark = pytest.mark.django_db


def _post(client, project, name: str, content: bytes, sheet: str):
    return client.post(
        f"/datasets/upload/{project.slug}/",
        {"name": "", "file": SimpleUploadedFile(name, content), "sheet": sheet},
    )


def _book(tmp_path) -> tuple[bytes, object]:
    df = frame()
    write_xlsx(tmp_path / "book.xlsx", df, first_sheet="notes")  # sheets: notes, 数据
    return (tmp_path / "book.xlsx").read_bytes(), df


def test_the_upload_page_offers_the_sheet(client, project, owner):
    client.force_login(owner)
    page = client.get(f"/datasets/upload/{project.slug}/").content.decode()
    assert 'name="sheet"' in page and "by name or by number from 1" in page


@pytest.mark.parametrize("sheet", ["2", "数据"])
def test_a_sheet_chosen_on_the_page_by_number_or_name_is_read(
    client, project, owner, tmp_path, sheet
):
    content, df = _book(tmp_path)
    client.force_login(owner)
    response = _post(client, project, "book.xlsx", content, sheet)
    assert response.status_code == 302
    dataset = Dataset.objects.get(project=project)
    assert dataset.sheet == sheet
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert_same(dataset, df)


@pytest.mark.parametrize("sheet", ["3", "nope"])
def test_a_sheet_that_does_not_exist_fails_with_the_sheets_names(
    client, project, owner, tmp_path, sheet
):
    content, _ = _book(tmp_path)
    client.force_login(owner)
    assert _post(client, project, "book.xlsx", content, sheet).status_code == 302
    dataset = Dataset.objects.get(project=project)
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.FAILED and not dataset.parquet_file
    reason = dataset.failure_reason
    assert f"no sheet named '{sheet}'" in reason and "'notes', '数据'" in reason
    assert ("no sheet number 3" in reason) == (sheet == "3")


def test_a_sheet_for_a_csv_is_refused_and_nothing_is_stored(client, project, owner):
    client.force_login(owner)
    response = _post(client, project, "data.csv", b"a,b\n1,2\n", "2")
    assert response.status_code == 400
    assert "for an Excel workbook (.xlsx) only" in response.content.decode()
    assert not Dataset.objects.exists()
    assert not any(Path(settings.MEDIA_ROOT).rglob("source.*"))
