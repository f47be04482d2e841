"""The API's registry document: valid against the repository's JSON Schema, documented by it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from budgets.selectors import project_registry
from budgets.services import (
    budget_charge,
    budget_request_approve,
    budget_request_create,
    project_create,
)

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "budgets/schemas/registry.schema.json").read_text()
)


def publish(*, project, owner, reviewer, epsilon, delta, mechanism):
    """One published release whose cost is charged to `project`."""
    from datasets.models import Dataset
    from releases.models import Release

    dataset = Dataset.objects.create(project=project, name="d.csv", uploaded_by=owner)
    req = budget_request_create(
        project=project, title="Counts", epsilon=epsilon, delta=delta, summary={},
        spec_hash="e" * 64, requested_by=owner,
    )  # fmt: skip
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    budget_charge(budget_request=req)
    now = timezone.now()
    Release.objects.create(
        project=project, dataset=dataset, title="Counts", created_by=owner, status="published",
        epsilon=epsilon, delta=delta, budget_request=req, mechanism=mechanism, computed_at=now,
        published_at=now,
    )  # fmt: skip


def get_registry(slug):
    response = APIClient().get(f"/api/v1/public/projects/{slug}/registry/")
    assert response.status_code == 200, response.content
    return response.json()


def test_api_registry_validates_against_the_repository_schema(owner, reviewer):
    from budgets.models import Membership

    project = project_create(
        name="Gauss", description="", privacy_unit_description="a person",
        epsilon_cap="2", delta_cap="0.0001", created_by=owner,
    )  # fmt: skip
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    publish(project=project, owner=owner, reviewer=reviewer, epsilon="1", delta="0.00001",
            mechanism="gaussian")  # fmt: skip
    doc = get_registry(project.slug)
    jsonschema.validate(doc, SCHEMA, format_checker=jsonschema.FormatChecker())
    assert doc == {**project_registry(project=project), "generated_at": doc["generated_at"]}
    # Group privacy, from dpportal.privacy.accounting: g*eps and g*e^((g-1)eps)*delta.
    group = {row["group_size"]: row for row in doc["group_privacy"]["table"]}
    assert group[2]["spent"]["epsilon"] == "2"
    assert math.isclose(float(group[2]["spent"]["delta"]), 2 * math.e * 1e-5, rel_tol=1e-12)
    assert group[1]["spent"] == {"epsilon": "1", "delta": "0.00001"}
    assert group[10]["cap"]["delta"] == "1"  # 10 * e^18 * 1e-4 is past the cap of 1


def test_registry_with_a_huge_cap_and_nothing_spent_is_valid(owner):
    # exp((g-1) * eps) overflows a float here; the bound is then its cap of 1.
    project = project_create(
        name="Huge", description="", privacy_unit_description="", epsilon_cap="1000",
        delta_cap="0.000001", created_by=owner,
    )  # fmt: skip
    doc = get_registry(project.slug)
    jsonschema.validate(doc, SCHEMA, format_checker=jsonschema.FormatChecker())
    group = {row["group_size"]: row for row in doc["group_privacy"]["table"]}
    assert group[1]["spent"] == {"epsilon": "0", "delta": "0"}
    assert group[1]["cap"] == {"epsilon": "1000", "delta": "0.000001"}
    assert group[5]["cap"] == {"epsilon": "5000", "delta": "1"}


def test_registry_names_only_datasets_a_published_release_used(owner, reviewer):
    """A declared dataset no release published stays out of the public registry: its name
    is the owner's to reveal by publishing."""
    from budgets.models import Membership
    from tests.releases_support import make_dataset

    project = project_create(
        name="Quiet", description="", privacy_unit_description="", epsilon_cap="2",
        delta_cap="0.0001", created_by=owner,
    )  # fmt: skip
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    make_dataset(project=project, owner=owner, rows=50, name="unpublished-survey")
    assert get_registry(project.slug)["privacy_unit"]["datasets"] == []
    publish(project=project, owner=owner, reviewer=reviewer, epsilon="1", delta="0",
            mechanism="laplace")  # fmt: skip
    datasets = get_registry(project.slug)["privacy_unit"]["datasets"]
    assert [d["name"] for d in datasets] == ["d.csv"]


def _shape(node):
    """The names, required lists and enums of a schema, recursively ($defs already inlined)."""
    if isinstance(node, dict):
        keep = ("properties", "items", "required", "enum", "additionalProperties", "pattern")
        return {k: _shape(v) for k, v in node.items() if k in keep}
    return node


def _inline(node, defs):
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].removeprefix("#/$defs/")], defs)
        if "const" in node:
            node = {**node, "enum": [node["const"]]}
        if "oneOf" in node:
            (other,) = [o for o in node["oneOf"] if o != {"type": "null"}]
            node = {**{k: v for k, v in node.items() if k != "oneOf"}, **other}
            return _inline(node, defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def test_openapi_documents_the_registry_with_the_repository_schema(db):
    schema = APIClient().get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    operation = schema["paths"]["/api/v1/public/projects/{slug}/registry/"]["get"]
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    documented = components[ref.rsplit("/", 1)[1]]

    def resolve(node):
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(components[node["$ref"].rsplit("/", 1)[1]])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    expected = _inline(SCHEMA, SCHEMA["$defs"])
    assert _shape(resolve(documented)) == _shape(expected)
    nullable = documented["properties"]["burn_rate"]["properties"]["first_approved_at"]
    assert nullable["nullable"] is True and nullable["format"] == "date"
    assert resolve(documented)["properties"]["version"]["enum"] == [4]
