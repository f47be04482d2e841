"""Hostile files of the formats beside CSV: each refused with a clear message, nothing stored.

Zip bombs and zips of several files, a spreadsheet past the row limit (declared or
not), formulas pointing at other workbooks, a truncated Stata file, Parquet with a
nested or binary column, a file whose contents do not match its extension.
"""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.ingest import IngestLimits
from datasets.models import Dataset
from datasets.services import dataset_create, dataset_ingest
from datasets.services import ingesting as ingesting_module
from dpportal.errors import ValidationFailed

pytestmark = pytest.mark.django_db


def ingest(project, owner, content: bytes, name: str) -> Dataset:
    dataset = dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile(name, content),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def assert_refused_leaving_nothing(dataset: Dataset, fragment: str) -> None:
    assert dataset.status == Dataset.Status.FAILED
    assert fragment in dataset.failure_reason, dataset.failure_reason
    assert dataset.columns.count() == 0
    assert dataset.parquet_file == "" and dataset.source_file == ""
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    assert not folder.exists() or list(folder.rglob("*")) == []


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


# --- zip wrappers ------------------------------------------------------------------------


def test_zip_bomb_is_refused_by_its_declared_size_at_once(project, owner):
    bomb = zipped({"data.csv": b"a,b\n" + b"1,2\n" * 25_000_000})  # 100 MB -> ~100 KB
    assert len(bomb) < 1_000_000
    started = time.monotonic()
    dataset = ingest(project, owner, bomb, "data.csv.zip")
    assert time.monotonic() - started < 5
    assert_refused_leaving_nothing(dataset, "too large when decompressed")


def test_zip_whose_member_lies_about_its_size_is_refused(project, owner):
    content = b"a,b\n" + b"1,2\n" * 1_000_000
    bomb = bytearray(zipped({"data.csv": content}))
    # declare 1,000 bytes in both headers: the unpacked bytes must not exceed it
    real = len(content).to_bytes(4, "little")
    bomb = bytes(bomb).replace(real, (1000).to_bytes(4, "little"))
    dataset = ingest(project, owner, bomb, "data.zip")
    assert dataset.status == Dataset.Status.FAILED
    assert "damaged" in dataset.failure_reason or "decompressed" in dataset.failure_reason
    assert_refused_leaving_nothing(dataset, "")


def test_zip_with_two_files_is_refused(project, owner):
    archive = zipped({"a.csv": b"x\n1\n", "b.csv": b"y\n2\n"})
    dataset = ingest(project, owner, archive, "both.zip")
    assert_refused_leaving_nothing(dataset, "holds 2 files; it must hold exactly one")


def test_empty_zip_is_refused(project, owner):
    dataset = ingest(project, owner, zipped({}), "none.zip")
    assert_refused_leaving_nothing(dataset, "holds 0 files")


# --- spreadsheets ------------------------------------------------------------------------

PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        '<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/>'
        "</Types>"
    ),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>'
    ),
    "xl/workbook.xml": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets>'
        '<externalReferences><externalReference r:id="rId2"/></externalReferences>'
        "</workbook>"
    ),
    "xl/_rels/workbook.xml.rels": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/worksheet" Target="worksheets/sheet1.xml"/>'
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/externalLink" Target="externalLinks/externalLink1.xml"/>'
        "</Relationships>"
    ),
    "xl/externalLinks/externalLink1.xml": (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        '<externalBook xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships" r:id="rId1"><sheetNames><sheetName val="Sheet1"/></sheetNames>'
        "</externalBook></externalLink>"
    ),
}


def raw_xlsx(rows: list[str], dimension: str) -> bytes:
    """A minimal workbook whose sheet XML is written here (rows as <row> elements)."""
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="{dimension}"/><sheetData>' + "".join(rows) + "</sheetData></worksheet>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in PARTS.items():
            archive.writestr(name, text)
        archive.writestr("xl/worksheets/sheet1.xml", sheet)
    return buffer.getvalue()


def header(n: int, names: str = "abcde") -> str:
    cells = "".join(f'<c r="{names[i].upper()}1" t="inlineStr"><is><t>{names[i]}</t></is></c>'
                    for i in range(n))  # fmt: skip
    return f'<row r="1">{cells}</row>'


def number_rows(first: int, count: int) -> list[str]:
    # cells without a reference are read left to right (shorter, quicker to write)
    return [
        f'<row r="{r}">' + f"<c><v>{r}</v></c>" * 5 + "</row>" for r in range(first, first + count)
    ]


