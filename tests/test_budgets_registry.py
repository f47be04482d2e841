"""The public epsilon registry: anonymous, schema-valid, numbers equal to the ledger."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from budgets.models import LedgerEntry
from budgets.selectors import budget_summary, project_registry
from budgets.services import (
    budget_charge,
    budget_release,
    budget_request_approve,
    budget_request_create,
)

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "budgets/schemas/registry.schema.json").read_text()
)


def validate(document):
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())


@pytest.fixture
def history(project, owner, reviewer):
    """Published, computed-unpublished, failed, reserved and pending releases."""
    from datasets.models import Dataset
    from releases.models import Release

    dataset = Dataset.objects.create(
        project=project, name="survey.csv", uploaded_by=owner, id_column="pid",
        contribution_bound=3,
    )  # fmt: skip

    def release(title, epsilon, delta, status, mechanism="laplace"):
        req = budget_request_create(
            project=project, title=title, epsilon=epsilon, delta=delta, summary={},
            spec_hash="d" * 64, requested_by=owner,
        )  # fmt: skip
        rel = Release.objects.create(
            project=project, dataset=dataset, title=title, created_by=owner, status="submitted",
            epsilon=epsilon, delta=delta, budget_request=req, mechanism=mechanism,
        )  # fmt: skip
        if status != "submitted":
            budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
        if status in ("computed", "published"):
            budget_charge(budget_request=req)
            rel.computed_at = timezone.now()
        if status == "failed":
            budget_release(budget_request=req)
        if status == "published":
            rel.published_at = timezone.now()
        rel.status = status
        rel.save()
        return rel

    return {
        "published": release("Ages by region", "0.1", "0", "published"),
        "published2": release("Incomes", "0.2", "0.000001", "published", "gaussian"),
        "secret": release("Unpublished canary title", "0.15", "0", "computed"),
        "failed": release("Failed one", "0.3", "0", "failed"),
        "queued": release("Queued one", "0.05", "0", "queued"),
        "pending": release("Pending one", "0.01", "0", "submitted"),
    }


def test_registry_json_is_anonymous_schema_valid_and_matches_the_ledger(client, project, history):
    response = client.get(f"/registry/{project.slug}.json")
    assert response.status_code == 200
    doc = response.json()
    validate(doc)
    summary = budget_summary(project=project)
    charges = LedgerEntry.objects.filter(project=project, kind="charge")
    assert Decimal(doc["spent"]["epsilon"]) == summary.epsilon_spent == Decimal("0.45")
    assert Decimal(doc["spent"]["epsilon"]) == sum(e.epsilon for e in charges)
    assert Decimal(doc["spent"]["delta"]) == summary.delta_spent == Decimal("0.000001")
    assert Decimal(doc["committed"]["epsilon"]) == Decimal("0.5")  # + the queued reservation
    assert Decimal(doc["remaining"]["epsilon"]) == summary.epsilon_remaining == Decimal("0.5")
    assert Decimal(doc["caps"]["epsilon"]) == project.epsilon_cap
    assert doc["burn_rate"]["last_30_days"]["epsilon"] == "0.45"
    assert doc["privacy_unit"]["max_rows_per_person"] == 3
    assert doc["mechanism_families"] == ["gaussian", "laplace"]
    titles = [r["title"] for r in doc["releases"]]
    assert titles == ["Ages by region", "Incomes"]
    assert sum(Decimal(r["epsilon"]) for r in doc["releases"]) + Decimal(
        doc["unpublished_spent"]["epsilon"]
    ) == Decimal(doc["spent"]["epsilon"])
    assert doc["unpublished_spent"]["count"] == 1
    assert "canary" not in response.content.decode()
    group = {row["group_size"]: row for row in doc["group_privacy"]["table"]}
    assert group[1]["spent"]["epsilon"] == "0.45" and group[10]["spent"]["epsilon"] == "4.5"
    assert all(r["approved_at"] and r["published_at"] for r in doc["releases"])
    assert doc == {**project_registry(project=project), "generated_at": doc["generated_at"]}


def test_registry_html_is_anonymous_and_states_the_numbers(client, project, history):
    page = client.get(reverse("registry:project", args=[project.slug]))
    assert page.status_code == 200
    text = page.content.decode()
    for expected in ("Ages by region", "Incomes", "0.45", "Group privacy", "1 computed release"):
        assert expected in text
    assert "canary" not in text
    assert client.get("/registry/no-such-project/").status_code == 404
    assert client.get("/registry/no-such-project.json").status_code == 404


def test_empty_registry_is_valid(client, project):
    doc = client.get(f"/registry/{project.slug}.json").json()
    validate(doc)
    assert doc["spent"] == {"epsilon": "0", "delta": "0"}
    assert doc["burn_rate"]["epsilon_per_month_since_first_approval"] is None


def test_burn_rate_per_month(project, history):
    later = timezone.now() + timedelta(days=90)
    doc = project_registry(project=project, now=later)
    validate(doc)
    assert doc["burn_rate"]["last_30_days"]["epsilon"] == "0"
    assert Decimal(doc["burn_rate"]["epsilon_per_month_since_first_approval"]) == Decimal("0.15")


def test_audit_ledger_passes_then_names_violations(project, history, capsys):
    from releases.models import Release

    call_command("audit_ledger")
    assert "Ledger OK" in capsys.readouterr().out
    # A computed release whose reservation was never charged (bypassing the services).
    Release.objects.filter(pk=history["queued"].pk).update(status="computed")
    with pytest.raises(CommandError):
        call_command("audit_ledger")
    err = capsys.readouterr().err
    assert "release is computed but has 0 CHARGE entries" in err
    assert "RESERVE is still open" in err


def test_audit_ledger_for_one_project_names_the_violation(project, history):
    from releases.models import Release

    Release.objects.filter(pk=history["failed"].pk).update(status="published")
    with pytest.raises(CommandError, match="violation"):
        call_command("audit_ledger", project=project.slug)


def test_a_project_named_in_chinese_has_a_readable_address_and_a_valid_registry(client, owner):
    from budgets.services import project_create

    project = project_create(
        name="人口普查", description="", privacy_unit_description="一位受访者",
        epsilon_cap="1", delta_cap="0", created_by=owner,
    )  # fmt: skip
    assert project.slug == "人口普查"
    response = client.get(reverse("registry:project_json", args=[project.slug]))
    assert response.status_code == 200
    document = response.json()
    validate(document)
    assert document["project"] == {
        "name": "人口普查",
        "name_i18n": {"en": "人口普查", "zh-hans": ""},
        "slug": "人口普查",
    }
    with pytest.raises(jsonschema.ValidationError):
        validate({**document, "project": {"name": "x", "slug": "a/b"}})
