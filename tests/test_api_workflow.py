"""The whole workflow through the REST API alone, with a REAL Celery worker on PostgreSQL/Redis.

Owner (token): create a project, add a reviewer, upload a CSV, wait for the
ingest, read the private profile, declare the public domains, preview, create a
draft, submit. Reviewer (token): find the request, approve it (twice: 409, one
reservation). Worker: computes. Owner: reads the results, publishes. Anonymous:
reads the published release and the registry.
"""

from __future__ import annotations

import io
import random

import pytest
from rest_framework.test import APIClient

from budgets.models import LedgerEntry
from tests.conftest import wait_for
from tests.factories import PASSWORD

pytestmark = pytest.mark.worker

V1 = "/api/v1"
REGIONS = ["north", "south", "east", "west"]


def csv_bytes(rows: int = 3000) -> bytes:
    gen = random.Random(11)  # test DATA, not noise
    lines = ["region,age,income"]
    for _ in range(rows):
        lines.append(f"{gen.choice(REGIONS)},{gen.randint(0, 99)},{gen.uniform(0, 90000):.2f}")
    return ("\n".join(lines) + "\n").encode()


def token_client(username: str) -> APIClient:
    response = APIClient().post(
        f"{V1}/auth/token/", {"username": username, "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200, response.content
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    return client


def ok(response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:800])
    return response.json() if response.content else {}


def test_whole_workflow_through_the_api(celery_worker, owner, reviewer):
    alice = token_client(owner.username)
    project = ok(
        alice.post(
            f"{V1}/projects/",
            {
                "name": "Household survey",
                "description": "Regional statistics.",
                "privacy_unit_description": "One respondent.",
                "epsilon_cap": "2",
                "delta_cap": "0.00001",
            },
            format="json",
        ),
        201,
    )
    slug = project["slug"]
    assert project["roles"] == ["owner"] and project["budget"]["epsilon_remaining"] == "2"
    ok(
        alice.post(
            f"{V1}/projects/{slug}/members/add/",
            {"username": reviewer.username, "role": "reviewer"},
            format="json",
        ),
        201,
    )

    upload = io.BytesIO(csv_bytes())
    upload.name = "survey.csv"
    dataset = ok(
        alice.post(
            f"{V1}/projects/{slug}/datasets/upload/",
            {"file": upload, "name": "Survey"},
            format="multipart",
        ),
        201,
    )
    dataset_id = dataset["id"]
    wait_for(
        lambda: alice.get(f"{V1}/datasets/{dataset_id}/status/").json()["status"]
        in ("ready", "failed"),
        timeout=60,
        message=f"ingest did not finish; worker log:\n{celery_worker.log()}",
    )
    assert ok(alice.get(f"{V1}/datasets/{dataset_id}/status/"))["status"] == "ready"
    profile = ok(alice.get(f"{V1}/datasets/{dataset_id}/profile/"))
    assert [c["name"] for c in profile["columns"]] == ["region", "age", "income"]

    declared = ok(
        alice.post(
            f"{V1}/datasets/{dataset_id}/declare/",
            {
                "columns": {
                    "region": {"kind": "categorical", "categories": REGIONS},
                    "age": {
                        "kind": "numeric",
                        "lower": "0",
                        "upper": "100",
                        "bin_edges": ["0", "18", "65", "100"],
                    },
                    "income": {"kind": "numeric", "lower": "0", "upper": "100000"},
                },
                "privacy_unit": "row",  # the explicit choice confirms the unit
            },
            format="json",
        )
    )
    assert declared["usable"] is True and declared["unit_confirmed"] is True

    definition = {
        "title": "Survey 2026",
        "dataset": dataset_id,
        "mechanism": "laplace",
        "confidence": "0.95",
        "epsilon": "0.9",
        "statistics": [
            {"kind": "count"},
            {"kind": "histogram", "column": "region"},
            {"kind": "mean", "column": "income", "n_guess": 3000},
        ],
    }
    preview = ok(alice.post(f"{V1}/projects/{slug}/releases/preview/", definition, format="json"))
    assert preview["cost"]["epsilon"] == "0.9" and preview["fits"] is True
    assert preview["statistics"][1]["cells"] == 5  # four regions and "other"
    release = ok(
        alice.post(f"{V1}/projects/{slug}/releases/create/", definition, format="json"), 201
    )
    release_id = release["id"]
    submitted = ok(alice.post(f"{V1}/releases/{release_id}/submit/"))
    assert submitted["status"] == "submitted" and submitted["budget_request"]

    bob = token_client(reviewer.username)
    inbox = ok(bob.get(f"{V1}/budget-requests/"))
    assert [r["release"] for r in inbox["results"]] == [release_id]
    request_id = inbox["results"][0]["id"]
    approved = ok(
        bob.post(f"{V1}/budget-requests/{request_id}/approve/", {"comment": "ok"}, format="json")
    )
    assert approved["status"] == "approved"
    again = bob.post(f"{V1}/budget-requests/{request_id}/approve/", {}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"

    wait_for(
        lambda: alice.get(f"{V1}/releases/{release_id}/status/").json()["status"]
        in ("computed", "failed"),
        timeout=90,
        message=f"not computed; worker log:\n{celery_worker.log()}",
    )
    status = ok(alice.get(f"{V1}/releases/{release_id}/status/"))
    assert status["status"] == "computed" and status["has_results"] and status["progress"] == 1
    kinds = list(LedgerEntry.objects.filter(request_id=request_id).values_list("kind", flat=True))
    assert sorted(kinds) == ["charge", "reserve"]

    results = ok(bob.get(f"{V1}/releases/{release_id}/results/?confidence=0.99"))
    assert [s["kind"] for s in results["statistics"]] == ["count", "histogram", "mean"]
    assert [c["cell"] for c in results["statistics"][1]["cells"]][:4] == REGIONS

    anonymous = APIClient()
    public_url = f"{V1}/public/projects/{slug}/releases/{release_id}/"
    assert anonymous.get(public_url).status_code == 404  # not yet published
    assert bob.post(f"{V1}/releases/{release_id}/publish/").status_code == 403  # owners only
    assert ok(alice.post(f"{V1}/releases/{release_id}/publish/"))["status"] == "published"
    public = ok(anonymous.get(public_url))
    assert public["release"]["id"] == release_id
    assert (
        public["statistics"][0]["cells"][0]["value"]
        == results["statistics"][0]["cells"][0]["value"]
    )  # drawn once: the public sees the very numbers the members saw
    registry = ok(anonymous.get(f"{V1}/public/projects/{slug}/registry/"))
    assert registry["spent"]["epsilon"] == "0.9"
    assert [r["id"] for r in registry["releases"]] == [release_id]
    ledger = ok(alice.get(f"{V1}/projects/{slug}/ledger/"))
    assert [e["kind"] for e in ledger["results"]] == ["reserve", "charge"]
