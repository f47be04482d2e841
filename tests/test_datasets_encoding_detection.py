"""Encoding detection on short samples, where charset_normalizer alone guesses wrong:
Shift-JIS ranked as UTF-16 (no byte-order mark, no NUL), Latin-1 as Windows-1250
("Genève" read "Genčve"), Polish Windows-1250 as Windows-1252 ("£ukasz"). Every sample
here must decode back to its text; the detection is deterministic.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from charset_normalizer import from_bytes
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.ingest.dialect import detect_encoding
from datasets.models import Dataset
from datasets.services import dataset_confirm_reading, dataset_create, dataset_ingest

SAMPLES = [
    # (text, written in, detected as one of)
    ("id,town\n1,Genève\n2,Lausanne\n3,Bern\n", "latin-1", {"cp1252", "latin-1"}),
    ("town;population\nGenève;203856\nZürich;421878\nBâle;177595\n", "latin-1", {"cp1252"}),
    ("nom,ville\nRené,Genève\nFrançoise,Besançon\nJérôme,Orléans\n", "latin-1", {"cp1252"}),
    ("name,stadt\nJürgen,München\nGroß,Köln\n", "cp1252", {"cp1252", "latin-1"}),
    ("nombre,ciudad\nNúñez,Málaga\nPeña,Cádiz\n", "latin-1", {"cp1252", "latin-1"}),
    ("item,price\ncafé,3 €\nthé,2 €\n", "cp1252", {"cp1252"}),
    ("imie,miasto\nŁukasz,Łódź\nZofia,Kraków\nPaweł,Gdańsk\n", "cp1250", {"cp1250"}),
    ("jmeno,mesto\nJiří,Příbram\nŠárka,Brno\n", "cp1250", {"cp1250"}),
    ("nev,varos\nGyőző,Győr\nÉva,Pécs\nÜrömi,Fűzfő\n", "cp1250", {"cp1250"}),
    ("имя,город\nИван,Москва\nОльга,Санкт-Петербург\n", "cp1251", {"cp1251"}),
    (
        "名前,都市,人口\n田中,東京,13960000\n鈴木,大阪,2691000\n",
        "shift_jis",
        {"shift_jis", "cp932"},
    ),
    ("id,市\n1,横浜\n2,神戸\n3,神戸\n", "shift_jis", {"shift_jis", "cp932"}),
    ("名称,城市\n北京,中国\n上海,中国\n", "gb18030", {"gb18030"}),
    ("名稱,城市\n臺北,臺灣\n高雄,臺灣\n", "big5", {"big5", "big5hkscs"}),
    ("이름,도시\n김철수,서울\n이영희,부산\n", "euc_kr", {"euc_kr"}),
]


@pytest.mark.parametrize(("text", "encoding", "accepted"), SAMPLES)
def test_short_samples_are_read_as_written(text, encoding, accepted):
    body = text.encode(encoding)
    detected = detect_encoding(body)
    assert detected in accepted
    assert body.decode(detected) == text


@pytest.mark.parametrize(
    "body",
    [
        "id,ｱｲｳ\n0,はい\n".encode("shift_jis"),
        "id,札幌\n0,ｱｲｳ\n".encode("shift_jis"),
    ],
)
def test_shift_jis_that_charset_normalizer_calls_utf16_is_shift_jis(body):
    assert b"\x00" not in body
    assert from_bytes(body).best().encoding.startswith("utf_16")  # the trap is real
    assert detect_encoding(body) in {"shift_jis", "cp932"}


@pytest.mark.django_db
def test_a_latin1_upload_stores_geneve(project, owner):
    text = "id,town\n1,Genève\n2,Lausanne\n3,Bern\n"
    dataset = dataset_create(
        project=project,
        name="towns",
        uploaded_file=SimpleUploadedFile("towns.csv", text.encode("latin-1")),
        uploaded_by=owner,
        dispatch=False,
    )
    assert dataset.status == Dataset.Status.AWAITING  # not UTF-8: shown before it is read
    assert dataset.read_options["encoding"] in {"cp1252", "latin-1"}
    dataset_confirm_reading(dataset=dataset, actor=owner)
    dataset = dataset_ingest(dataset_id=dataset.pk)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    towns = pq.read_table(settings.MEDIA_ROOT / dataset.parquet_file).column("town")
    assert towns.to_pylist() == ["Genève", "Lausanne", "Bern"]
