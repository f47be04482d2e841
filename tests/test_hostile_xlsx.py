"""Hostile .xlsx files: each refused with a message naming the limit, or read whole, by a
real worker that stays under 500 MB and 60 s, with nothing half-stored.

The files come from tests/hostile_files_xlsx.py (small on disk: a shared strings bomb,
more shared strings than allowed, one huge shared string, a 20 MB cell, rows of great
width declared or not, a central directory that understates a part, a column of whole
numbers then decimals, an external entity). The worker tests run each in a fresh
worker (tests/hostile_support.py); the tests below them check the same paths in
process, where a message or a stored value is asserted more closely.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.ingest import IngestLimits
from datasets.models import Dataset
from datasets.services import dataset_create, dataset_ingest
from datasets.services import ingesting as ingesting_module
from tests import hostile_files_xlsx as files
from tests.hostile_support import ingest_in_worker

#: each hostile workbook: what its refusal says (None: it is read whole)
EXPECTED = {
    "shared_strings_bomb": "is larger than 64.0 MiB when decompressed",
    "many_shared_strings": "more than 1,000,000 distinct text values",
    "huge_shared_string": "longer than 1.0 MiB, the limit per value",
    "huge_cell": "longer than 1.0 MiB, the limit per value",
    "wide_rows_undeclared": "more than 2,000,000 cells",
    "lying_central_directory": "holds more than the 1000 bytes its archive declares",
    "external_entity": "declares a document type (DTD)",
    "wide_rows": None,
    "int_then_decimal": None,
}


def _parquet(dataset: Dataset):
    return pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)


@pytest.mark.worker
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_workbook_is_bounded_in_a_real_worker(
    name, celery_workers, owner, project, tmp_path
):
    path = tmp_path / f"{name}.xlsx"
    getattr(files, name)(path)
    assert path.stat().st_size < 3_000_000  # small on disk
    worker = celery_workers.start()
    run = ingest_in_worker(worker_pid=worker.proc.pid, project=project, owner=owner, path=path)
    size = path.stat().st_size
    print(f"{name}: {size:,} bytes, {run.status}, {run.peak_mb:.0f} MB, {run.seconds:.1f} s")
    assert run.bounded, (run.peak_mb, run.seconds)
    assert run.leftovers == ()
    expected = EXPECTED[name]
    if expected is None:
        assert run.status == "ready", run.failure_reason
    else:
        assert run.status == "failed"
        assert expected in run.failure_reason, run.failure_reason


# --- in process: the same paths, asserted more closely -----------------------------------


def ingest(project, owner, path: Path) -> Dataset:
    dataset = dataset_create(
        project=project, name="", uploaded_file=SimpleUploadedFile(path.name, path.read_bytes()),
        uploaded_by=owner, dispatch=False,
    )  # fmt: skip
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def assert_refused(dataset: Dataset, fragment: str) -> None:
    assert dataset.status == Dataset.Status.FAILED
    assert fragment in dataset.failure_reason, dataset.failure_reason
    assert dataset.columns.count() == 0 and dataset.parquet_file == ""
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    assert not folder.exists() or list(folder.rglob("*.parquet")) == []


def smaller(monkeypatch, **changes) -> None:
    limits = ingesting_module.ingest_limits()
    small = IngestLimits(**{**limits.__dict__, **changes})
    monkeypatch.setattr(ingesting_module, "ingest_limits", lambda: small)


@pytest.mark.django_db
def test_whole_numbers_then_decimals_store_every_value(project, owner, tmp_path):
    path = tmp_path / "incomes.xlsx"
    files.int_then_decimal(path, integers=10_000, decimals=3_000)
    dataset = ingest(project, owner, path)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    income = _parquet(dataset).column("income").to_pylist()
    assert income == [1000 + i for i in range(10_000)] + [
        1000 + i + 0.25 for i in range(10_000, 13_000)
    ]
    assert dataset.columns.get(name="income").profile["type"] == "float"
    assert dataset.warnings == []


@pytest.mark.django_db
def test_cells_that_are_not_numbers_are_counted_and_warned(client, project, owner, tmp_path):
    path = tmp_path / "mixed.xlsx"
    rows = [files.header_row(["x"])]
    for r in range(2, 102):  # 99 numbers and one word: numeric, one cell unreadable
        value = "<is><t>n/a</t></is>" if r == 50 else f"<v>{r}</v>"
        kind = ' t="inlineStr"' if r == 50 else ""
        rows.append(f'<row r="{r}"><c r="A{r}"{kind}>{value}</c></row>')
    files.write_workbook(path, rows, "A1:A101")
    dataset = ingest(project, owner, path)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert _parquet(dataset).column("x").null_count == 1
    [warning] = dataset.warnings
    assert warning[1] == {"name": "x", "count": "1"}
    assert "could not be read as a number" in warning[0]
    client.force_login(owner)
    for page in ("datasets:detail", "datasets:declare"):  # at upload, and where it is declared
        html = client.get(reverse(page, args=[dataset.pk])).content.decode()
        assert 'id="upload-warnings"' in html
        assert "Column &#x27;x&#x27;: 1 cell could not be read as a number" in html, page


@pytest.mark.django_db
def test_the_declared_dimension_is_checked_before_any_row(project, owner, tmp_path, monkeypatch):
    smaller(monkeypatch, xlsx_max_cells=10_000)
    path = tmp_path / "declared.xlsx"
    files.wide_rows(path, rows=100, columns=200)  # declares A1:GR101: 20,200 cells
    assert_refused(ingest(project, owner, path), "more than 10,000 cells")


@pytest.mark.django_db
def test_cells_past_the_limit_stop_the_read_while_streaming(project, owner, tmp_path, monkeypatch):
    smaller(monkeypatch, xlsx_max_cells=10_000)
    path = tmp_path / "undeclared.xlsx"
    files.wide_rows_undeclared(path, rows=100, columns=200)  # declares two rows only
    assert_refused(ingest(project, owner, path), "more than 10,000 cells")


@pytest.mark.django_db
def test_a_row_with_more_text_than_the_row_limit_is_refused(project, owner, tmp_path):
    path = tmp_path / "long.xlsx"
    files.huge_cell(path, size=3 * 1024 * 1024)  # under the raw bound, over the row limit
    assert_refused(ingest(project, owner, path), "more than 1.0 MiB of text, the limit per row")


@pytest.mark.django_db
def test_a_row_wider_than_excel_allows_is_refused(project, owner, tmp_path):
    path = tmp_path / "wide.xlsx"
    row = '<row r="2">' + "<c><v>1</v></c>" * 20_000 + "</row>"
    files.write_workbook(path, [files.header_row(["a"]), row], "A1:A2")
    assert_refused(ingest(project, owner, path), "more than 16,384 cells")


@pytest.mark.django_db
def test_an_external_entity_is_never_resolved(project, owner, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    path = tmp_path / "xxe.xlsx"
    files.external_entity(path, target=str(secret))
    dataset = ingest(project, owner, path)
    assert_refused(dataset, "declares a document type (DTD)")
    assert "TOP-SECRET" not in dataset.failure_reason


@pytest.mark.django_db
def test_malformed_xml_names_the_part_line_and_reason(project, owner, tmp_path):
    path = tmp_path / "broken.xlsx"
    files.broken_xml(path)
    assert_refused(
        ingest(project, owner, path),
        "part 'xl/worksheets/sheet1.xml' is not well-formed XML: mismatched tag (line 4",
    )


@pytest.mark.django_db
def test_a_styles_part_past_the_part_limit_is_refused(project, owner, tmp_path, monkeypatch):
    smaller(monkeypatch, xlsx_max_part_bytes=1_000)
    path = tmp_path / "styles.xlsx"
    files.wide_rows(path, rows=2, columns=2)
    with zipfile.ZipFile(path, "a") as archive:  # an unreferenced part, still checked
        archive.writestr("xl/styles.xml", "<styleSheet>" + " " * 2_000 + "</styleSheet>")
    assert_refused(ingest(project, owner, path), "'xl/styles.xml' is larger than 1000 bytes")


@pytest.mark.django_db
def test_shared_strings_are_bounded_by_their_size_in_memory(project, owner, tmp_path, monkeypatch):
    # 100,000 short strings: about 2 MB of XML, over 5 MB as strings in memory
    smaller(monkeypatch, xlsx_max_shared_strings_bytes=3 << 20)
    path = tmp_path / "strings.xlsx"
    files.many_shared_strings(path, strings=100_000)
    assert_refused(ingest(project, owner, path), "shared strings take more than 3.0 MiB")


@pytest.mark.django_db
def test_shared_strings_past_the_count_limit_are_refused(project, owner, tmp_path, monkeypatch):
    smaller(monkeypatch, xlsx_max_shared_strings=50_000)
    path = tmp_path / "strings.xlsx"
    files.many_shared_strings(path, strings=50_001)
    assert_refused(ingest(project, owner, path), "more than 50,000 distinct text values")


@pytest.mark.django_db
def test_a_part_in_utf16_is_refused(project, owner, tmp_path):
    # the byte checks (DTD, value length, cells) read UTF-8, as Excel writes every part
    source, path = tmp_path / "xxe.xlsx", tmp_path / "utf16.xlsx"
    files.external_entity(source)
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(path, "w") as new:
        for name in old.namelist():
            content = old.read(name)
            if name == files.SHEET:
                content = content.decode().replace("UTF-8", "UTF-16").encode("utf-16")
            new.writestr(name, content)
    assert_refused(ingest(project, owner, path), "is not encoded in UTF-8")
