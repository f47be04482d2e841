"""Codebooks: import many columns' declarations at once (all or nothing), export, round trip."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from datasets.models import Dataset
from datasets.services import dataset_import_codebook, export_codebook
from dpportal.errors import ValidationFailed
from tests.test_datasets_types import CSV, ingest, state

pytestmark = pytest.mark.django_db

CODEBOOK = (
    b"column,kind,categories,lower,upper,bin_edges,missing_codes,missing,"
    b"date_lower,date_upper,date_bin,date_format\n"
    b"id,excluded,,,,,,,,,,\n"
    b"score,numeric,,0,100,0|25|50|100,-9,category,,,,\n"
    b"visit,date,,,,,9999-99-99,drop,2024-01-01,2024-12-31,month,YYYY-MM-DD\n"
    b'region,categorical,"=cmd()|north|south",,,,-9|99,category,,,,\n'
)


@pytest.fixture
def dataset(project, owner):
    return ingest(project, owner, CSV)


def test_a_codebook_declares_every_column_it_lists(dataset, owner):
    assert dataset_import_codebook(dataset=dataset, actor=owner, content=CODEBOOK) == 4
    dataset.refresh_from_db()
    assert dataset.declared
    columns = {c.name: c for c in dataset.columns.all()}
    assert columns["score"].bin_edges == ["0", "25", "50", "100"]
    assert columns["score"].missing_codes == ["-9"]
    assert columns["visit"].categories[0] == "2024-01" and len(columns["visit"].categories) == 12
    assert columns["visit"].missing_codes == ["9999-99-99"]
    assert columns["region"].categories == ["=cmd()", "north", "south"]
    assert columns["region"].missing == "category"
    assert all(not c.derived_from_data for c in columns.values())


def test_export_imports_back_to_the_same_declaration(dataset, owner, project):
    dataset_import_codebook(dataset=dataset, actor=owner, content=CODEBOOK)
    exported = export_codebook(dataset=dataset)
    assert "'=cmd()" in exported  # a formula-like cell is made text for spreadsheets
    assert ",-9," in exported  # numbers stay numbers
    other = ingest(project, owner, CSV)
    dataset_import_codebook(dataset=other, actor=owner, content=exported.encode())
    assert state(other) == state(dataset)
    assert export_codebook(dataset=other) == exported


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "The codebook is empty."),
        (b"name,type\nscore,numeric\n", "Line 1 of the codebook: the header must name"),
        (b"column,kind\nscore,numeric,1\n", "Line 2 of the codebook has 3 cells"),
        (b"column,kind\nid,excluded\nid,excluded\n", "declares 'id' again (first on line 2)"),
        ("column,kind\nr\xe9gion,excluded\n".encode("latin-1"), "Line 2 of the codebook is not"),
        (b"column,kind\nnope,excluded\n", "Line 2: the dataset has no column named 'nope'."),
        (b"column,kind,lower,upper\nid,excluded,,\nscore,numeric,5,1\n",
         "Line 3 (column 'score'): the lower bound must be below the upper bound."),
        (b"column,kind,date_lower,date_upper,date_bin\nvisit,date,2024-01-01,2024-12-31,hour\n",
         "Line 2 (column 'visit'): choose how dates are binned"),
    ],
)  # fmt: skip
def test_a_bad_codebook_names_its_line_and_changes_nothing(dataset, owner, content, message):
    dataset_import_codebook(dataset=dataset, actor=owner, content=CODEBOOK)
    before = state(dataset)
    with pytest.raises(ValidationFailed) as caught:
        # the first lines would be fine: nothing of them is saved either
        dataset_import_codebook(dataset=dataset, actor=owner, content=content)
    text = caught.value.message + " ".join(caught.value.extra.get("errors", {}).get("__all__", []))
    assert message in text
    assert state(dataset) == before


def test_the_id_column_of_the_privacy_unit_stays_excluded(dataset, owner):
    dataset_import_codebook(dataset=dataset, actor=owner, content=CODEBOOK)
    Dataset.objects.filter(pk=dataset.pk).update(id_column="region")
    dataset.refresh_from_db()
    with pytest.raises(ValidationFailed) as caught:
        dataset_import_codebook(dataset=dataset, actor=owner, content=CODEBOOK)
    assert "Line 5 (column 'region'): it identifies a person" in str(
        caught.value.extra["errors"]["__all__"]
    )


def test_the_codebook_pages_import_and_export(client, owner, reviewer, dataset):
    url = reverse("datasets:codebook", args=[dataset.pk])
    client.force_login(reviewer)
    assert client.get(url).status_code == 403  # owners only
    client.force_login(owner)
    assert client.get(url).status_code == 200
    bad = client.post(url, {"codebook": SimpleUploadedFile("c.csv", b"column,kind\nx,excluded\n")})
    assert bad.status_code == 400
    assert "the dataset has no column named &#x27;x&#x27;" in bad.content.decode()
    good = client.post(url, {"codebook": SimpleUploadedFile("c.csv", CODEBOOK)})
    assert good.status_code == 302
    export = client.get(reverse("datasets:codebook_export", args=[dataset.pk]))
    assert export["Content-Type"].startswith("text/csv")
    assert export.content.decode() == export_codebook(dataset=dataset)
    page = client.get(reverse("datasets:declare", args=[dataset.pk])).content.decode()
    assert 'name="date-bin-2"' in page and '<option value="month" selected>' in page


def api_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_the_api_imports_exports_and_declares_dates(owner, dataset):
    client = api_client(owner)
    url = f"/api/v1/datasets/{dataset.pk}/codebook/"
    bad = client.post(url, {"codebook": "column,kind\nscore,numeric\n"}, format="json")
    assert bad.status_code == 400
    assert "Line 2 (column 'score')" in str(bad.json()["error"]["details"])
    ok = client.post(url, {"codebook": CODEBOOK.decode()}, format="json")
    assert ok.status_code == 200, ok.content
    assert client.get(url).json() == {"codebook": export_codebook(dataset=dataset)}
    declared = client.post(
        f"/api/v1/datasets/{dataset.pk}/declare/",
        {
            "columns": {
                "id": {"kind": "excluded"},
                "score": {"kind": "numeric", "lower": "0", "upper": "100",
                          "missing_codes": ["-9", "999"]},
                "visit": {"kind": "date", "date_lower": "2024-01-01",
                          "date_upper": "2024-12-31", "date_bin": "year"},
                "region": {"kind": "categorical", "categories": ["north", "south"]},
            },
            "privacy_unit": "row",
        },
        format="json",
    )  # fmt: skip
    assert declared.status_code == 200, declared.content
    visit = dataset.columns.get(name="visit")
    assert visit.categories == ["2024"] and visit.date["bin"] == "year"
    refused = client.post(
        f"/api/v1/datasets/{dataset.pk}/declare/",
        {"columns": {"visit": {"kind": "date", "date_bin": "year"}}, "privacy_unit": "row"},
        format="json",
    )
    assert refused.status_code == 400
    assert "the first date is required" in str(refused.json()["error"]["details"])
