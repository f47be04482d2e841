"""Issue 15, points 1, 2 and 5: encodings and CSV dialects, detected on a sample,
previewed and confirmed by the owner, then checked on every byte during the ingest.

Every file is written by the test itself (pandas' to_csv with the encoding), and the
stored Parquet is compared with the source DataFrame exactly.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from datasets.models import Dataset
from datasets.services import (
    dataset_confirm_reading,
    dataset_create,
    dataset_ingest,
    dataset_read_preview,
)
from dpportal import messages

pytestmark = pytest.mark.django_db
V1 = "/api/v1"

CHINESE = pd.DataFrame(
    {
        "城市": ["北京", "上海", "广州", "深圳"] * 30,
        "类别": ["是", "否", "不知道", "也许"] * 30,
        "收入": [1.5, 2.25, 3.0, 4.75] * 30,
    }
)
TRADITIONAL = pd.DataFrame(
    {"城市": ["臺北", "高雄", "臺中", "新竹"] * 30, "類別": ["是", "否", "不知道", "可能"] * 30}
)
JAPANESE = pd.DataFrame(
    {
        "都市": ["東京", "大阪", "京都", "札幌"] * 30,
        "回答": ["はい", "いいえ", "わからない", "たぶん"] * 30,
        "年齢": [34, 51, 27, 68] * 30,
    }
)
WESTERN = pd.DataFrame(
    {
        "Ville": ["Orléans", "Besançon", "Zürich", "Málaga", "Nîmes"] * 30,
        "Catégorie": ["élevé", "moyen", "bas", "très bas", "à définir"] * 30,
        "Revenu": [1.5, 2.25, 3.0, 4.0, 5.5] * 30,
    }
)
MIXED = pd.DataFrame(
    {
        "城市": ["北京", "東京", "São Paulo", "Zürich"] * 30,
        "Catégorie": ["是", "はい", "élevé", "moyen"] * 30,
        "n": [1, 2, 3, 4] * 30,
    }
)

CASES = [
    # (source, encoding to write with, delimiter, the detected encoding(s) accepted)
    (MIXED, "utf-8", ",", {"utf-8"}),
    (MIXED, "utf-8-sig", ";", {"utf-8"}),
    (MIXED, "utf-16", "\t", {"utf-16"}),  # little-endian with BOM on this platform
    (MIXED, "utf-16-be", ",", {"utf-16"}),  # pandas writes no BOM: the test adds it
    (CHINESE, "gb18030", ";", {"gb18030"}),
    (CHINESE, "gbk", "|", {"gb18030"}),
    (TRADITIONAL, "big5", ",", {"big5", "big5hkscs"}),
    (JAPANESE, "shift_jis", ",", {"shift_jis", "cp932"}),
    (WESTERN, "cp1252", ";", {"cp1252", "latin-1"}),
    (WESTERN, "latin-1", "\t", {"cp1252", "latin-1"}),
]


def write(frame: pd.DataFrame, encoding: str, sep: str = ",", **kwargs) -> bytes:
    text = frame.to_csv(index=False, sep=sep, lineterminator="\n", **kwargs)
    body = text.encode(encoding)
    if encoding == "utf-16-be":
        body = b"\xfe\xff" + body
    return body


def upload(project, owner, content: bytes, **kwargs) -> Dataset:
    return dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile("data.csv", content, content_type="text/csv"),
        uploaded_by=owner,
        dispatch=False,
        **kwargs,
    )


def run(dataset: Dataset, owner, **options) -> Dataset:
    if dataset.status == Dataset.Status.AWAITING:
        dataset_confirm_reading(dataset=dataset, actor=owner, options=options)
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def stored(dataset: Dataset) -> pd.DataFrame:
    return pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file).to_pandas()


def nothing_stored(dataset: Dataset) -> bool:
    files = [p for p in Path(settings.MEDIA_ROOT).rglob("*") if "parquet" in p.name]
    return dataset.parquet_file == "" and dataset.columns.count() == 0 and files == []


@pytest.mark.parametrize(("frame", "encoding", "sep", "detected"), CASES)
def test_each_encoding_is_detected_and_stored_exactly(
    project, owner, frame, encoding, sep, detected
):
    dataset = upload(project, owner, write(frame, encoding, sep))
    options = dataset.read_options
    assert options["encoding"] in detected and options["delimiter"] == sep
    plain = encoding == "utf-8" and sep == ","
    assert dataset.status == (Dataset.Status.UPLOADED if plain else Dataset.Status.AWAITING)
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    pd.testing.assert_frame_equal(stored(dataset), frame)


def test_semicolon_with_decimal_comma(project, owner):
    body = write(WESTERN, "utf-8", ";", decimal=",")
    dataset = upload(project, owner, body)
    assert dataset.read_options["decimal_comma"] is True
    assert dataset.status == Dataset.Status.AWAITING
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    pd.testing.assert_frame_equal(stored(dataset), WESTERN)
    assert dataset.columns.get(name="Revenu").suggested_type == "float"


def test_decimal_comma_refused_with_a_comma_delimiter(project, owner):
    with pytest.raises(Exception, match="decimal comma needs another delimiter"):
        upload(project, owner, b"a,b\n1,2\n", read_options={"decimal_comma": "true"})
    assert Dataset.objects.count() == 0


def test_latin1_town_at_row_90000_is_refused_as_utf8_with_its_line(project, owner):
    rows = ["Town,Count"] + ["Paris,1"] * 89_999 + ["Orléans,2"] + ["Lyon,3"] * 10
    body = ("\n".join(rows) + "\n").encode("latin-1")
    dataset = upload(project, owner, body)
    # the sample (the first 256 KiB) is ASCII: plain, queued at once, refused by the full check
    assert (dataset.status, dataset.read_options["encoding"]) == ("uploaded", "utf-8")
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.FAILED
    assert "Line 90,001 of the file is not valid UTF-8" in dataset.failure_reason
    assert "choose its encoding" in dataset.failure_reason
    assert nothing_stored(dataset)
    # chosen explicitly (the API's options), the same file is read exactly
    again = run(upload(project, owner, body, read_options={"encoding": "latin-1"}), owner)
    assert again.status == Dataset.Status.READY
    assert stored(again)["Town"].iloc[89_999] == "Orléans"


def test_gbk_with_one_invalid_byte_at_the_end_is_refused_with_its_line(project, owner):
    frame = pd.concat([CHINESE] * 350, ignore_index=True)  # 42,000 rows: past the sample
    body = write(frame, "gbk", ";") + "北京;是;".encode("gbk") + b"\x81\x20\n"
    dataset = upload(project, owner, body)
    assert dataset.read_options["encoding"] == "gb18030"
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.FAILED
    last_line = f"{len(frame) + 2:,}"
    assert f"Line {last_line} of the file is not valid GB18030" in dataset.failure_reason
    assert nothing_stored(dataset)


def test_header_that_looks_like_data(project, owner):
    body = b"".join(b"r%d;%d,5\n" % (i, i) for i in range(50))
    dataset = upload(project, owner, body)
    assert dataset.status == Dataset.Status.AWAITING
    detected = dataset.read_options
    assert detected["delimiter"] == ";" and detected["decimal_comma"] is True
    # read with a header, the preview warns that the first line looks like data
    preview = dataset_read_preview(dataset=dataset, actor=owner, options={"header": "true"})
    words = [messages.warning_text(w, translate=False) for w in preview.warnings]
    assert any("may be data rather than a header" in w for w in words)
    # without one, the columns are numbered and every line is a row
    preview = dataset_read_preview(dataset=dataset, actor=owner, options={"header": "false"})
    assert preview.columns == ["column_1", "column_2"] and preview.rows[0] == ["r0", "0,5"]
    dataset = run(dataset, owner, header="false")
    assert dataset.status == Dataset.Status.READY
    table = stored(dataset)
    assert list(table.columns) == ["column_1", "column_2"] and len(table) == 50
    assert table["column_2"].iloc[3] == 3.5


def test_the_reading_page_previews_overrides_and_confirms(
    client, project, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    body = write(CHINESE, "gbk", ";")
    response = client.post(url, {"name": "", "file": SimpleUploadedFile("s.csv", body)})
    dataset = Dataset.objects.get()
    reading = reverse("datasets:reading", kwargs={"pk": dataset.pk})
    assert (response.status_code, response.url) == (302, reading)
    page = client.get(reading).content.decode()
    assert "GB18030" in page and "semicolon" in page and "<td>北京</td>" in page
    # read as Latin-1 instead, the preview shows other text
    other = client.get(reading, {"shown": "1", "encoding": "latin-1", "delimiter": "semicolon",
                                 "quote_char": '"', "header": "on"}).content.decode()  # fmt: skip
    assert "<td>北京</td>" not in other
    assert client.get(reading, {"shown": "1", "encoding": "ebcdic"}).status_code == 400
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        confirmed = client.post(
            reading,
            {"shown": "1", "encoding": "gb18030", "delimiter": "semicolon", "quote_char": '"',
             "header": "1"},
        )  # fmt: skip
    assert confirmed.status_code == 302 and len(callbacks) == 1
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.UPLOADED
    assert dataset.read_options["encoding"] == "gb18030"
    # a second confirmation is refused, changing nothing
    client.post(reading, {"shown": "1", "encoding": "latin-1"})
    dataset.refresh_from_db()
    assert dataset.read_options["encoding"] == "gb18030"


def test_api_upload_returns_the_detection_and_accepts_options(project, owner):
    api = APIClient()
    api.force_authenticate(owner)
    upload_url = f"{V1}/projects/{project.slug}/datasets/upload/"

    def post(body: bytes, **fields):
        f = io.BytesIO(body)
        f.name = "s.csv"
        return api.post(upload_url, {"file": f, **fields}, format="multipart")

    body = write(JAPANESE, "shift_jis", ";")
    answer = post(body).json()
    assert answer["status"] == "awaiting"
    reading = answer["reading"]
    assert (
        reading["encoding"] in ("shift_jis", "cp932") and reading["delimiter_name"] == "semicolon"
    )
    assert reading["columns"] == ["都市", "回答", "年齢"] and reading["rows"][0][0] == "東京"
    dataset_id = answer["id"]
    preview = api.get(f"{V1}/datasets/{dataset_id}/reading/", {"header": "false"}).json()
    assert preview["columns"] == ["column_1", "column_2", "column_3"]
    assert api.get(f"{V1}/datasets/{dataset_id}/reading/", {"delimiter": "x"}).status_code == 400
    confirmed = api.post(f"{V1}/datasets/{dataset_id}/reading/", {}, format="json")
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "uploaded"
    again = api.post(f"{V1}/datasets/{dataset_id}/reading/", {}, format="json")
    assert again.status_code == 409
    # options given at upload: queued at once, as given
    given = post(body, encoding="cp932", delimiter=";", header="true").json()
    assert given["status"] == "uploaded" and given["read_options"]["encoding"] == "cp932"
    run(Dataset.objects.get(pk=given["id"]), owner)
    pd.testing.assert_frame_equal(stored(Dataset.objects.get(pk=given["id"])), JAPANESE)
    # review=true: waits even though plain
    assert post(b"a,b\n1,2\n", review="true").json()["status"] == "awaiting"
    # a bad option refuses the upload, storing nothing
    before = Dataset.objects.count()
    assert post(body, encoding="rot13").status_code == 400
    assert Dataset.objects.count() == before
