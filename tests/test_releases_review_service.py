"""budget_request_decide (releases.services.review): the one rule of a reviewer's decision.

A release's request moves the release's state machine together with the budget; a
request of no release is decided by the budget services alone; a refused decision
changes nothing; the reviewer's page and the API both decide through it.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from budgets.models import BudgetRequest, LedgerEntry
from budgets.services import budget_request_create
from dpportal.errors import PermissionDenied
from releases.api import review as review_api
from releases.models import Release
from releases.review import views as review_views
from releases.services import review
from releases.services.review import budget_request_decide
from tests.factories import PASSWORD
from tests.review_support import laplace_release, person_dataset, review_project

pytestmark = pytest.mark.django_db


def _plain_request(project, owner) -> BudgetRequest:
    return budget_request_create(
        project=project,
        title="No release",
        epsilon="0.2",
        delta="0",
        summary={"statistics": []},
        spec_hash="d" * 64,
        requested_by=owner,
    )


@pytest.fixture
def pending_release(project, owner) -> Release:
    review_project(project)
    return laplace_release(
        project=project, owner=owner, dataset=person_dataset(project=project, owner=owner)
    )


@pytest.mark.parametrize(
    ("approve", "release_status", "request_status", "reserves"),
    [(True, Release.Status.QUEUED, "approved", 1), (False, Release.Status.REJECTED, "rejected", 0)],
)
def test_a_release_request_moves_the_release_with_the_budget(
    pending_release, reviewer, approve, release_status, request_status, reserves
):
    budget_request_decide(
        budget_request=pending_release.budget_request,
        reviewer=reviewer,
        approve=approve,
        comment="reasons",
    )
    pending_release.refresh_from_db()
    assert pending_release.status == release_status
    assert pending_release.budget_request.status == request_status
    assert LedgerEntry.objects.filter(kind="reserve").count() == reserves
    assert pending_release.events.filter(to_status=release_status, actor=reviewer).exists()


@pytest.mark.parametrize(
    ("approve", "status", "ledger"),
    [(True, "approved", [("reserve", Decimal("0.2"))]), (False, "rejected", [])],
)
def test_a_request_of_no_release_is_the_budget_services_alone(
    project, owner, reviewer, approve, status, ledger
):
    request = _plain_request(project, owner)
    budget_request_decide(budget_request=request, reviewer=reviewer, approve=approve, comment="ok")
    request.refresh_from_db()
    assert (request.status, request.decided_by, request.comment) == (status, reviewer, "ok")
    assert list(LedgerEntry.objects.values_list("kind", "epsilon")) == ledger


def test_a_refused_decision_changes_nothing(pending_release, owner):
    with pytest.raises(PermissionDenied):
        budget_request_decide(
            budget_request=pending_release.budget_request,
            reviewer=owner,  # the requester
            approve=True,
            comment="",
        )
    pending_release.refresh_from_db()
    assert pending_release.status == Release.Status.SUBMITTED
    assert pending_release.budget_request.status == "pending"
    assert not LedgerEntry.objects.exists()


def test_the_page_and_the_api_decide_through_it(client, project, owner, reviewer, monkeypatch):
    calls = []

    def spy(**kwargs):
        calls.append((kwargs["budget_request"].pk, kwargs["approve"]))
        return review.budget_request_decide(**kwargs)

    monkeypatch.setattr(review_views, "budget_request_decide", spy)
    monkeypatch.setattr(review_api, "budget_request_decide", spy)
    first, second = _plain_request(project, owner), _plain_request(project, owner)
    assert client.login(username=reviewer.username, password=PASSWORD)
    page = client.post(reverse("review:request_approve", args=[first.pk]), {"comment": ""})
    api = client.post(
        reverse("api:budget-requests-reject", args=[second.pk]),
        {"comment": "no"},
        content_type="application/json",
    )
    assert (page.status_code, api.status_code) == (302, 200)
    assert calls == [(first.pk, True), (second.pk, False)]


def test_the_request_pages_are_under_projects_requests():
    assert reverse("review:request_detail", args=[5]) == "/projects/requests/5/"
    assert reverse("review:request_approve", args=[5]) == "/projects/requests/5/approve/"
    assert reverse("review:request_reject", args=[5]) == "/projects/requests/5/reject/"
    assert reverse("api:budget-requests-approve", args=[5]) == "/api/v1/budget-requests/5/approve/"
