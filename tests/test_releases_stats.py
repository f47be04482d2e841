"""Issue 14 kinds through the services and the real compute path: plan, spec, results."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from dpportal.errors import ValidationFailed
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, lifecycle, services
from releases.models import Release
from tests.releases_support import builder_data, make_dataset

NEW = [
    {"kind": "grouped_sum", "column": "income", "group_by": "region"},
    {"kind": "grouped_mean", "column": "income", "group_by": "region", "group_by2": "age",
     "n_guess": 200},
    {"kind": "quantiles", "column": "income", "quantiles": "0.25, 0.5, 75%", "step": "1000"},
    {"kind": "quantiles", "column": "age", "quantiles": ["0.5"]},
    {"kind": "stddev", "column": "age", "n_guess": 5000},
    {"kind": "variance", "column": "income", "group_by": "region", "n_guess": 800},
]  # fmt: skip


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=5000)


def parse(project, dataset, statistics, **extra):
    return services.release_plan_parse(
        project=project, data=builder_data(dataset, statistics=statistics, **extra)
    )


@pytest.mark.django_db
def test_new_kinds_plan_preview_and_compute(project, owner, reviewer, dataset):
    data = builder_data(dataset, statistics=NEW, epsilon="1")
    preview = services.release_preview(project=project, data=data)
    stats = preview["statistics"]
    assert [s["cells"] for s in stats] == [6, 24, 3, 1, 1, 6]
    assert stats[2]["rank_error"] > 0 and stats[2]["candidates"] == 151
    release = services.release_save_draft(project=project, actor=owner, data=data)
    form = services.release_form_data(release=release)
    assert form["statistics"][2]["quantiles"] == ["0.25", "0.5", "0.75"]
    assert form["statistics"][1]["group_by2"] == "age"
    release = lifecycle.release_submit(release=release, actor=owner)
    spec = release.spec["statistics"]
    assert spec[0]["groups"][0]["name"] == "region" and spec[0]["granularity"]
    assert spec[3]["grid"] == {"edges": ["0", "18", "40", "65", "100"]}
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk, rng=SeededTestRandom(5)) == "computed"
    payload = Release.objects.get(pk=release.pk).result.payload
    out = payload["statistics"]
    assert out[0]["cells"] == ["north", "south", "east", "west", "Other", "Missing"]
    assert out[1]["shape"] == [6, 4] and len(out[1]["values"]) == 24
    assert out[2]["cells"] == ["Lower quartile", "Median", "Upper quartile"]
    assert out[3]["values"][0] in ("0", "18", "40", "65", "100")
    assert out[4]["cells"] == ["All rows"] and float(out[4]["values"][0]) > 0
    assert out[5]["explanation"]["statistic"] == "spread"
    check_pages_and_downloads(client_for(owner), release, out)


def client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def check_pages_and_downloads(client, release, out):
    """Members' page, publish, public page, JSON and CSV downloads, API results: no error."""
    assert client.get(reverse("releases:detail", args=[release.pk])).status_code == 200
    release = lifecycle.release_publish(
        release=Release.objects.get(pk=release.pk), actor=release.created_by
    )
    args = [release.project.slug, release.pk]
    assert client.get(reverse("public:release", args=args)).status_code == 200
    record = json.loads(client.get(reverse("public:release-json", args=args)).content)
    stats = {s["position"]: s for s in record["statistics"]}
    median = stats[2]["cells"][1]
    assert median["cell"] == "Median" and median["value"] == out[2]["values"][1]
    assert median["rank_error"] > 0 and median["lower"] <= median["upper"]
    mean_cell = stats[1]["cells"][0]
    assert mean_cell["lower"] <= mean_cell["value"] <= mean_cell["upper"]
    sd = stats[4]["cells"][0]
    assert 0 <= sd["lower"] <= sd["value"] <= sd["upper"]
    total = stats[0]["cells"][0]
    assert total["halfwidth"] > 0 and total["simultaneous_halfwidth"] > total["halfwidth"]
    csv_response = client.get(reverse("public:release-csv", args=args))
    text = b"".join(csv_response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    quantile_rows = [r for r in rows if r["kind"] == "quantiles"]
    assert len(quantile_rows) == 4 and all(r["rank_error"] for r in quantile_rows)
    assert all(r["lower"] for r in rows if r["kind"] in ("grouped_mean", "stddev"))
    assert {r["group_columns"] for r in rows if r["kind"] == "grouped_mean"} == {"region x age"}
    api = client.get(f"/api/v1/releases/{release.pk}/results/?confidence=0.99")
    assert api.status_code == 200
    kinds = [s["kind"] for s in api.json()["statistics"]]
    assert kinds == [s["kind"] for s in NEW]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "stat, message",
    [
        ({"kind": "grouped_mean", "column": "income", "n_guess": 5}, "group by"),
        ({"kind": "grouped_sum", "column": "income", "group_by": "person"}, "excluded"),
        ({"kind": "grouped_sum", "column": "income", "group_by": "income"}, "bin edges"),
        ({"kind": "grouped_sum", "column": "region", "group_by": "age"}, "numeric"),
        ({"kind": "grouped_mean", "column": "income", "group_by": "region"}, "planning guess"),
        ({"kind": "quantiles", "column": "income", "quantiles": "0.5"}, "candidate grid"),
        ({"kind": "quantiles", "column": "age", "quantiles": "1.5"}, "strictly between"),
        ({"kind": "quantiles", "column": "age", "quantiles": "0.5, 50%"}, "twice"),
        ({"kind": "quantiles", "column": "age", "quantiles": ""}, "at least one"),
        ({"kind": "quantiles", "column": "age", "quantiles": "x"}, "not a quantile"),
        ({"kind": "quantiles", "column": "income", "quantiles": "0.5", "step": "0.001"},
         "too fine"),
        ({"kind": "quantiles", "column": "income", "quantiles": "0.5", "step": "-1"}, "step"),
        ({"kind": "stddev", "column": "income"}, "planning guess"),
        ({"kind": "stddev", "column": "income", "n_guess": 9, "group_by": "region",
          "group_by2": "region"}, "differ"),
    ],
)  # fmt: skip
def test_new_kinds_refused_with_a_clear_message(project, dataset, stat, message):
    with pytest.raises(ValidationFailed) as caught:
        parse(project, dataset, [stat])
    assert message in caught.value.message
    assert caught.value.message.startswith("Statistic 1")
