"""A project's entry for the OpenDP Deployments Registry: valid, the registry's totals, public
like the registry, and every field of the registry's schema mapped to a source or named as
having none."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from budgets.models import Project
from budgets.selectors.deployment_entry import (
    FIELD_SOURCES,
    NO_COUNTERPART,
    NOT_IN_REGISTRY,
    deployment_entry,
)
from budgets.services import budget_charge, budget_request_approve, budget_request_create
from dpportal.product import product_version

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parent.parent / "budgets/schemas/deployments-registry.schema.json"
    ).read_text()
)


def validate(entry: dict) -> None:
    """As the registry checks its entries: draft 7 with its format checker."""
    validator = jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(entry)]
    assert not errors, errors


def schema_fields(node: dict, path: str = "") -> list[str]:
    """Every field of the schema, by its path ("deployment/basic/name"), leaves only."""
    if "properties" not in node:
        return [path]
    return [
        field
        for name, child in node["properties"].items()
        for field in schema_fields(child, f"{path}/{name}" if path else name)
    ]


def unmapped(schema: dict) -> set[str]:
    return set(schema_fields(schema)) - set(FIELD_SOURCES)


def test_every_field_of_the_schema_has_a_source_or_is_named_as_having_none():
    fields = schema_fields(SCHEMA)
    assert len(fields) == 37
    assert not unmapped(SCHEMA), "fields of the schema with no line in FIELD_SOURCES"
    assert not set(FIELD_SOURCES) - set(fields), "FIELD_SOURCES names fields the schema lacks"
    assert NO_COUNTERPART <= set(fields)
    assert all(FIELD_SOURCES[f].startswith("no counterpart") for f in NO_COUNTERPART)
    assert NOT_IN_REGISTRY and all(NOT_IN_REGISTRY.values())
    # a field the registry adds tomorrow is caught
    grown = json.loads(json.dumps(SCHEMA))
    grown["properties"]["deployment"]["properties"]["basic"]["properties"]["funding"] = {
        "type": "string"
    }
    assert unmapped(grown) == {"deployment/basic/funding"}


def test_the_demo_entry_is_valid_and_states_the_registry_totals(client):
    call_command("seed_demo", stdout=StringIO())
    project = Project.objects.get()
    registry = client.get(reverse("registry:project_json", args=[project.slug])).json()
    url = reverse("registry:project_deployment", args=[project.slug])
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["Access-Control-Allow-Origin"] == "*"
    entry = response.json()
    validate(entry)
    assert entry["status"] == "Draft" and entry["tier"] == 3
    assert entry["url_slug"] == project.slug

    basic = entry["deployment"]["basic"]
    assert basic["name"] == registry["project"]["name"]
    assert basic["intended_use"] == registry["data_use"]
    assert basic["publication_date"] == registry["releases"][0]["published_at"]
    assert registry["releases"][0]["title"] in basic["description"]

    spend = registry["spend"]
    loss = entry["deployment"]["privacy_loss"]
    parameters = loss["privacy_parameters"]
    # the registry's spent epsilon, to the digit (a JSON number there, the same decimal)
    assert repr(parameters["epsilon"]) == spend["spent_epsilon"]
    delta_stated = Decimal(spend["delta"]) != 0
    assert parameters.get("delta") == (spend["delta"] if delta_stated else None)
    assert entry["deployment"]["dp_variant"]["variant_name"] == (
        "Approximate DP" if delta_stated else "Pure DP"
    )
    details = loss["privacy_parameters_details"]
    assert f"epsilon = {spend['spent_epsilon']} at delta = {spend['delta']}" in details
    basic_sum = f"epsilon = {registry['spent']['epsilon']}, delta = {registry['spent']['delta']}"
    assert basic_sum in details
    assert loss["privacy_unit"] == registry["privacy_unit"]["description"]

    implementation = entry["deployment"]["implementation"]["mechanisms"]
    assert f"dpportal {product_version()}" in implementation
    (published,) = registry["releases"]
    for record in published["mechanisms"]:
        assert f"{record['count']} × " in implementation
        for name in ("scale", "sigma", "sensitivity"):
            if name in record:
                assert f"{name} {record[name]}" in implementation
    composition = entry["deployment"]["accounting"]["composition"]
    assert registry["tight_accounting"]["accountant"]["version"] in composition
    sources = entry["deployment"]["administrative"]["sources"]
    assert f"http://testserver/p/{project.slug}/releases/{published['id']}/" in sources
    assert entry == deployment_entry(project=project, site_url="http://testserver")

    # the registry page links it, with the label a person reads
    page = client.get(reverse("registry:project", args=[project.slug])).content.decode()
    assert f'href="{url}"' in page
    assert "Entry for the OpenDP Deployments Registry (JSON)" in page
    # revalidation as the registry's JSON
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


@pytest.fixture
def computed_only(project, owner, reviewer):
    """A project whose one computed release was never published."""
    from datasets.models import Dataset
    from releases.models import Release

    dataset = Dataset.objects.create(project=project, name="survey.csv", uploaded_by=owner)
    req = budget_request_create(
        project=project, title="Unpublished canary title", epsilon="0.15", delta="0",
        summary={}, spec_hash="d" * 64, requested_by=owner,
    )  # fmt: skip
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    budget_charge(budget_request=req)
    release = Release.objects.create(
        project=project, dataset=dataset, title="Unpublished canary title", created_by=owner,
        status="computed", epsilon="0.15", delta="0", budget_request=req,
        computed_at=timezone.now(),
    )  # fmt: skip
    return release


def test_a_project_with_nothing_published_has_no_entry(client, project, computed_only):
    url = reverse("registry:project_deployment", args=[project.slug])
    response = client.get(url)
    assert response.status_code == 404
    assert "canary" not in response.content.decode()
    page = client.get(reverse("registry:project", args=[project.slug])).content.decode()
    assert url not in page
    assert "OpenDP Deployments Registry" not in page
    with pytest.raises(ValueError):
        deployment_entry(project=project)


def test_no_such_project_is_not_found_like_its_registry(client):
    assert client.get("/registry/no-such-project.json").status_code == 404
    assert client.get("/registry/no-such-project/deployment.json").status_code == 404


def test_an_unpublished_release_counts_in_the_totals_and_says_nothing_else(
    client, project, computed_only
):
    from releases.models import Release

    req = budget_request_create(
        project=project, title="Ages by region", epsilon="0.1", delta="0", summary={},
        spec_hash="e" * 64, requested_by=computed_only.created_by,
    )  # fmt: skip
    budget_request_approve(budget_request_id=req.pk, reviewer=req.project.memberships.filter(
        role="reviewer").first().user)  # fmt: skip
    budget_charge(budget_request=req)
    Release.objects.create(
        project=project, dataset=computed_only.dataset, title="Ages by region",
        created_by=computed_only.created_by, status="published", epsilon="0.1", delta="0",
        budget_request=req, computed_at=timezone.now(), published_at=timezone.now(),
    )  # fmt: skip
    response = client.get(reverse("registry:project_deployment", args=[project.slug]))
    assert response.status_code == 200
    entry = response.json()
    validate(entry)
    text = response.content.decode()
    assert "canary" not in text
    assert entry["deployment"]["deployment_model"]["release_type"] == "One release"
    details = entry["deployment"]["privacy_loss"]["privacy_parameters_details"]
    assert "Basic composition: epsilon = 0.25, delta = 0." in details
    assert "1 computed release(s) not published (epsilon 0.15, delta 0)" in details
