"""The builder: validation (nothing created on bad input), the split, the preview, pages."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow.dataset as pa_dataset
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from budgets.models import BudgetRequest, LedgerEntry
from dpportal.errors import BudgetExceeded, InvalidTransition, SelfApproval, ValidationFailed
from releases import lifecycle, services
from releases.models import Release, Statistic
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory
from tests.releases_support import builder_data, draft, full_statistics, make_dataset, submitted

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=500)


BAD = [
    ({"statistics": [{"kind": "sum", "column": "person"}]}, "excluded"),
    ({"statistics": [{"kind": "histogram", "column": "secret"}]}, "is excluded"),
    ({"statistics": [{"kind": "count", "column": "nope", "category": "x"}]}, "no column named"),
    ({"statistics": [{"kind": "sum", "column": "income", "lower": "10", "upper": "1"}]}, "above"),
    ({"statistics": []}, "at least one statistic"),
    ({"epsilon": "5"}, "remain in the project by basic composition"),
    ({"epsilon": "-1"}, "greater than 0"),
    ({"statistics": [{"kind": "mean", "column": "region", "n_guess": 10}]}, "numeric column"),
    ({"statistics": [{"kind": "mean", "column": "age"}]}, "planning guess"),
    ({"statistics": [{"kind": "count", "column": "region", "category": "mars"}]}, "not a declared"),
    ({"confidence": "0.5"}, "90 %, 95 % or 99 %"),
    ({"mechanism": "gaussian", "delta": "0"}, "delta above 0"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_input_is_refused_with_a_message_and_creates_nothing(
    project, owner, dataset, change, message
):
    data = builder_data(dataset)
    data.update(change)
    with pytest.raises((ValidationFailed, BudgetExceeded)) as info:
        services.release_save_draft(project=project, actor=owner, data=data)
    assert message in info.value.message
    assert Release.objects.count() == 0 and Statistic.objects.count() == 0


def test_mean_without_a_declared_range_is_refused(project, owner, dataset):
    dataset.columns.filter(name="age").update(lower=None, upper=None)
    data = builder_data(dataset, statistics=[{"kind": "mean", "column": "age", "n_guess": 100}])
    with pytest.raises(ValidationFailed, match="needs a declared range"):
        services.release_save_draft(project=project, actor=owner, data=data)
    assert Release.objects.count() == 0


def test_dataset_not_ready_is_refused(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=100, status="ingesting")
    with pytest.raises(ValidationFailed, match="not ready"):
        services.release_save_draft(project=project, actor=owner, data=builder_data(dataset))
    assert Release.objects.count() == 0


def test_equal_split_weights_and_hold(project, owner, dataset):
    stats = [{"kind": "count"}, {"kind": "count"}, {"kind": "count"}]
    release = draft(project=project, owner=owner, dataset=dataset, statistics=stats, epsilon="0.3")
    assert [s.epsilon for s in release.statistics.all()] == [Decimal("0.1")] * 3
    stats = [
        {"kind": "count", "hold": True, "epsilon": "0.2"},
        {"kind": "count", "weight": "3"},
        {"kind": "count", "weight": "1"},
    ]
    release = draft(project=project, owner=owner, dataset=dataset, statistics=stats, epsilon="0.6")
    assert [s.epsilon for s in release.statistics.all()] == [
        Decimal("0.2"), Decimal("0.3"), Decimal("0.1")
    ]  # fmt: skip
    assert release.epsilon == Decimal("0.6")


def test_target_halfwidth_solves_epsilon(project, owner, dataset):
    data = builder_data(dataset, statistics=[{"kind": "count", "target_halfwidth": "30"}])
    preview = services.release_preview(project=project, data=data)
    (stat,) = preview["statistics"]
    assert stat["halfwidth"] <= 30
    # a target twice as wide needs about half the epsilon
    wide = builder_data(dataset, statistics=[{"kind": "count", "target_halfwidth": "60"}])
    eps_wide = Decimal(services.release_preview(project=project, data=wide)["cost"]["epsilon"])
    assert eps_wide < Decimal(preview["cost"]["epsilon"]) * Decimal("0.6")


def test_preview_reports_cost_halfwidths_and_budget(project, owner, dataset):
    preview = services.release_preview(project=project, data=builder_data(dataset))
    assert preview["cost"]["epsilon"] == "0.7"
    assert preview["budget"]["epsilon_remaining"] == "1"
    assert preview["fits"] is True
    hist = preview["statistics"][2]
    assert hist["cells"] == 6  # 4 categories + Other + Missing
    assert hist["halfwidth_simultaneous"] > hist["halfwidth"] > 0


def test_preview_never_opens_the_data(project, owner, dataset, settings, monkeypatch):
    """With the data file gone and every Parquet reader refusing, the preview is the same."""
    expected = services.release_preview(project=project, data=builder_data(dataset))
    (Path(settings.MEDIA_ROOT) / dataset.parquet_file).unlink()
    opened = []

    def refuse(*args, **kwargs):
        opened.append(args)
        raise AssertionError("the preview opened the data")

    for name in ("read_table", "ParquetFile", "ParquetDataset", "read_metadata", "read_schema"):
        monkeypatch.setattr(pq, name, refuse)
    monkeypatch.setattr(pa_dataset, "dataset", refuse)
    preview = services.release_preview(project=project, data=builder_data(dataset))
    assert opened == []
    assert preview == expected
    kinds = [s["kind"] for s in preview["statistics"]]
    assert kinds == [s["kind"] for s in full_statistics()]
    assert all(s["halfwidth"] > 0 for s in preview["statistics"] if s["kind"] != "argmax")


def test_submitted_release_is_frozen(project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset)
    assert len(release.spec_hash) == 64
    request = BudgetRequest.objects.get(pk=release.budget_request_id)
    assert request.spec_hash == release.spec_hash
    assert request.epsilon == Decimal("0.7")
    assert request.summary["statistics"][0]["kind"] == "count"
    with pytest.raises(InvalidTransition, match="frozen"):
        services.release_save_draft(
            project=project, actor=owner, data=builder_data(dataset), release=release
        )


def test_lifecycle_moves_and_events(project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset)
    with pytest.raises(InvalidTransition):
        lifecycle.release_publish(release=release, actor=owner)
    lifecycle.release_reject(release=release, reviewer=reviewer, comment="too costly")
    release.refresh_from_db()
    assert release.status == "rejected"
    second = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=second, reviewer=reviewer)
    lifecycle.release_withdraw(release=second, actor=owner)
    second.refresh_from_db()
    assert second.status == "withdrawn"
    kinds = LedgerEntry.objects.filter(request_id=second.budget_request_id).values_list(
        "kind", flat=True
    )
    assert list(kinds) == ["reserve", "release"]
    assert [(e.from_status, e.to_status) for e in second.events.all()] == [
        ("draft", "submitted"), ("submitted", "approved"), ("approved", "queued"),
        ("queued", "withdrawn"),
    ]  # fmt: skip


def test_self_approval_is_refused(project, owner, dataset):
    MembershipFactory(project=project, user=owner, role="reviewer")
    release = submitted(project=project, owner=owner, dataset=dataset)
    with pytest.raises(SelfApproval):
        lifecycle.release_approve(release=release, reviewer=owner)
    release.refresh_from_db()
    assert release.status == "submitted"


# --- pages and access ------------------------------------------------------------------


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_builder_page_saves_a_draft(client, project, owner, dataset):
    login(client, owner)
    url = reverse("releases:new", args=[project.slug])
    assert client.get(url).status_code == 200
    response = client.post(url, {"payload": json.dumps(builder_data(dataset))})
    assert response.status_code == 302
    release = Release.objects.get()
    page = client.get(reverse("releases:detail", args=[release.pk]))
    assert page.status_code == 200 and b"Submit for review" in page.content


def test_builder_page_shows_the_error_and_creates_nothing(client, project, owner, dataset):
    login(client, owner)
    data = builder_data(dataset, statistics=[{"kind": "sum", "column": "person"}])
    response = client.post(
        reverse("releases:new", args=[project.slug]), {"payload": json.dumps(data)}
    )
    assert response.status_code == 400
    assert b"excluded" in response.content
    assert Release.objects.count() == 0


def test_preview_endpoint(client, project, owner, dataset):
    login(client, owner)
    url = reverse("releases:preview", args=[project.slug])
    ok = client.post(url, builder_data(dataset), content_type="application/json")
    assert ok.status_code == 200 and ok.json()["preview"]["cost"]["epsilon"] == "0.7"
    bad = client.post(url, builder_data(dataset, epsilon="x"), content_type="application/json")
    assert bad.status_code == 400 and "number" in bad.json()["error"]


def test_outsiders_and_anonymous_cannot_see_or_act(client, project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset)
    outsider = UserFactory(username="mallory")
    other = ProjectFactory(created_by=outsider)
    MembershipFactory(project=other, user=outsider, role="owner")
    MembershipFactory(project=other, user=outsider, role="reviewer")
    urls = [
        reverse("releases:detail", args=[release.pk]),
        reverse("releases:status", args=[release.pk]),
    ]
    posts = [
        reverse(name, args=[release.pk])
        for name in ("releases:approve", "releases:reject", "releases:withdraw", "releases:publish")
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # anonymous: to the login page
    for url in posts:
        assert client.post(url).status_code == 302
    login(client, outsider)
    for url in urls:
        assert client.get(url).status_code == 404
    for url in posts:
        assert client.post(url).status_code == 404
    assert client.get(reverse("releases:new", args=[project.slug])).status_code == 404
    preview = client.post(
        reverse("releases:preview", args=[project.slug]), {}, content_type="application/json"
    )
    assert preview.status_code == 404
    release.refresh_from_db()
    assert release.status == "submitted"
    with pytest.raises(Exception, match="No such"):
        lifecycle.release_approve(release=release, reviewer=outsider)
    # a reviewer may not build releases
    client.logout()
    login(client, reviewer)
    assert client.get(reverse("releases:new", args=[project.slug])).status_code == 403
    assert client.get(urls[0]).status_code == 200
