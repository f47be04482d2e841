"""Issue 15: a CSV or TSV inside a single-file zip goes through the same detection,
decoded preview and confirmation as a plain or gzip one (an export zipped by a
statistics package is often GBK or Windows-1252, not UTF-8)."""

from __future__ import annotations

import io
import zipfile

import pytest

from datasets.models import Dataset
from datasets.services import dataset_ingest, dataset_read_preview
from tests.test_datasets_encodings import CHINESE, WESTERN, run, stored, write
from tests.test_datasets_encodings_tsv import upload_named

pytestmark = pytest.mark.django_db


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_a_zipped_gbk_semicolon_csv_is_detected_previewed_and_stored_exactly(project, owner):
    content = zipped({"export/调查.csv": write(CHINESE, "gbk", ";")})
    dataset = upload_named(project, owner, "survey.csv.zip", content)
    assert dataset.status == Dataset.Status.AWAITING
    assert dataset.read_options["encoding"] == "gb18030"
    assert dataset.read_options["delimiter"] == ";"
    preview = dataset_read_preview(dataset=dataset, actor=owner)
    assert preview.error == "" and preview.columns == list(CHINESE.columns)
    assert preview.rows[0] == [str(v) for v in CHINESE.iloc[0]]
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert stored(dataset).equals(CHINESE)


def test_a_zipped_windows_1252_tsv_is_detected(project, owner):
    content = zipped({"b.tsv": write(WESTERN, "cp1252", "\t")})
    dataset = upload_named(project, owner, "b.tsv.zip", content)
    assert dataset.status == Dataset.Status.AWAITING
    assert dataset.read_options["delimiter"] == "\t"
    assert run(dataset, owner).status == Dataset.Status.READY
    assert stored(dataset).equals(WESTERN)


def test_a_zip_with_two_csv_files_is_refused_by_the_ingest_leaving_nothing(project, owner):
    content = zipped({"a.csv": b"x\n1\n", "b.csv": b"y\n2\n"})
    dataset = upload_named(project, owner, "two.csv.zip", content)
    # an unreadable sample is not detected: the ingest refuses the file with its reason
    assert dataset.status == Dataset.Status.UPLOADED
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.FAILED
    assert "holds 2 files" in dataset.failure_reason
    assert dataset.parquet_file == ""
