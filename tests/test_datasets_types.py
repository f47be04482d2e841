"""Type overrides, dates, missing-value codes and numbers in text columns (issue 15, point 4).

Each declaration is made through the real upload and ingest, and each reading
rule is checked through the real computation path (releases.compute.release_aggregate
on a submitted release's frozen specification): the true aggregates live only in
this test's memory.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.domains import date_bin_labels
from datasets.models import Column
from datasets.services import dataset_create, dataset_declare, dataset_ingest
from dpportal.errors import ValidationFailed
from releases import compute
from releases.models import Release
from releases.review.selectors import review_document_get
from tests.releases_support import submitted

pytestmark = pytest.mark.django_db

# score: one 'abc' in 7 numbers would make the column text; here 5 unreadable or coded cells
CSV = (
    b"id,score,visit,region\n"
    b"1,10,2024-01-15,north\n"
    b"2,20,2024-02-03T08:30:00,south\n"
    b"3,abc,2024-05-20,north\n"
    b"4,n/a,2023-12-31,-9\n"
    b"5,inf,bad,north\n"
    b"6,1e309,2025-01-01,south\n"
    b"7,-9,2024-02-30,north\n"
    b"8,30,2024-04-30,99\n"
)

DECLARATION = {
    "id": {"kind": "excluded"},
    "score": {
        "kind": "numeric",
        "lower": "0",
        "upper": "100",
        "bin_edges": "0, 25, 50, 100",
        "missing": "category",
        "missing_codes": "-9",
    },
    "visit": {
        "kind": "date",
        "date_lower": "2024-01-01",
        "date_upper": "2024-12-31",
        "date_bin": "quarter",
        "missing": "category",
    },
    "region": {
        "kind": "categorical",
        "categories": "north\nsouth",
        "missing": "category",
        "missing_codes": "-9, 99",
    },
}


def ingest(project, owner, content: bytes = CSV):
    dataset = dataset_create(
        project=project,
        name="visits",
        uploaded_file=SimpleUploadedFile("v.csv", content),
        uploaded_by=owner,
        dispatch=False,
    )
    return dataset_ingest(dataset_id=dataset.pk)


@pytest.fixture
def dataset(project, owner):
    return ingest(project, owner)


def state(dataset):
    return list(
        dataset.columns.order_by("position").values_list(
            "kind", "categories", "lower", "upper", "bin_edges", "missing_codes", "date"
        )
    )


def declare(dataset, owner, columns=DECLARATION):
    return dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")


def test_text_column_of_mostly_numbers_shows_a_rounded_share_and_may_be_declared_numeric(
    project, owner
):
    # the case: one 'abc' in seven cells made the column text and unusable
    dataset = ingest(project, owner, b"x,y\n1,a\n2,b\nabc,c\n4,d\n5,e\n6,f\n7,g\n")
    x = dataset.columns.get(name="x")
    assert x.suggested_type == "string"
    assert x.profile["unreadable_share"] == "0.14"  # 1 of 7, rounded to a percent
    assert "unreadable_share" not in dataset.columns.get(name="y").profile  # plain text
    assert pq.read_table(settings.MEDIA_ROOT / dataset.parquet_file).column("x").type == "string"
    dataset_declare(
        dataset=dataset,
        actor=owner,
        columns={"x": {"kind": "numeric", "lower": "0", "upper": "10"}, "y": {"kind": "excluded"}},
        unit="row",
    )
    assert dataset.columns.get(name="x").kind == "numeric"


def test_declared_page_shows_the_share_and_offers_the_date_kind(client, owner, dataset):
    client.force_login(owner)
    page = client.get(reverse("datasets:declare", args=[dataset.pk])).content.decode()
    # score: 4 of 8 cells (abc, n/a, inf, 1e309) are not finite numbers ('-9' is a number)
    assert "about 50 % of the non-empty cells do not read as numbers" in page
    assert 'value="date"' in page and "date-bin-1" in page
    # "Fill in from profile" also sets the kind: numeric for text of mostly numbers
    fills = json.loads(page.split('id="profile-fills" type="application/json">')[1].split("<")[0])
    assert fills["1"]["kind"] == "numeric"
    assert fills["3"]["kind"] == ""  # region: too few rows for any suggestion
    assert 'data-fill="1"' in page and 'data-fill="3"' not in page


def test_codes_unreadable_cells_and_dates_are_read_as_declared_by_the_computation(
    project, owner, reviewer, dataset
):
    declare(dataset, owner)
    visit = dataset.columns.get(name="visit")
    assert visit.kind == "categorical"  # a date column is categorical over its bins
    assert visit.categories == ["2024-Q1", "2024-Q2", "2024-Q3", "2024-Q4"]
    statistics = [
        {"kind": "histogram", "column": "score"},
        {"kind": "histogram", "column": "visit"},
        {"kind": "histogram", "column": "region"},
        {"kind": "sum", "column": "score"},
    ]
    release = submitted(project=project, owner=owner, dataset=dataset, statistics=statistics)
    spec = Release.objects.get(pk=release.pk).spec
    assert spec["statistics"][0]["columns"][0]["missing_codes"] == ["-9"]
    assert spec["statistics"][1]["columns"][0]["date"]["bin"] == "quarter"
    # the reviewer reads the dates and the codes in the review document
    document = review_document_get(budget_request=release.budget_request)
    texts = [c.domain_text for s in document.statistics for c in s.columns]
    assert any("dates from 2024-01-01 to 2024-12-31" in t and "by quarter" in t for t in texts)
    assert any("missing-value codes (counted as missing): -9, 99" in t for t in texts)
    truth = compute.release_aggregate(release=Release.objects.get(pk=release.pk))
    # score: 10, 20 | 30 | - | missing: abc, n/a, inf, 1e309 and the code -9
    assert list(truth[0]) == [2, 1, 0, 5]
    # visit: Q1 (01-15, 02-03 with a time), Q2 (05-20, 04-30), Other (2023-12-31, 2025-01-01),
    # Missing ('bad' and 2024-02-30, which is no day)
    assert list(truth[1]) == [2, 2, 0, 0, 2, 2]
    # region: north x4, south x2, the codes -9 and 99 are missing
    assert list(truth[2]) == [4, 2, 0, 2]
    # the sum reads 10 + 20 + 30 in grid units (the coded -9 would lower it)
    granularity = float(spec["statistics"][3]["granularity"])
    assert truth[3] == round(60 / granularity)


def test_a_code_counts_as_missing_in_a_numeric_integer_column(project, owner, reviewer):
    dataset = ingest(project, owner, b"id,age\n1,30\n2,-9\n3,999\n4,50\n")
    assert dataset.columns.get(name="age").suggested_type == "integer"
    dataset_declare(
        dataset=dataset,
        actor=owner,
        columns={
            "id": {"kind": "excluded"},
            "age": {
                "kind": "numeric",
                "lower": "0",
                "upper": "120",
                "bin_edges": "0,40,120",
                "missing": "category",
                "missing_codes": ["-9", "999.0"],
            },
        },  # fmt: skip
        unit="row",
    )
    assert dataset.columns.get(name="age").missing_codes == ["-9", "999"]
    release = submitted(
        project=project,
        owner=owner,
        dataset=dataset,
        statistics=[{"kind": "histogram", "column": "age"}],
    )
    truth = compute.release_aggregate(release=Release.objects.get(pk=release.pk))
    assert np.array_equal(truth[0], [1, 1, 2])  # without the codes: [2, 2, 0] (-9 clamps)


@pytest.mark.parametrize(
    "column, spec, message",
    [
        ("visit", {"kind": "date", "date_lower": "2024-01-01", "date_upper": "2023-01-01",
                   "date_bin": "month"}, "the first date must not be after the last date"),
        ("visit", {"kind": "date", "date_lower": "2020-01-01", "date_upper": "2024-12-31",
                   "date_bin": "day"}, "more than 1000 days"),
        ("visit", {"kind": "date", "date_lower": "01/02/2024", "date_upper": "2024-12-31",
                   "date_bin": "year"}, "written YYYY-MM-DD"),
        ("visit", {"kind": "date", "date_lower": "2024-01-01", "date_upper": "2024-12-31",
                   "date_bin": "week"}, "choose how dates are binned"),
        ("score", {"kind": "numeric", "lower": "0", "upper": "9", "missing_codes": "n/a"},
         "missing-value code 'n/a' must be a number"),
        ("region", {"kind": "categorical", "categories": "north\n-9", "missing_codes": "-9"},
         "cannot also be a category: -9"),
        ("region", {"kind": "ordinal"}, "choose categorical, numeric, date or excluded"),
    ],
)  # fmt: skip
def test_bad_declarations_are_refused_with_a_message_and_change_nothing(
    dataset, owner, column, spec, message
):
    declare(dataset, owner)
    before = state(dataset)
    with pytest.raises(ValidationFailed) as caught:
        declare(dataset, owner, {**DECLARATION, column: spec})
    assert message in " ".join(caught.value.extra["errors"][column])
    assert state(dataset) == before


def test_date_bins_of_a_range_reach_the_last_representable_day():
    assert date_bin_labels(dt.date(9999, 11, 5), dt.date(9999, 12, 31), "quarter", limit=10) == [
        "9999-Q4"
    ]
    assert date_bin_labels(dt.date(9998, 12, 31), dt.date(9999, 12, 31), "year", limit=10) == [
        "9998",
        "9999",
    ]
    assert len(date_bin_labels(dt.date(9999, 1, 1), dt.date(9999, 12, 31), "day", limit=400)) == 365
    assert date_bin_labels(dt.date(2000, 1, 1), dt.date(2000, 12, 31), "day", limit=365) is None


def test_a_date_column_reads_other_layouts(project, owner):
    dataset = ingest(project, owner, b"id,d\n1,17.05.2024\n2,1.2.2024 10:00\n3,31.02.2024\n")
    dataset_declare(
        dataset=dataset,
        actor=owner,
        columns={
            "id": {"kind": "excluded"},
            "d": {
                "kind": "date",
                "date_lower": "2024-01-01",
                "date_upper": "2024-06-30",
                "date_bin": "month",
                "date_format": "DD.MM.YYYY",
            },
        },  # fmt: skip
        unit="row",
    )
    column = dataset.columns.get(name="d")
    assert column.categories == ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06"]
    assert column.date == {
        "bin": "month",
        "format": "DD.MM.YYYY",
        "lower": "2024-01-01",
        "upper": "2024-06-30",
    }
    assert Column.Kind.CATEGORICAL == column.kind


def test_the_declaration_page_saves_dates_and_codes(client, owner, dataset):
    client.force_login(owner)
    url = reverse("datasets:declare", args=[dataset.pk])
    form = {
        "unit": "row",
        "kind-0": "excluded",
        "kind-1": "numeric", "lower-1": "0", "upper-1": "100", "codes-1": "-9, 999",
        "kind-2": "date", "date-lower-2": "2024-01-01", "date-upper-2": "2024-12-31",
        "date-bin-2": "month", "date-format-2": "YYYY-MM-DD", "missing-2": "category",
        "kind-3": "categorical", "categories-3": "north\nsouth", "codes-3": "north",
    }  # fmt: skip
    refused = client.post(url, form)
    assert refused.status_code == 400
    assert "A missing-value code cannot also be a category: north." in refused.content.decode()
    assert state(dataset)[1][0] == "undeclared"  # nothing saved
    assert client.post(url, {**form, "codes-3": "-9"}).status_code == 302
    score, visit = dataset.columns.get(name="score"), dataset.columns.get(name="visit")
    assert score.missing_codes == ["-9", "999"]
    assert visit.date["bin"] == "month" and len(visit.categories) == 12
    page = client.get(url).content.decode()
    assert '<option value="month" selected>' in page and 'value="-9, 999"' in page
    detail = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert "Date from 2024-01-01 to 2024-12-31 (written YYYY-MM-DD), by month" in detail
    assert "Missing-value codes: -9, 999" in detail
