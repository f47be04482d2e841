"""SAS .sas7bdat uploads (issue 15): a file written by ReadStat's own writer, with Chinese
categories and missing values, read back exactly; plain, gzip and zip; truncated refused."""

from __future__ import annotations

import gzip
import io
import zipfile

import pandas as pd
import pyreadstat
import pytest

from tests.sas_writer import write_sas7bdat
from tests.test_datasets_formats import REGIONS, ROWS, ingest, stored
from tests.test_datasets_formats_hostile import assert_refused_leaving_nothing

pytestmark = pytest.mark.django_db


def sas_frame(rows: int = ROWS) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "region": [REGIONS[i % 3] for i in range(rows)],
            "age": [18 + i % 60 for i in range(rows)],
            "income": [None if i % 11 == 0 else 1000.25 * (i % 17) + 0.125 for i in range(rows)],
        }
    )


def sas_bytes(tmp_path, df: pd.DataFrame) -> bytes:
    path = tmp_path / "survey.sas7bdat"
    write_sas7bdat(df, path)
    return path.read_bytes()


def test_the_writer_makes_a_file_sas_readers_accept(tmp_path):
    df = sas_frame(30)
    path = tmp_path / "check.sas7bdat"
    write_sas7bdat(df, path)
    back, meta = pyreadstat.read_sas7bdat(path)
    assert list(back["region"]) == list(df["region"])
    assert meta.number_rows == 30


@pytest.mark.parametrize("wrapper", ["", "gz", "zip"])
def test_sas7bdat_with_chinese_categories_and_missing_values(project, owner, tmp_path, wrapper):
    df = sas_frame()
    content, name = sas_bytes(tmp_path, df), "survey.sas7bdat"
    if wrapper == "gz":
        content, name = gzip.compress(content), name + ".gz"
    elif wrapper == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("export/survey.sas7bdat", content)
        content, name = buffer.getvalue(), name + ".zip"
    dataset = ingest(project, owner, content, name)
    table = stored(dataset)
    assert table.column_names == ["region", "age", "income"]
    assert table.column("region").to_pylist() == list(df["region"])
    assert table.column("age").to_pylist() == list(df["age"])  # SAS doubles: whole -> integer
    income = [None if pd.isna(v) else v for v in df["income"]]
    assert table.column("income").to_pylist() == income  # missing stays missing
    types = {c.name: c.suggested_type for c in dataset.columns.all()}
    assert types == {"region": "string", "age": "integer", "income": "float"}
    assert dataset.columns.get(name="region").profile["values"] == sorted(REGIONS)


@pytest.mark.parametrize("keep", [0.5, 0.999])
def test_truncated_sas7bdat_is_refused(project, owner, tmp_path, keep):
    content = sas_bytes(tmp_path, sas_frame(60_000))
    dataset = ingest(project, owner, content[: int(len(content) * keep)], "cut.sas7bdat")
    assert_refused_leaving_nothing(dataset, "could not be read as a SAS file")
