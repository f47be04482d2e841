"""The public registry JSON is cached like a release page, and never stale (issue 11.7)."""

from __future__ import annotations

import json
from decimal import Decimal
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from budgets import services as budget_services
from budgets.selectors import registry as registry_selectors
from releases import lifecycle
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _get(client, slug, **headers):
    return client.get(reverse("registry:project_json", args=[slug]), **headers)


def test_registry_json_is_built_once_then_served_from_the_cache(client, published):
    slug = published.project.slug
    first = _get(client, slug)
    assert first.status_code == 200
    with (
        mock.patch.object(
            registry_selectors, "project_registry", side_effect=AssertionError("rebuilt")
        ),
        CaptureQueriesContext(connection) as queries,
    ):
        again = _get(client, slug)
    assert again.status_code == 200
    assert json.loads(again.content) == json.loads(first.content)
    # nothing changed: the project's public token and the document come from the cache
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert again["ETag"] == first["ETag"]
    assert "public" in again["Cache-Control"]


def test_registry_json_answers_304_to_its_etag(client, published):
    slug = published.project.slug
    etag = _get(client, slug)["ETag"]
    assert _get(client, slug, HTTP_IF_NONE_MATCH=etag).status_code == 304


def test_registry_changes_at_once_with_the_ledger_and_publications(
    client, published, project, owner, reviewer
):
    slug = project.slug
    before = json.loads(_get(client, slug).content)
    etag = _get(client, slug)["ETag"]
    # a new approval reserves budget: committed and remaining change
    request = budget_services.budget_request_create(
        project=project, title="Second", epsilon=Decimal("0.1"), delta=Decimal(0),
        summary={}, spec_hash="e" * 64, requested_by=owner,
    )  # fmt: skip
    budget_services.budget_request_approve(budget_request_id=request.pk, reviewer=reviewer)
    after = _get(client, slug)
    assert after["ETag"] != etag
    assert json.loads(after.content)["committed"] != before["committed"]
    # a publication adds a release to the document
    second = build_release(
        project=project, owner=owner, reviewer=reviewer, title="Third", publish=False
    )
    count = len(json.loads(_get(client, slug).content)["releases"])
    lifecycle.release_publish(release=second, actor=owner)
    assert len(json.loads(_get(client, slug).content)["releases"]) == count + 1
    # the page and the API show the same, current document
    page = client.get(reverse("registry:project", args=[slug])).content.decode()
    assert "Third" in page
    api = client.get(reverse("api:public-registry", args=[slug]))
    assert json.loads(api.content) == json.loads(_get(client, slug).content)


def test_registry_version_changes_with_the_day(published):
    from datetime import timedelta

    from django.utils import timezone

    slug = published.project.slug
    today = registry_selectors._cached_version(slug=slug, token="t")
    tomorrow = registry_selectors._cached_version(
        slug=slug, token="t", now=timezone.now() + timedelta(days=1)
    )
    assert today != tomorrow
    assert today == registry_selectors._cached_version(slug=slug, token="t")
