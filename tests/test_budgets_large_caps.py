"""Caps from 0.01 to 1e6: preview, review and approval answer, and never fail after a commit.

The "how many more fit" count is a bounded search (dpportal.privacy.pld: MAX_PLD_FIT
compositions, MAX_FIT releases); past a bound it reads "at least N", never more
than was checked to fit. Timings are measured in bench/approval.py; the ceiling
here (SECONDS) is generous, only there to catch a search that runs unbounded.
"""

from __future__ import annotations

import time
from decimal import Decimal
from fractions import Fraction

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from budgets.models import BudgetRequest, Project
from budgets.services import budget_request_approve, budget_request_create
from dpportal.privacy import noise, pld
from dpportal.privacy.mechanism_records import MechanismRecord, records_from_explanation
from dpportal.privacy.params import exact_str
from releases.models import Release
from tests.factories import PASSWORD
from tests.releases_support import builder_data, draft, make_dataset, submitted

pytestmark = pytest.mark.django_db

SECONDS = 20
STATS = [{"kind": "count"}, {"kind": "mean", "column": "age", "n_guess": 2000}]


def _gaussian_count(epsilon: Fraction) -> MechanismRecord:
    spec = noise.count_noise(
        mechanism="gaussian", epsilon=epsilon, delta=Fraction(1, 10**7),
        contribution_bound=1, cells=1, statistic="count",
    )  # fmt: skip
    return records_from_explanation(spec.describe())[0]


GAUSS = _gaussian_count(Fraction(1, 2))
LAPLACE = MechanismRecord.discrete_laplace(sensitivity=1, scale=4)


def _set_caps(project: Project, epsilon: str, delta: str = "0.00001") -> None:
    # directly, as the bench does: a cap below what is committed is a fixture here
    Project.objects.filter(pk=project.pk).update(
        epsilon_cap=Decimal(epsilon), delta_cap=Decimal(delta)
    )
    project.refresh_from_db()


def _file(project, owner, records, title) -> BudgetRequest:
    return budget_request_create(
        project=project, title=title, epsilon=exact_str(sum(r.epsilon * r.count for r in records)),
        delta=exact_str(sum(r.delta * r.count for r in records)), summary={}, spec_hash="f" * 64,
        requested_by=owner, mechanisms=[r.to_dict() for r in records],
    )  # fmt: skip


def _history(project, owner, reviewer, n: int = 3) -> None:
    for i in range(n):
        request = _file(project, owner, [LAPLACE, GAUSS], f"Earlier {i}")
        budget_request_approve(budget_request_id=request.pk, reviewer=reviewer)


def _timed(call):
    start = time.perf_counter()
    answer = call()
    assert time.perf_counter() - start < SECONDS
    return answer


def test_a_huge_cap_counts_at_least_and_never_overstates():
    check = _timed(lambda: pld.within_cap([LAPLACE] * 3, [GAUSS], epsilon_cap="1000000",
                                          delta_cap="0.00001"))  # fmt: skip
    assert check.within and check.fit_at_least
    assert check.fit == pld.MAX_FIT
    # a count without "at least" was searched to the end: one more does not fit
    small = pld.within_cap([], [GAUSS], epsilon_cap="3", delta_cap="0.00001")
    assert not small.fit_at_least
    one_more = pld.within_cap([GAUSS.times(small.fit)], [GAUSS], epsilon_cap="3",
                              delta_cap="0.00001", count_fit=False)  # fmt: skip
    assert not one_more.within


def test_the_pld_search_stops_at_its_bound_with_a_checked_lower_bound():
    # cap 100 at delta 1e-5: about 6,000 Gaussian counts fit by PLD, past MAX_PLD_FIT
    check = _timed(lambda: pld.within_cap([], [GAUSS], epsilon_cap="100", delta_cap="0.00001"))
    assert check.fit_at_least and check.fit >= pld.MAX_PLD_FIT
    at_count = pld.within_cap([GAUSS.times(check.fit - 1)], [GAUSS], epsilon_cap="100",
                              delta_cap="0.00001", count_fit=False)  # fmt: skip
    assert at_count.within  # the count stated was checked to fit


