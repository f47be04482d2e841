"""Public pages answered from the cache without a query, and never stale.

The registry JSON and a published release's page, data.json and record.json are
cached under the project's public token (budgets.public_version): once cached, a
request makes no SQL query at all, and answers 304 to its ETag. Every change that
alters what they show renews the token: approvals, rejections, charges, refunds,
withdrawals, publications, the caps, the project's texts (admin) and its datasets'.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.admin.sites import AdminSite
from django.core.cache import cache
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from budgets import public_version
from budgets import services as budget_services
from budgets.admin import ProjectAdmin
from budgets.models import BudgetRequest, Project
from datasets.services.texts import dataset_texts_update
from releases import lifecycle
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _registry(client, slug, **headers):
    return client.get(reverse("registry:project_json", args=[slug]), **headers)


def _page(client, release, name="public:release", **headers):
    return client.get(reverse(name, args=[release.project.slug, release.pk]), **headers)


def _document(client, slug) -> dict:
    return json.loads(_registry(client, slug).content)


def _request(project, owner, *, epsilon="0.1", title="Another") -> BudgetRequest:
    return budget_services.budget_request_create(
        project=project, title=title, epsilon=Decimal(epsilon), delta=Decimal(0),
        summary={}, spec_hash="e" * 64, requested_by=owner,
    )  # fmt: skip


# --- no query when nothing changed ---------------------------------------------------


def test_registry_json_after_the_first_request_makes_no_query(client, published):
    slug = published.project.slug
    first = _registry(client, slug)
    assert first.status_code == 200
    with CaptureQueriesContext(connection) as queries:
        again = _registry(client, slug)
        unchanged = _registry(client, slug, HTTP_IF_NONE_MATCH=first["ETag"])
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert again.content == first.content
    assert again["ETag"] == first["ETag"]
    assert unchanged.status_code == 304
    assert json.loads(first.content) == json.loads(
        client.get(reverse("api:public-registry", args=[slug])).content
    )


@pytest.mark.parametrize("name", ["public:release", "public:release-json", "public:release-record"])
def test_release_page_and_downloads_after_the_first_request_make_no_query(client, published, name):
    first = _page(client, published, name)
    assert first.status_code == 200
    first_body = b"".join(first) if first.streaming else first.content
    with CaptureQueriesContext(connection) as queries:
        again = _page(client, published, name)
        body = b"".join(again) if again.streaming else again.content
        unchanged = _page(client, published, name, HTTP_IF_NONE_MATCH=first["ETag"])
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert body == first_body
    assert unchanged.status_code == 304


def test_an_unknown_project_is_404_and_leaves_no_token(client):
    assert _registry(client, "no-such-project").status_code == 404
    assert public_version.project_public_version_peek(slug="no-such-project") is None


# --- every change shows at once -------------------------------------------------------


def _changes(client, slug, change) -> tuple[dict, dict]:
    """The registry before and after `change`, each request cached first."""
    etag = _registry(client, slug)["ETag"]
    before = _document(client, slug)
    change()
    after_response = _registry(client, slug, HTTP_IF_NONE_MATCH=etag)
    assert after_response.status_code == 200, "a change answered 304"
    assert after_response["ETag"] != etag
    return before, json.loads(after_response.content)


def test_approve_reject_withdraw_charge_and_refund_each_show_at_once(
    client, published, project, owner, reviewer
):
    slug = project.slug
    first = _request(project, owner, title="First")
    before, after = _changes(
        client,
        slug,
        lambda: budget_services.budget_request_approve(
            budget_request_id=first.pk, reviewer=reviewer
        ),
    )
    assert after["committed"] != before["committed"]

    before, after = _changes(
        client, slug, lambda: budget_services.budget_charge(budget_request=first)
    )
    assert after["spend"] != before["spend"] or after["spent"] != before["spent"]

    second = _request(project, owner, title="Second")
    budget_services.budget_request_approve(budget_request_id=second.pk, reviewer=reviewer)
    before, after = _changes(
        client, slug, lambda: budget_services.budget_release(budget_request=second)
    )
    assert after["committed"] != before["committed"]

    third = _request(project, owner, title="Third")
    _changes(
        client,
        slug,
        lambda: budget_services.budget_request_reject(
            budget_request_id=third.pk, reviewer=reviewer, comment="No."
        ),
    )
    fourth = _request(project, owner, title="Fourth")
    budget_services.budget_request_approve(budget_request_id=fourth.pk, reviewer=reviewer)
    before, after = _changes(
        client,
        slug,
        lambda: budget_services.budget_request_withdraw(budget_request_id=fourth.pk, actor=owner),
    )
    assert after["committed"] != before["committed"]


def test_a_publication_shows_at_once_on_the_registry_and_the_pages(
    client, published, project, owner, reviewer
):
    slug = project.slug
    second = build_release(
        project=project, owner=owner, reviewer=reviewer, title="Later", publish=False
    )
    page_etag = _page(client, published)["ETag"]
    count = len(_document(client, slug)["releases"])
    before, after = _changes(
        client, slug, lambda: lifecycle.release_publish(release=second, actor=owner)
    )
    assert len(after["releases"]) == count + 1
    assert _page(client, second).status_code == 200
    # the project's other pages are made again (they show its figures)
    assert _page(client, published, HTTP_IF_NONE_MATCH=page_etag).status_code == 200
    dashboard = client.get(reverse("public:project", args=[slug])).content.decode()
    assert "Later" in dashboard


def test_a_cap_change_shows_at_once_on_the_registry_and_the_release_page(
    client, published, project, owner
):
    slug = project.slug
    page_etag = _page(client, published)["ETag"]
    record_etag = _page(client, published, "public:release-record")["ETag"]
    new_cap = str(Decimal(project.epsilon_cap) - Decimal("0.001"))
    before, after = _changes(
        client,
        slug,
        lambda: budget_services.project_caps_update(
            project=project, actor=owner, epsilon_cap=new_cap, delta_cap=project.delta_cap
        ),
    )
    assert after["caps"] != before["caps"]
    assert _page(client, published, HTTP_IF_NONE_MATCH=page_etag).status_code == 200
    assert (
        _page(
            client, published, "public:release-record", HTTP_IF_NONE_MATCH=record_etag
        ).status_code
        == 200
    )


def test_a_project_edited_in_the_admin_shows_at_once(client, published, project, admin_user):
    slug = project.slug
    _page(client, published)
    _registry(client, slug)
    project.name = "Renamed by the admin"
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    ProjectAdmin(Project, AdminSite()).save_model(request, project, form=None, change=True)
    assert _document(client, slug)["project"]["name"] == "Renamed by the admin"
    assert "Renamed by the admin" in _page(client, published).content.decode()


def test_a_dataset_renamed_shows_at_once_on_the_registry(client, published, owner):
    slug = published.project.slug
    dataset = published.dataset
    before, after = _changes(
        client,
        slug,
        lambda: dataset_texts_update(dataset=dataset, actor=owner, name="Renamed survey"),
    )
    assert [d["name"] for d in after["privacy_unit"]["datasets"]] == ["Renamed survey"]


def test_a_lost_token_is_made_again_and_the_document_read_afresh(client, published, project):
    """A cache that lost the token (evicted, or down when a change renewed it) answers
    from the database on the next request: no document outlives its token."""
    slug = project.slug
    _registry(client, slug)
    Project.objects.filter(pk=project.pk).update(name="Changed behind the cache")
    cache.delete(public_version.public_version_key(slug=slug))
    assert _document(client, slug)["project"]["name"] == "Changed behind the cache"


def test_the_token_is_renewed_again_when_the_transaction_commits(
    project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        public_version.project_public_changed(slug=project.slug)
        during = public_version.project_public_version_peek(slug=project.slug)
        assert during is not None
    assert public_version.project_public_version_peek(slug=project.slug) not in (None, during)


def test_local_copies_keep_the_most_recent_within_their_bounds():
    copies = public_version.LocalCopies(max_entries=2, max_bytes=800)
    copies.put("a", 1, size=10)
    copies.put("b", 2, size=10)
    assert copies.get("a") == 1  # now the most recent
    copies.put("c", 3, size=10)
    assert (copies.get("a"), copies.get("b"), copies.get("c")) == (1, None, 3)
    copies.put("big", 4, size=101)  # over an eighth of the bytes allowed: not kept
    assert copies.get("big") is None


def test_local_copies_replace_a_value_and_its_bytes():
    copies = public_version.LocalCopies(max_entries=4, max_bytes=800)
    copies.put("a", 1, size=60)
    copies.put("a", 2, size=90)  # replaces: the old bytes are no longer counted
    assert copies.get("a") == 2
    copies.put("b", 3, size=90)
    copies.put("c", 4, size=90)
    assert (copies.get("a"), copies.get("b"), copies.get("c")) == (2, 3, 4)
    copies.put("a", 5, size=101)  # too large now: the stale copy is not kept either
    assert copies.get("a") is None
    copies.clear()
    assert copies.get("b") is None
