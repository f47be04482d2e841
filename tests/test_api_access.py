"""The REST API's contract: auth, object permissions, the error shape, 409s, 413, 429, docs."""

from __future__ import annotations

import re

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from budgets.models import BudgetRequest, LedgerEntry, Project
from datasets.models import Dataset
from releases.models import Release
from tests.factories import PASSWORD, UserFactory
from tests.public_builders import build_release
from tests.releases_support import draft, make_dataset, submitted

V1 = "/api/v1"


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def error_of(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    return body["error"]


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=300)


# --- authentication ----------------------------------------------------------------------


def test_token_obtained_with_password_authenticates(db, owner):
    response = APIClient().post(
        f"{V1}/auth/token/", {"username": owner.username, "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=owner).key == token
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(f"{V1}/projects/").status_code == 200


def test_wrong_password_gets_401_and_no_token(db, owner):
    response = APIClient().post(
        f"{V1}/auth/token/", {"username": owner.username, "password": "nope"}, format="json"
    )
    error = error_of(response, 401)
    assert error["code"] == "not_authenticated"
    assert not Token.objects.filter(user=owner).exists()


def test_anonymous_member_endpoint_is_401_with_challenge(db):
    response = APIClient().get(f"{V1}/projects/")
    error_of(response, 401)
    assert response["WWW-Authenticate"].startswith("Token")


def test_malformed_token_and_session_cookie_are_refused_cleanly(db, project):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token abc\x00def")
    error_of(client.get(f"{V1}/projects/"), 401)
    anonymous = APIClient()
    anonymous.cookies["sessionid"] = "bad\x00key"
    error_of(anonymous.get(f"{V1}/projects/"), 401)


def test_session_login_works_too(db, owner, project):
    client = APIClient()
    client.force_login(owner)
    response = client.get(f"{V1}/projects/{project.slug}/")
    assert response.status_code == 200
    assert response.json()["roles"] == ["owner"]


# --- object permissions ---------------------------------------------------------------------


def test_non_member_gets_404_everywhere(db, project, owner, dataset):
    stranger = UserFactory(username="sam-stranger")
    release = draft(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    client = client_for(stranger)
    for url in (
        f"/projects/{project.slug}/",
        f"/projects/{project.slug}/ledger/",
        f"/projects/{project.slug}/datasets/",
        f"/datasets/{dataset.pk}/",
        f"/datasets/{dataset.pk}/profile/",
        f"/releases/{release.pk}/",
        f"/releases/{release.pk}/results/",
    ):
        assert error_of(client.get(V1 + url), 404)["code"] == "not_found", url
    error_of(client.post(f"{V1}/releases/{release.pk}/submit/"), 404)
    assert Release.objects.get(pk=release.pk).status == "draft"


def test_member_lacking_the_role_gets_403(db, project, reviewer, dataset):
    client = client_for(reviewer)
    error_of(client.get(f"{V1}/datasets/{dataset.pk}/profile/"), 403)
    assert client.get(f"{V1}/datasets/{dataset.pk}/").status_code == 200  # public domains: fine
    body = {"dataset": dataset.pk, "epsilon": "0.2", "statistics": [{"kind": "count"}]}
    error_of(client.post(f"{V1}/projects/{project.slug}/releases/create/", body, "json"), 403)
    assert not Release.objects.exists()


def test_reviewer_sees_declared_domains_never_the_profile(db, project, reviewer, dataset):
    body = client_for(reviewer).get(f"{V1}/datasets/{dataset.pk}/").json()
    assert "profile" not in str(body)
    assert {c["name"] for c in body["columns"]} == {"person", "region", "age", "income", "secret"}


# --- validation and state conflicts ------------------------------------------------------------


def test_bad_project_input_is_400_and_creates_nothing(db, owner):
    before = Project.objects.count()
    response = client_for(owner).post(
        f"{V1}/projects/", {"name": "Census", "epsilon_cap": "lots"}, format="json"
    )
    error = error_of(response, 400)
    assert "epsilon cap must be a number" in error["message"]
    response = client_for(owner).post(f"{V1}/projects/", {"epsilon_cap": "1"}, format="json")
    assert "name" in error_of(response, 400)["details"]["fields"]
    assert Project.objects.count() == before


def test_bad_declaration_names_the_column_and_saves_nothing(db, project, owner, dataset):
    response = client_for(owner).post(
        f"{V1}/datasets/{dataset.pk}/declare/",
        {"columns": {"age": {"kind": "numeric", "lower": "10", "upper": "5"}}},
        format="json",
    )
    error = error_of(response, 400)
    assert "nothing was saved" in error["message"]
    assert "the lower bound must be below the upper bound." in error["details"]["errors"]["age"]
    age = dataset.columns.get(name="age")
    assert (age.lower, age.upper) == (0, 100)


def test_approving_twice_is_409_and_reserves_once(db, project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    client = client_for(reviewer)
    url = f"{V1}/budget-requests/{release.budget_request_id}/approve/"
    first = client.post(url, {"comment": "fine"}, format="json")
    assert first.status_code == 200, first.content
    assert first.json()["status"] == "approved"
    assert Release.objects.get(pk=release.pk).status == "queued"
    error = error_of(client.post(url, {"comment": "again"}, format="json"), 409)
    assert error["code"] == "conflict"
    again = client.post(f"{V1}/releases/{release.pk}/approve/", {}, format="json")
    error_of(again, 409)
    assert LedgerEntry.objects.filter(request_id=release.budget_request_id).count() == 1
    assert BudgetRequest.objects.get(pk=release.budget_request_id).comment == "fine"


def test_owner_cannot_approve_and_requester_cannot_self_approve(db, project, owner, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    url = f"{V1}/budget-requests/{release.budget_request_id}/approve/"
    error_of(client_for(owner).post(url, {}, format="json"), 403)
    # the owner also made a reviewer: still may not approve their own request
    from budgets.services import membership_add

    membership_add(project=project, user=owner, role="reviewer")
    assert error_of(client_for(owner).post(url, {}, format="json"), 403)["code"] == "self_approval"
    assert BudgetRequest.objects.get(pk=release.budget_request_id).status == "pending"


def test_reject_needs_a_comment(db, project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    url = f"{V1}/budget-requests/{release.budget_request_id}/reject/"
    error_of(client_for(reviewer).post(url, {"comment": ""}, format="json"), 400)
    response = client_for(reviewer).post(url, {"comment": "too costly"}, format="json")
    assert response.json()["status"] == "rejected"
    assert Release.objects.get(pk=release.pk).status == "rejected"


def test_publishing_an_unfinished_release_is_409(db, project, owner, dataset):
    release = draft(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    error = error_of(client_for(owner).post(f"{V1}/releases/{release.pk}/publish/"), 409)
    assert "computed" in error["message"]
    error_of(client_for(owner).get(f"{V1}/releases/{release.pk}/results/"), 409)
    assert Release.objects.get(pk=release.pk).status == "draft"


def test_editing_a_submitted_release_is_409(db, project, owner, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    body = {"dataset": dataset.pk, "epsilon": "0.1", "statistics": [{"kind": "count"}]}
    error_of(client_for(owner).put(f"{V1}/releases/{release.pk}/update/", body, "json"), 409)
    assert Release.objects.get(pk=release.pk).statistics.count() == 7


def test_upload_too_large_is_413_and_stores_nothing(db, project, owner, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 100
    from django.core.files.uploadedfile import SimpleUploadedFile

    csv = SimpleUploadedFile("big.csv", b"a,b\n" + b"1,2\n" * 100_000, "text/csv")
    response = client_for(owner).post(
        f"{V1}/projects/{project.slug}/datasets/upload/", {"file": csv}, format="multipart"
    )
    assert error_of(response, 413)["code"] == "too_large"
    assert not Dataset.objects.exists()


def test_lists_paginate(db, project, owner):
    for i in range(3):
        UserFactory(username=f"member-{i}")
        client_for(owner).post(
            f"{V1}/projects/{project.slug}/members/add/",
            {"username": f"member-{i}", "role": "reviewer"},
            format="json",
        )
    page = client_for(owner).get(f"{V1}/projects/{project.slug}/members/?page_size=2").json()
    assert page["count"] == 5 and len(page["results"]) == 2 and page["next"]
    error_of(client_for(owner).get(f"{V1}/projects/{project.slug}/members/?page=99"), 404)


# --- public, throttled --------------------------------------------------------------------


def test_public_release_reads_and_unpublished_is_404(db, project, owner, reviewer):
    published = build_release(project=project, owner=owner, reviewer=reviewer)
    hidden = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    client = APIClient()
    base = f"{V1}/public/projects/{project.slug}/releases"
    body = client.get(f"{base}/{published.pk}/?confidence=0.9").json()
    assert body["confidence"] == "0.9"
    assert len(body["statistics"]) == 6
    error_of(client.get(f"{base}/{hidden.pk}/"), 404)
    error_of(client.get(f"{base}/{published.pk}/?confidence=0.5"), 400)
    listing = client.get(f"{base}/").json()
    assert [r["id"] for r in listing["results"]] == [published.pk]
    registry = client.get(f"{V1}/public/projects/{project.slug}/registry/").json()
    assert [r["id"] for r in registry["releases"]] == [published.pk]


def test_anonymous_public_endpoints_are_throttled_with_429(db, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "2/minute"},
    }
    client = APIClient()
    assert client.get(f"{V1}/public/projects/").status_code == 200
    assert client.get(f"{V1}/public/projects/").status_code == 200
    response = client.get(f"{V1}/public/projects/")
    error = error_of(response, 429)
    assert error["code"] == "throttled"
    assert int(response["Retry-After"]) > 0


# --- schema and docs ------------------------------------------------------------------------


def test_schema_and_docs_are_served_without_a_cdn(db):
    client = APIClient()
    schema = client.get("/api/schema/?format=json").json()
    assert schema["openapi"].startswith("3.")
    approve = schema["paths"]["/api/v1/budget-requests/{budget_request_id}/approve/"]["post"]
    assert {"200", "400", "401", "403", "404", "409"} <= set(approve["responses"])
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    asset = re.search(r'"(/static/drf_spectacular_sidecar/swagger-ui-dist/[^"]+\.js)"', html)
    assert asset, "Swagger UI's script is not referenced from our static files"
    from django.contrib.staticfiles import finders

    assert finders.find(asset.group(1).removeprefix("/static/"))


@pytest.mark.parametrize("body", [b"[" * 50_000, b'{"a":' * 50_000])
def test_json_nested_too_deeply_is_400_and_creates_nothing(db, project, owner, body):
    projects = Project.objects.count()
    for url in ["/api/v1/projects/", f"/api/v1/projects/{project.slug}/releases/preview/"]:
        response = client_for(owner).post(url, data=body, content_type="application/json")
        error = error_of(response, 400)
        assert "nested too deeply" in error["message"]
    assert Project.objects.count() == projects
