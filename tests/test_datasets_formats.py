"""Excel, Parquet, Stata, SPSS, SAS transport and TSV uploads, plain, gzip or zipped.

Each file is written by the test with the format's own library (openpyxl, pyarrow,
pyreadstat), with Chinese column names and categories where the format allows,
ingested in-process, and the stored Parquet compared with the source exactly.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from datasets.ingest.formats import file_format, source_name
from datasets.models import Dataset
from datasets.services import dataset_create, dataset_ingest

pytestmark = pytest.mark.django_db

REGIONS = ["北京", "上海", "广州"]
ROWS = 300  # enough rows for frequent values to be suggested (each seen >= 50 times)


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "地区": [REGIONS[i % 3] for i in range(ROWS)],
            "age": [18 + i % 60 for i in range(ROWS)],
            "收入": [1000.25 * (i % 17) + 0.125 for i in range(ROWS)],
            "sex": [1 + i % 2 for i in range(ROWS)],
        }
    )


def ingest(project, owner, content: bytes, name: str, sheet: str = "") -> Dataset:
    dataset = dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile(name, content),
        uploaded_by=owner,
        dispatch=False,
        sheet=sheet,
    )
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def stored(dataset: Dataset) -> pa.Table:
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    return pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)


def assert_same(dataset: Dataset, df: pd.DataFrame) -> None:
    table = stored(dataset)
    assert table.column_names == list(df.columns)
    for name in df.columns:
        assert table.column(name).to_pylist() == df[name].tolist(), name
    types = {c.name: c.suggested_type for c in dataset.columns.all()}
    assert types == {"地区": "string", "age": "integer", "收入": "float", "sex": "integer"}


def written(tmp_path: Path, name: str, write) -> bytes:
    path = tmp_path / name
    write(path)
    return path.read_bytes()


def test_stata_file_with_chinese_names_categories_and_value_labels(project, owner, tmp_path):
    df = frame()
    content = written(
        tmp_path,
        "survey.dta",
        lambda p: pyreadstat.write_dta(df, p, variable_value_labels={"sex": {1: "男", 2: "女"}}),
    )
    dataset = ingest(project, owner, content, "survey.dta")
    assert_same(dataset, df)
    columns = {c.name: c for c in dataset.columns.all()}
    assert columns["sex"].profile["value_labels"] == [["1", "男"], ["2", "女"]]
    assert columns["地区"].profile["values"] == sorted(REGIONS)
    assert "value_labels" not in columns["age"].profile
    assert columns["sex"].kind == "undeclared"  # a suggestion only: the owner declares


def test_spss_file_keeps_codes_and_suggests_labels(project, owner, tmp_path):
    df = frame()
    content = written(
        tmp_path,
        "survey.sav",
        lambda p: pyreadstat.write_sav(
            df, p, variable_value_labels={"sex": {1.0: "男", 2.0: "女"}}
        ),
    )
    dataset = ingest(project, owner, content, "survey.sav")
    assert_same(dataset, df)  # SPSS stores doubles: whole numbers come back as integers
    sex = dataset.columns.get(name="sex")
    assert sex.profile["value_labels"] == [["1", "男"], ["2", "女"]]


def test_sas_transport_file(project, owner, tmp_path):
    df = frame().rename(columns={"地区": "region", "收入": "income"})
    df["region"] = ["north", "south", "east"] * (ROWS // 3)
    content = written(tmp_path, "s.xpt", lambda p: pyreadstat.write_xport(df, p))
    dataset = ingest(project, owner, content, "s.xpt")
    table = stored(dataset)
    for name in df.columns:
        assert table.column(name).to_pylist() == df[name].tolist(), name


def write_xlsx(path: Path, df: pd.DataFrame, *, first_sheet: str = "") -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    if first_sheet:
        sheet.title = first_sheet
        sheet.append(["other", "sheet"])
        sheet.append([1, 2])
        sheet = workbook.create_sheet("数据")
    sheet.append(list(df.columns))
    for row in df.itertuples(index=False):
        sheet.append(list(row))
    workbook.save(path)


def test_excel_first_sheet(project, owner, tmp_path):
    df = frame()
    content = written(tmp_path, "survey.xlsx", lambda p: write_xlsx(p, df))
    assert_same(ingest(project, owner, content, "survey.xlsx"), df)


def test_excel_chosen_sheet_and_unknown_sheet(project, owner, tmp_path):
    df = frame()
    content = written(tmp_path, "book.xlsx", lambda p: write_xlsx(p, df, first_sheet="notes"))
    assert_same(ingest(project, owner, content, "book.xlsx", sheet="数据"), df)
    missing = ingest(project, owner, content, "book.xlsx", sheet="nope")
    assert missing.status == Dataset.Status.FAILED
    assert "no sheet named 'nope'" in missing.failure_reason and "'数据'" in missing.failure_reason


def test_parquet_file_with_dictionary_bool_and_date_columns(project, owner, tmp_path):
    df = frame()
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.set_column(0, "地区", table.column("地区").dictionary_encode())
    table = table.append_column("ok", pa.array([i % 3 == 0 for i in range(ROWS)]))
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=64)  # several row groups
    dataset = ingest(project, owner, buffer.getvalue(), "survey.parquet")
    result = stored(dataset)
    for name in df.columns:
        assert result.column(name).to_pylist() == df[name].tolist(), name
    assert result.column("ok").to_pylist() == [
        "true" if i % 3 == 0 else "false" for i in range(ROWS)
    ]


def test_tsv_file(project, owner):
    df = frame()
    content = df.to_csv(sep="\t", index=False).encode()
    assert_same(ingest(project, owner, content, "survey.tsv"), df)


@pytest.mark.parametrize("wrapper", ["gz", "zip"])
@pytest.mark.parametrize("fmt", ["dta", "xlsx", "parquet", "tsv", "csv"])
def test_each_format_inside_gzip_or_a_single_file_zip(project, owner, tmp_path, fmt, wrapper):
    df = frame()
    path = tmp_path / f"survey.{fmt}"
    if fmt == "dta":
        pyreadstat.write_dta(df, path)
    elif fmt == "xlsx":
        write_xlsx(path, df)
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        path.write_text(df.to_csv(sep="\t" if fmt == "tsv" else ",", index=False))
    if wrapper == "gz":
        content = gzip.compress(path.read_bytes())
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(path, f"folder/survey.{fmt}")
        content = buffer.getvalue()
    dataset = ingest(project, owner, content, f"survey.{fmt}.{wrapper}")
    assert_same(dataset, df)
    folder = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    assert [p.name for p in folder.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_file_format_from_names_and_bytes():
    assert file_format("Survey.DTA.gz") == ("dta", "gz")
    assert file_format("a.sav") == ("sav", "")
    assert file_format("notes") == ("csv", "")
    assert file_format("weird.exe") == ("csv", "")
    assert source_name("x.dta", b"\x1f\x8b\x08") == "source.dta.gz"
    assert source_name("x.xlsx", b"PK\x03\x04") == "source.xlsx"
    assert source_name("x.xlsx.zip", b"PK\x03\x04") == "source.xlsx.zip"
    assert source_name("x.csv", b"PK\x03\x04") == "source.csv.zip"
    assert source_name("x.csv", b"a,b\n") == "source.csv"


# --- the API -----------------------------------------------------------------------------


def api_for(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


def test_api_uploads_a_chosen_sheet_and_returns_value_labels(project, owner, tmp_path):
    df = frame()
    api = api_for(owner)
    write_xlsx(tmp_path / "book.xlsx", df, first_sheet="notes")
    with open(tmp_path / "book.xlsx", "rb") as f:
        response = api.post(
            f"/api/v1/projects/{project.slug}/datasets/upload/",
            {"file": f, "sheet": "数据"},
            format="multipart",
        )
    assert response.status_code == 201, response.content
    dataset_ingest(dataset_id=response.json()["id"])
    assert_same(Dataset.objects.get(pk=response.json()["id"]), df)

    pyreadstat.write_dta(df, tmp_path / "s.dta", variable_value_labels={"sex": {1: "男", 2: "女"}})
    with open(tmp_path / "s.dta", "rb") as f:
        response = api.post(f"/api/v1/projects/{project.slug}/datasets/upload/", {"file": f})
    dataset_ingest(dataset_id=response.json()["id"])
    body = api.get(f"/api/v1/datasets/{response.json()['id']}/profile/").json()
    labels = {c["name"]: c["profile"]["value_labels"] for c in body["columns"]}
    assert labels == {"地区": [], "age": [], "收入": [], "sex": [["1", "男"], ["2", "女"]]}


def test_api_refuses_a_file_whose_bytes_are_not_its_extension(project, owner):
    upload = SimpleUploadedFile("survey.parquet", b"a,b\n1,2\n")
    response = api_for(owner).post(
        f"/api/v1/projects/{project.slug}/datasets/upload/", {"file": upload}
    )
    assert response.status_code == 400
    assert "named .parquet but its contents are not" in response.content.decode()
    assert not Dataset.objects.exists()


def test_only_a_csv_is_detected_and_read_options_for_another_format_are_refused(
    project, owner, tmp_path
):
    pyreadstat.write_dta(frame(), tmp_path / "s.dta")
    api, url = api_for(owner), f"/api/v1/projects/{project.slug}/datasets/upload/"
    with open(tmp_path / "s.dta", "rb") as f:
        response = api.post(url, {"file": f, "delimiter": ";"}, format="multipart")
    assert response.status_code == 400
    assert "CSV and TSV files only" in response.content.decode()
    assert not Dataset.objects.exists()
    with open(tmp_path / "s.dta", "rb") as f:
        response = api.post(url, {"file": f, "review": "true"}, format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "uploaded" and body["reading"] is None
    assert Dataset.objects.get(pk=body["id"]).read_options == {}
    # A semicolon CSV still waits for its reading to be confirmed (the enc step).
    semicolon = SimpleUploadedFile("x.csv", b"a;b\n" + b"1;2\n" * 20)
    response = api.post(url, {"file": semicolon}, format="multipart")
    assert response.status_code == 201 and response.json()["status"] == "awaiting"
