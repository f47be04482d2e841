"""Category labels beside the codes: from a codebook's label columns, typed on the
declaration page or sent to the API, validated alike; frozen into a release's spec."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from datasets.models import Column
from datasets.services import dataset_declare, dataset_import_codebook, export_codebook
from datasets.services.category_labels import is_chinese, value_label_lines
from dpportal.errors import ValidationFailed
from releases.kinds.domains import cell_labels, column_domain
from tests.test_datasets_types import CSV, ingest

pytestmark = pytest.mark.django_db

HEADER = b"column,kind,categories,category_labels,category_labels_zh\n"


@pytest.fixture
def dataset(project, owner):
    return ingest(project, owner, CSV)


def _region(dataset) -> Column:
    return Column.objects.get(dataset=dataset, name="region")


def _declare_region(dataset, owner, **extra):
    columns = {
        "id": {"kind": "excluded"},
        "score": {"kind": "excluded"},
        "visit": {"kind": "excluded"},
        "region": {"kind": "categorical", "categories": ["north", "south"], **extra},
    }
    return dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")


def _problems(caught) -> str:
    errors = caught.value.extra.get("errors", {})
    return " ".join(p for problems in errors.values() for p in problems)


def test_a_codebook_label_column_labels_the_categories_in_order(dataset, owner):
    content = HEADER + "region,categorical,north|south,North|,北|南\n".encode()
    dataset_import_codebook(dataset=dataset, actor=owner, content=content)
    assert _region(dataset).category_labels == {
        "north": {"en": "North", "zh-hans": "北"},
        "south": {"en": "", "zh-hans": "南"},
    }
    exported = export_codebook(dataset=dataset)
    assert "category_labels,category_labels_zh" in exported.splitlines()[0]
    assert exported.splitlines()[-1].endswith(",North|,北|南")
    # the export imports back to the same labels
    _region(dataset).__class__.objects.filter(dataset=dataset).update(category_labels={})
    dataset_import_codebook(dataset=dataset, actor=owner, content=exported.encode())
    assert _region(dataset).category_labels["north"] == {"en": "North", "zh-hans": "北"}


def test_a_codebook_without_label_columns_still_imports(dataset, owner):
    content = b"column,kind,categories\nregion,categorical,north|south\n"
    dataset_import_codebook(dataset=dataset, actor=owner, content=content)
    assert _region(dataset).category_labels == {}


@pytest.mark.parametrize(
    "row, message",
    [
        ("region,categorical,north|south,North,", "gives 1 category labels for 2 categories"),
        ("region,categorical,north|south,Same|same,", "the codes 'north' and 'south' have the "
         "same label 'same'"),
        ("region,categorical,north|south,,南|南", "have the same label '南'"),
        ("region,categorical,north|south,N\u202eX|S,", "invisible direction control"),
        ("region,categorical,north|south," + "x" * 201 + "|S,", "longer than 200 characters"),
        ("region,categorical,north|south,south|North,", "another declared code"),
    ],
)  # fmt: skip
def test_a_codebook_with_bad_labels_is_refused_with_its_line(dataset, owner, row, message):
    with pytest.raises(ValidationFailed) as caught:
        dataset_import_codebook(dataset=dataset, actor=owner, content=HEADER + row.encode())
    assert message in caught.value.message + " " + _problems(caught)
    assert _region(dataset).category_labels == {}


def test_labels_typed_as_lines_are_stored_per_language(dataset, owner):
    lines = {"en": "north = North\n\nsouth=South ", "zh-hans": "north = 北方"}
    _declare_region(dataset, owner, category_labels_lines=lines)
    assert _region(dataset).category_labels == {
        "north": {"en": "North", "zh-hans": "北方"},
        "south": {"en": "South", "zh-hans": ""},
    }


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"category_labels_lines": {"en": "north North"}}, "write each label as 'code = label'"),
        ({"category_labels": {"east": "East"}}, "not a declared category: east"),
        ({"category_labels": {"north": "X", "south": " x "}}, "have the same label"),
        ({"category_labels": {"north": {"fr": "Nord"}}}, "only the languages"),
        ({"category_labels": {"north": 3}}, "must be text"),
        ({"category_labels": ["north"]}, "must map each code"),
    ],
)
def test_bad_labels_are_refused_and_nothing_is_saved(dataset, owner, extra, message):
    with pytest.raises(ValidationFailed) as caught:
        _declare_region(dataset, owner, **extra)
    assert message in _problems(caught)
    assert not _region(dataset).categories


def test_labels_of_a_column_that_is_not_categorical_are_refused(dataset, owner):
    columns = {
        "id": {"kind": "excluded"},
        "score": {"kind": "numeric", "lower": 0, "upper": 100, "category_labels": {"1": "x"}},
        "visit": {"kind": "excluded"},
        "region": {"kind": "excluded"},
    }
    with pytest.raises(ValidationFailed) as caught:
        dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")
    assert "categorical column's codes only" in _problems(caught)
    # the page's boxes of a column declared numeric are left unused, not refused
    columns["score"] = {"kind": "numeric", "lower": 0, "upper": 100,
                        "category_labels_lines": {"en": "1 = one"}}  # fmt: skip
    dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")
    assert Column.objects.get(dataset=dataset, name="score").category_labels == {}


def test_the_api_takes_labels_in_both_forms_and_returns_them(dataset, owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=owner).key)
    body = {
        "columns": {
            "id": {"kind": "excluded"},
            "score": {"kind": "excluded"},
            "visit": {"kind": "excluded"},
            "region": {
                "kind": "categorical",
                "categories": ["north", "south"],
                "category_labels": {"north": "North", "south": {"en": "South", "zh-hans": "南"}},
            },
        },
        "privacy_unit": "row",
    }
    url = reverse("api:datasets-declare", args=[dataset.pk])
    response = client.post(url, body, format="json")
    assert response.status_code == 200, response.json()
    region = next(c for c in response.json()["columns"] if c["name"] == "region")
    assert region["category_labels"] == {
        "north": {"en": "North", "zh-hans": ""},
        "south": {"en": "South", "zh-hans": "南"},
    }
    body["columns"]["region"]["category_labels"] = {"north": "Same", "south": "Same"}
    response = client.post(url, body, format="json")
    assert response.status_code == 400
    assert "have the same label 'Same'" in str(response.json())


def test_value_labels_go_to_the_language_of_their_text():
    assert is_chinese("男") and not is_chinese("Male")
    boxes = value_label_lines([["1", "男"], ["2", "Female"], ["3", " Not  asked "]])
    assert boxes == {"en": "2 = Female\n3 = Not asked", "zh-hans": "1 = 男"}


def test_labels_are_frozen_into_the_domain_and_read_back_for_cells(dataset, owner):
    _declare_region(dataset, owner, category_labels={"north": {"en": "North", "zh-hans": "北"}})
    domain = column_domain(_region(dataset))
    assert domain["category_labels"] == {"north": {"en": "North", "zh-hans": "北"}}
    entry = {"kind": "histogram", "columns": [domain]}
    found = cell_labels(entry, cells=["north", "south", "Other"], row_labels=[], col_labels=[])
    assert found["cells"] == [{"en": "North", "zh-hans": "北"}, None, None]
    two = {"kind": "histogram", "columns": [domain, domain]}
    found = cell_labels(two, cells=[], row_labels=["north", "Other"], col_labels=["south", "north"])
    assert found["rows"] == [{"en": "North", "zh-hans": "北"}, None]
    assert found["cells"] == [
        {"en": "North / south", "zh-hans": "北 / south"},
        {"en": "North / North", "zh-hans": "北 / 北"},
        None,
        {"en": "Other / North", "zh-hans": "Other / 北"},
    ]
    # a column without labels keeps the spec's earlier form (no key)
    _declare_region(dataset, owner)
    assert "category_labels" not in column_domain(_region(dataset))
