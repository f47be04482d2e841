"""List pages answer in a constant number of queries (no N+1), for 1 item and for 50.

The count for one item is measured, then the same page with 50 items must take
exactly as many (django_assert_num_queries). Items are spread over several
projects and carry ledger entries, so a per-project or per-request budget read,
or a per-request release read, shows up as a different count.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from budgets.services import budget_request_approve, budget_request_create
from datasets.models import Column, Dataset
from releases.models import Release
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

SUMMARY = {
    "statistics": [
        {"label": "Rows", "kind": "count", "columns": [], "epsilon": "0.001", "halfwidth": 3.2},
        {"label": "By region", "kind": "histogram", "columns": ["region"], "epsilon": "0.001",
         "halfwidth": 3.2, "halfwidth_simultaneous": 5.5},
    ]
}  # fmt: skip


def _projects(owner, reviewer, n: int) -> list:
    out = []
    for _ in range(n):
        project = ProjectFactory(created_by=owner, epsilon_cap=Decimal(100))
        MembershipFactory(project=project, user=owner, role="owner")
        MembershipFactory(project=project, user=reviewer, role="reviewer")
        out.append(project)
    return out


def _dataset(project, owner) -> Dataset:
    return Dataset.objects.create(
        project=project, name="survey", uploaded_by=owner, status=Dataset.Status.READY,
        declared=True,
    )  # fmt: skip


def _request(project, owner, dataset, i: int, *, status: str = "submitted") -> Release:
    request = budget_request_create(
        project=project, title=f"Release {i}", epsilon="0.001", delta="0", summary=SUMMARY,
        spec_hash="e" * 64, requested_by=owner,
    )  # fmt: skip
    return Release.objects.create(
        project=project, dataset=dataset, title=request.title, created_by=owner, status=status,
        epsilon=request.epsilon, delta=request.delta, budget_request=request,
    )  # fmt: skip


def _published(project, owner, dataset, i: int, reviewer) -> Release:
    release = _request(project, owner, dataset, i, status="submitted")
    budget_request_approve(budget_request_id=release.budget_request_id, reviewer=reviewer)
    release.status = Release.Status.PUBLISHED
    release.published_at = timezone.now()
    release.save(update_fields=["status", "published_at"])
    return release


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries)


def _assert_constant(client, django_assert_num_queries, url: str, grow) -> None:
    one = _queries(client, url)
    grow()
    with django_assert_num_queries(one):
        response = client.get(url)
    assert response.status_code == 200


@pytest.fixture
def people():
    owner = UserFactory(username="olga-owner")
    reviewer = UserFactory(username="rolf-reviewer")
    return owner, reviewer


@pytest.mark.parametrize("url", ["/projects/inbox/", "/api/v1/budget-requests/"])
def test_the_reviewer_inbox_and_its_api(client, django_assert_num_queries, people, url):
    owner, reviewer = people
    projects = _projects(owner, reviewer, 5)
    datasets = [_dataset(p, owner) for p in projects]
    for i, (project, dataset) in enumerate(zip(projects, datasets, strict=True)):
        _published(project, owner, dataset, 100 + i, reviewer)  # ledger entries everywhere
    _request(projects[0], owner, datasets[0], 0)
    client.login(username=reviewer.username, password=PASSWORD)

    def grow():
        for i in range(1, 50):
            _request(projects[i % 5], owner, datasets[i % 5], i)

    _assert_constant(client, django_assert_num_queries, url, grow)
    body = client.get(url).content.decode()
    assert body.count("Release 4") >= 11  # "Release 4", "Release 40".."Release 49": all listed


@pytest.mark.parametrize(
    "url", ["/projects/{slug}/", "/api/v1/projects/{slug}/releases/", "/p/{slug}/"]
)
def test_the_release_lists_of_a_project(client, django_assert_num_queries, people, url):
    owner, reviewer = people
    (project,) = _projects(owner, reviewer, 1)
    dataset = _dataset(project, owner)
    _published(project, owner, dataset, 0, reviewer)
    client.login(username=owner.username, password=PASSWORD)

    def grow():
        for i in range(1, 50):
            _published(project, owner, dataset, i, reviewer)

    _assert_constant(client, django_assert_num_queries, url.format(slug=project.slug), grow)


def test_the_builder_lists_every_dataset_with_its_columns(
    client, django_assert_num_queries, people
):
    owner, reviewer = people
    (project,) = _projects(owner, reviewer, 1)

    def dataset_with_columns(i: int) -> None:
        dataset = _dataset(project, owner)
        Column.objects.create(
            dataset=dataset, name=f"region{i}", position=0, suggested_type="string",
            kind="categorical", categories=["north", "south"],
        )  # fmt: skip
        Column.objects.create(
            dataset=dataset, name="secret", position=1, suggested_type="integer", kind="excluded"
        )

    dataset_with_columns(0)
    client.login(username=owner.username, password=PASSWORD)
    url = f"/releases/new/{project.slug}/"

    def grow():
        for i in range(1, 50):
            dataset_with_columns(i)

    _assert_constant(client, django_assert_num_queries, url, grow)
    page = client.get(url).content.decode()
    assert "region49" in page and "secret" not in page  # excluded columns stay out