def test_xlsx_with_excel_maximum_rows_is_refused_by_the_row_limit(project, owner):
    # 1,048,576 rows x 5 columns, declared in the sheet's dimension: refused before any row
    rows = [header(5)] + number_rows(2, 1_048_575)
    content = raw_xlsx(rows, "A1:E1048576")
    started = time.monotonic()
    dataset = ingest(project, owner, content, "huge.xlsx")
    assert time.monotonic() - started < 10
    assert_refused_leaving_nothing(dataset, "more than 1,000,000 data rows")


def test_xlsx_whose_dimension_lies_is_refused_while_streaming(project, owner, monkeypatch):
    limits = ingesting_module.ingest_limits()
    small = IngestLimits(**{**limits.__dict__, "max_sheet_rows": 6_000})
    monkeypatch.setattr(ingesting_module, "ingest_limits", lambda: small)
    content = raw_xlsx([header(5)] + number_rows(2, 12_000), "A1:E2")
    dataset = ingest(project, owner, content, "liar.xlsx")
    assert_refused_leaving_nothing(dataset, "more than 6,000 data rows")


def test_xlsx_formulas_to_other_workbooks_give_cached_values_only(project, owner):
    rows = [header(2, "ab")]
    for r in range(2, 6):
        rows.append(
            f'<row r="{r}"><c r="A{r}"><v>{r}</v></c>'
            f'<c r="B{r}"><f>[1]Sheet1!A{r}</f><v>{r * 10}</v></c></row>'
        )
    rows.append('<row r="6"><c r="A6"><v>6</v></c><c r="B6"><f>[1]Sheet1!A6</f></c></row>')
    # the dimension declares fewer rows than there are: none may be lost
    dataset = ingest(project, owner, raw_xlsx(rows, "A1:B2"), "linked.xlsx")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    # the values Excel saved; a formula saved without one is empty; no formula text anywhere
    assert table.column("b").to_pylist() == [20, 30, 40, 50, None]
    assert table.column("a").to_pylist() == [2, 3, 4, 5, 6]


def test_file_that_is_not_a_workbook_is_refused(project, owner):
    dataset = ingest(project, owner, zipped({"x.txt": b"hello"}), "fake.xlsx")
    assert_refused_leaving_nothing(dataset, "not a readable Excel workbook")


# --- statistical packages ----------------------------------------------------------------


def stata_bytes(tmp_path: Path, rows: int) -> bytes:
    df = pd.DataFrame({"id": range(rows), "地区": ["北京", "上海"] * (rows // 2)})
    path = tmp_path / "s.dta"
    pyreadstat.write_dta(df, path)
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0.5, 0.999])
def test_truncated_stata_file_is_refused(project, owner, tmp_path, keep):
    content = stata_bytes(tmp_path, 250_000)
    dataset = ingest(project, owner, content[: int(len(content) * keep)], "cut.dta")
    assert_refused_leaving_nothing(dataset, "could not be read as a Stata file")


def test_file_whose_contents_do_not_match_its_extension_is_refused_at_upload(project, owner):
    with pytest.raises(ValidationFailed, match="named .dta but its contents are not"):
        ingest(project, owner, b"a,b\n1,2\n", "survey.dta")
    assert not Dataset.objects.exists()


def test_wrapped_file_whose_contents_do_not_match_its_extension_is_refused(project, owner):
    dataset = ingest(project, owner, zipped({"survey.sav": b"a,b\n1,2\n"}), "survey.zip")
    assert_refused_leaving_nothing(dataset, "named .sav but its contents are not")


# --- parquet -----------------------------------------------------------------------------


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def test_parquet_with_a_nested_column_is_refused(project, owner):
    table = pa.table({"id": [1, 2], "tags": pa.array([[1, 2], [3]], pa.list_(pa.int64()))})
    dataset = ingest(project, owner, parquet_bytes(table), "nested.parquet")
    assert_refused_leaving_nothing(dataset, "Column 'tags' is nested")


def test_parquet_with_a_binary_column_is_refused(project, owner):
    table = pa.table({"id": [1, 2], "blob": pa.array([b"\x00\x01", b"\x02"], pa.binary())})
    dataset = ingest(project, owner, parquet_bytes(table), "blob.parquet")
    assert_refused_leaving_nothing(dataset, "Column 'blob' holds binary data")


def test_truncated_parquet_is_refused(project, owner):
    table = pa.table({"id": list(range(1000))})
    content = parquet_bytes(table)
    dataset = ingest(project, owner, content[: len(content) // 2], "cut.parquet")
    assert_refused_leaving_nothing(dataset, "not a readable Parquet file")
