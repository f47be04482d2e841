"""Issue 15, point 2 completed: a thousands separator next to the decimal-comma option.

'1.234,5' with a decimal comma and '.' grouping, '1,234.5' with ',' grouping, in
the preview page's override, at upload and in the API; irregular grouping counts
as unreadable (missing, and in the share the owner sees), never as another number.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from datasets.models import Dataset
from datasets.services import dataset_create
from dpportal.errors import ValidationFailed
from tests.test_datasets_encodings import run, upload

pytestmark = pytest.mark.django_db


def values(dataset: Dataset, column: str) -> list:
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    return table.column(column).to_pylist()


EUROPEAN = "ort;betrag;anzahl\nA;1.234,5;12.345\nB;1.234.567,25;7\nC;12,5;1.000\nD;;999\n"


def test_decimal_comma_with_period_grouping(project, owner):
    dataset = upload(project, owner, EUROPEAN.encode())
    dataset = run(dataset, owner, decimal_comma="true", thousands="period")
    assert dataset.read_options["thousands"] == "."
    assert values(dataset, "betrag") == [1234.5, 1234567.25, 12.5, None]
    assert values(dataset, "anzahl") == [12345, 7, 1000, 999]
    assert dataset.columns.get(name="anzahl").suggested_type == "integer"


def test_decimal_point_with_comma_grouping(project, owner):
    body = b'name,amount\nA,"1,234.5"\nB,"1,234,567.25"\nC,12.5\nD,"-2,000"\n'
    dataset = run(upload(project, owner, body, read_options={"thousands": ","}), owner)
    assert values(dataset, "amount") == [1234.5, 1234567.25, 12.5, -2000.0]


def test_without_the_option_grouped_numbers_stay_text(project, owner):
    # with a decimal comma, '1.000' is not read as 1.0: the column is not numeric
    dataset = upload(project, owner, EUROPEAN.encode())
    dataset = run(dataset, owner, decimal_comma="true", thousands="none")
    assert values(dataset, "anzahl") == ["12.345", "7", "1.000", "999"]


def test_irregular_grouping_counts_as_unreadable_not_as_another_number(project, owner):
    rows = "".join(f"{i};{i}.000,5\n" for i in range(1, 40)) + "40;12.34\n41;1.2345,0\n"
    dataset = upload(project, owner, ("n;v\n" + rows).encode())
    dataset = run(dataset, owner, decimal_comma="true", thousands=".")
    got = values(dataset, "v")
    assert got[:39] == [i * 1000 + 0.5 for i in range(1, 40)]
    assert got[39:] == [None, None]  # not 12.34, not 12345.0
    profile = dataset.columns.get(name="v").profile
    assert profile["unreadable"] and profile["unreadable_share"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"thousands": "."}, "must differ from the decimal mark"),
        ({"thousands": ",", "decimal_comma": "true", "delimiter": ";"}, "must differ"),
        ({"thousands": "x"}, "comma, period, space, apostrophe or none"),
    ],
)
def test_bad_thousands_options_are_refused_storing_nothing(project, owner, options, message):
    with pytest.raises(ValidationFailed, match=message):
        dataset_create(
            project=project,
            name="",
            uploaded_file=SimpleUploadedFile("x.csv", b"a;b\nx;1\ny;2\n"),
            uploaded_by=owner,
            dispatch=False,
            read_options=options,
        )
    assert not Dataset.objects.exists()
    assert not any(Path(settings.MEDIA_ROOT).rglob("source.*"))


def test_the_reading_page_offers_and_confirms_the_separator(client, project, owner):
    dataset = upload(project, owner, EUROPEAN.encode())
    client.force_login(owner)
    reading = reverse("datasets:reading", kwargs={"pk": dataset.pk})
    page = client.get(reading).content.decode()  # detected: '1.234,5' is unambiguous
    assert 'name="thousands"' in page and 'id="detected-thousands">period' in page
    none = client.get(
        reading,
        {"shown": "1", "encoding": "utf-8", "delimiter": "semicolon", "quote_char": '"',
         "decimal_comma": "on", "header": "on", "thousands": "none"},
    ).content.decode()  # fmt: skip
    assert "no thousands separator" in none
    shown = client.get(
        reading,
        {"shown": "1", "encoding": "utf-8", "delimiter": "semicolon", "quote_char": '"',
         "decimal_comma": "on", "header": "on", "thousands": "period"},
    ).content.decode()  # fmt: skip
    assert 'id="detected-thousands">period' in shown
    assert '<input type="hidden" name="thousands" value="period">' in shown
    bad = client.get(reading, {"shown": "1", "delimiter": "semicolon", "thousands": "period"})
    assert bad.status_code == 400 and "must differ from the decimal mark" in bad.content.decode()
    confirmed = client.post(
        reading,
        {"shown": "1", "encoding": "utf-8", "delimiter": ";", "quote_char": '"',
         "decimal_comma": "1", "header": "1", "thousands": "period"},
    )  # fmt: skip
    assert confirmed.status_code == 302
    dataset.refresh_from_db()
    assert dataset.read_options["thousands"] == "." and dataset.read_options["decimal_comma"]


def test_the_api_takes_and_returns_the_separator(project, owner):
    api = APIClient()
    api.force_authenticate(owner)
    f = io.BytesIO(EUROPEAN.encode())
    f.name = "x.csv"
    answer = api.post(
        f"/api/v1/projects/{project.slug}/datasets/upload/",
        {"file": f, "thousands": "period", "decimal_comma": "true", "review": "true"},
        format="multipart",
    ).json()
    assert answer.get("status") == "awaiting", answer
    assert answer["reading"]["thousands"] == "."
    url = f"/api/v1/datasets/{answer['id']}/reading/"
    assert api.get(url, {"thousands": "none"}).json()["thousands"] == ""
    assert api.get(url, {"thousands": "comma"}).status_code == 400  # the decimal comma
    confirmed = api.post(url, {}, format="json")
    assert confirmed.status_code == 200
    dataset = run(Dataset.objects.get(pk=answer["id"]), owner)
    assert values(dataset, "betrag") == [1234.5, 1234567.25, 12.5, None]


@pytest.mark.parametrize(
    ("body", "decimal_comma", "thousands"),
    [
        (EUROPEAN, True, "."),  # '1.234,5' can be read no other way
        ('name,amount\nA,"1,234.5"\nB,12\nC,"1,000,000"\n', False, ","),
        ("n;v\nA;1,5\nB;2,25\n", True, ""),  # a decimal comma, no grouping
        ("n;v\nA;1,234\nB;2,500\n", True, ""),  # ambiguous: no grouping proposed
        ("n;v\nA;1.234\nB;2.500\n", False, ""),  # ambiguous: read as decimals
        ("n;v\nA;2024.01.15\nB;x\n", False, ""),  # not numbers
    ],
)
def test_detection_proposes_grouping_only_when_unambiguous(
    project, owner, body, decimal_comma, thousands
):
    options = upload(project, owner, body.encode()).read_options
    assert (options["decimal_comma"], options["thousands"]) == (decimal_comma, thousands)


def test_detected_grouping_is_read_after_confirmation(project, owner):
    dataset = upload(project, owner, EUROPEAN.encode())
    assert dataset.status == Dataset.Status.AWAITING
    dataset = run(dataset, owner)  # confirmed as detected
    assert values(dataset, "betrag") == [1234.5, 1234567.25, 12.5, None]