@pytest.mark.parametrize("cap", ["1000000", "0.01"])
def test_preview_review_and_approve_answer_at_extreme_caps(client, project, owner, reviewer, cap):
    _set_caps(project, "1000000")
    _history(project, owner, reviewer)
    dataset = make_dataset(project=project, owner=owner, rows=200)
    release = submitted(project=project, owner=owner, dataset=dataset, statistics=STATS,
                        epsilon="0.5", mechanism="gaussian", delta="0.0000001")  # fmt: skip
    _set_caps(project, cap)

    client.login(username=owner.username, password=PASSWORD)
    data = builder_data(dataset, statistics=STATS, epsilon="0.5")
    url = reverse("releases:preview", args=[project.slug])
    answer = _timed(lambda: client.post(url + "?chart=1", data, content_type="application/json"))
    assert answer.status_code == 200
    preview = answer.json()["preview"]
    spend = preview["spend"]
    assert spend is not None and spend["epsilon_cap"] == cap
    if cap == "0.01":
        assert spend["within"] is False and spend["fit"] == 0 and preview["fits"] is False
    else:
        assert spend["within"] and spend["fit_at_least"]
        assert spend["fit_text"].startswith("at least ")

    client.logout()
    client.login(username=reviewer.username, password=PASSWORD)
    request_id = release.budget_request_id
    page = _timed(lambda: client.get(reverse("review:request_detail", args=[request_id])))
    assert page.status_code == 200
    text = page.content.decode()
    if cap == "0.01":
        assert "<strong>0</strong> releases like this one fit" in text
    else:
        assert "<strong>at least " in text and "releases like this one fit" in text

    answer = _timed(
        lambda: client.post(reverse("review:request_approve", args=[request_id]), {"comment": ""})
    )
    release.refresh_from_db()
    if cap == "0.01":
        assert answer.status_code == 409 and "Budget exceeded" in answer.content.decode()
        assert release.status == Release.Status.SUBMITTED
    else:
        assert answer.status_code == 302 and release.status == Release.Status.QUEUED
        page = client.get(answer["Location"])
        assert page.status_code == 200 and "approved; its cost is reserved" in page.content.decode()


@pytest.mark.django_db(transaction=True)  # real commits, so on_commit callbacks run
def test_a_failure_after_the_approval_commits_is_not_a_500(
    client, project, owner, reviewer, monkeypatch
):
    """The dispatch (on_commit) and the review document (after the commit) both fail."""
    _set_caps(project, "10", "0.0001")
    dataset = make_dataset(project=project, owner=owner, rows=200)
    page_release = submitted(project=project, owner=owner, dataset=dataset, statistics=STATS,
                             epsilon="0.5", title="Page")  # fmt: skip
    api_release = submitted(project=project, owner=owner, dataset=dataset, statistics=STATS,
                            epsilon="0.5", title="API")  # fmt: skip

    def fail(**kwargs):
        raise RuntimeError("injected after the commit")

    monkeypatch.setattr("releases.dispatch.release_dispatch", fail)
    monkeypatch.setattr("budgets.selectors.spend.cap_check_cached", fail)

    client.login(username=reviewer.username, password=PASSWORD)
    url = reverse("review:request_approve", args=[page_release.budget_request_id])
    answer = client.post(url, {"comment": ""}, follow=True)
    assert answer.status_code == 200
    assert "approved; its cost is reserved" in answer.content.decode()
    page_release.refresh_from_db()
    assert page_release.status == Release.Status.QUEUED

    api = APIClient()
    api.force_authenticate(user=reviewer)
    answer = api.post(
        f"/api/v1/budget-requests/{api_release.budget_request_id}/approve/", {}, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "approved"
    api_release.refresh_from_db()
    assert api_release.status == Release.Status.QUEUED


def test_a_release_move_answers_its_status_when_the_detail_fails(project, owner, monkeypatch):
    """Submit commits; reading the detail afterwards fails: the answer still says submitted."""
    dataset = make_dataset(project=project, owner=owner, rows=200)
    release = draft(project=project, owner=owner, dataset=dataset, statistics=STATS, epsilon="0.5")

    def fail(moved):
        raise RuntimeError("injected after the commit")

    monkeypatch.setattr("releases.api.lifecycle.release_detail", fail)
    api = APIClient()
    api.force_authenticate(user=owner)
    answer = api.post(f"/api/v1/releases/{release.pk}/submit/", {}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"id": release.pk, "status": "submitted", "detail": None}
    release.refresh_from_db()
    assert release.status == Release.Status.SUBMITTED
