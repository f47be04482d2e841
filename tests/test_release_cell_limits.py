"""Cells per statistic and per release: refused in the plan, the builder and the API, with
a message naming the limit and the count, and nothing created."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from dpportal.errors import ValidationFailed
from releases import kinds, services
from releases.models import Release, Statistic
from releases.services.plan import release_plan_parse
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

# region: 4 categories + Other + Missing = 6 cells; age: 4 bins = 4 cells
CROSS = {"kind": "histogram", "column": "region", "column2": "age"}  # 24 cells
SPREAD = {"kind": "stddev", "column": "income", "group_by": "region",
          "lower": "0", "upper": "1000", "n_guess": 100}  # fmt: skip


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=200)


def _cells(project, dataset, statistics) -> list[int]:
    plan = release_plan_parse(project=project, data=builder_data(dataset, statistics=statistics))
    return [kinds.get(s.kind).cell_count(s) for s in plan.statistics]


def test_cell_counts_follow_each_kind(project, dataset):
    stats = [
        {"kind": "count"},
        {"kind": "histogram", "column": "region"},
        CROSS,
        {"kind": "mean", "column": "age", "n_guess": 100},
        {"kind": "grouped_mean", "column": "income", "group_by": "region",
         "group_by2": "age", "lower": "0", "upper": "1000", "n_guess": 100},
        {"kind": "quantiles", "column": "age", "quantiles": "0.25, 0.5, 0.75", "step": "1"},
        SPREAD,
    ]  # fmt: skip
    # a mean and a grouped mean read back a sum and a count per value; a spread three parts
    assert _cells(project, dataset, stats) == [1, 6, 24, 2, 48, 3, 18]


def test_a_statistic_over_its_limit_is_refused_naming_limit_and_count(
    project, owner, dataset, settings
):
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 20
    data = builder_data(dataset, statistics=[{"kind": "count"}, CROSS])
    with pytest.raises(ValidationFailed) as info:
        services.release_save_draft(project=project, actor=owner, data=data)
    assert "Statistic 2" in info.value.message
    assert "at most 20 cells per statistic" in info.value.message
    assert "this one has 24" in info.value.message
    assert Release.objects.count() == 0 and Statistic.objects.count() == 0
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 24
    services.release_save_draft(project=project, actor=owner, data=data)
    assert Release.objects.count() == 1


def test_a_release_over_its_limit_is_refused_naming_limit_and_count(
    project, owner, dataset, settings
):
    settings.RELEASE_MAX_CELLS_PER_RELEASE = 49
    data = builder_data(dataset, statistics=[CROSS, CROSS, {"kind": "count"}, {"kind": "count"}])
    with pytest.raises(ValidationFailed) as info:
        services.release_save_draft(project=project, actor=owner, data=data)
    assert "At most 49 cells per release; this one has 50." in info.value.message
    assert Release.objects.count() == 0 and Statistic.objects.count() == 0
    settings.RELEASE_MAX_CELLS_PER_RELEASE = 50
    services.release_save_draft(project=project, actor=owner, data=data)
    assert Release.objects.count() == 1


def test_the_spread_kinds_have_their_own_lower_limit(project, owner, dataset, settings):
    settings.RELEASE_MAX_SPREAD_CELLS = 17
    data = builder_data(dataset, statistics=[SPREAD])
    with pytest.raises(ValidationFailed, match="at most 17 cells per statistic of this kind; "
                                               "this one has 18"):  # fmt: skip
        services.release_save_draft(project=project, actor=owner, data=data)
    # a histogram of more cells is still allowed: the lower limit is the spread kinds' own
    services.release_save_draft(
        project=project, actor=owner, data=builder_data(dataset, statistics=[CROSS])
    )
    assert Release.objects.count() == 1


def test_large_default_limits_refuse_a_thousand_by_thousand_histogram(project, owner, dataset):
    dataset.columns.filter(name="age").update(lower=0, upper=1001, bin_edges=list(range(0, 1002)))
    data = builder_data(
        dataset, statistics=[{"kind": "histogram", "column": "age", "column2": "income"}]
    )
    dataset.columns.filter(name="income").update(bin_edges=list(range(0, 1002)))
    with pytest.raises(ValidationFailed) as info:
        services.release_save_draft(project=project, actor=owner, data=data)
    assert "at most 10,000 cells per statistic" in info.value.message
    assert "this one has 1,002,001" in info.value.message
    assert Release.objects.count() == 0


def test_builder_page_and_preview_refuse_and_show_the_limits(
    client, project, owner, dataset, settings
):
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 20
    client.force_login(owner)
    url = reverse("releases:new", args=[project.slug])
    page = client.get(url)
    assert b"at most 20 cells per statistic" in page.content
    data = builder_data(dataset, statistics=[CROSS])
    response = client.post(url, {"payload": json.dumps(data)})
    assert response.status_code == 400
    assert b"at most 20 cells per statistic" in response.content
    assert b"this one has 24" in response.content
    url = reverse("releases:preview", args=[project.slug])
    preview = client.post(url, data, content_type="application/json")
    assert preview.status_code == 400 and "this one has 24" in preview.json()["error"]
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 24
    settings.RELEASE_MAX_CELLS_PER_RELEASE = 30
    fits = builder_data(dataset, statistics=[CROSS, {"kind": "count"}])
    ok = client.post(url, fits, content_type="application/json")
    assert ok.status_code == 200
    assert ok.json()["preview"]["cells_text"] == "Cells: 25 of at most 30 per release."
    assert Release.objects.count() == 0


def test_api_refuses_with_the_message_and_creates_nothing(project, owner, dataset, settings):
    settings.RELEASE_MAX_CELLS_PER_RELEASE = 30
    api = APIClient()
    api.force_authenticate(owner)
    response = api.post(
        reverse("api:releases-create", args=[project.slug]),
        builder_data(dataset, statistics=[CROSS, CROSS]),
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "At most 30 cells per release; this one has 48" in json.dumps(response.json())
    assert Release.objects.count() == 0
