"""Issue 13: the registry carries enough to recompute its total with an independent accountant.

The seeded demo's registry JSON is read as anyone would read it and its spent
loss recomputed with dp_accounting's own factories (tests/direct_accounting),
never through dpportal.privacy.pld; then with Gaussian releases computed but
unpublished (their mechanisms are published merged) past the basic cap.
Deterministic: no statistical assertion.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.urls import reverse

from budgets.models import Membership, Project
from budgets.services import budget_charge, budget_request_approve, budget_request_create
from dpportal.privacy import noise
from tests import direct_accounting

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "budgets/schemas/registry.schema.json").read_text()
)


def fetch(client, slug):
    response = client.get(reverse("registry:project_json", kwargs={"slug": slug}))
    assert response.status_code == 200
    document = response.json()
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())
    return document


def published_records(document) -> list[dict]:
    """Every spent mechanism record the document lists (published and merged unpublished)."""
    records = [m for r in document["releases"] for m in r["mechanisms"]]
    return records + document["unpublished_spent"]["mechanisms"]


def assert_pld_matches(document, epsilon):
    """Ours within dp_accounting's own PLD: not above it by more than 1e-3, not below it by
    more than its rounding of generic records (direct_accounting.rounding_allowance)."""
    ours = float(document["tight_accounting"]["spent_pld_epsilon"])
    step = float(document["tight_accounting"]["accountant"]["discretisation"])
    allowance = direct_accounting.rounding_allowance(published_records(document), step)
    assert epsilon - allowance - 1e-3 <= ours <= epsilon + 1e-3


def recompute(document) -> tuple[float, Fraction, Fraction]:
    """(PLD epsilon at the cap's delta, basic epsilon, basic delta) from the document alone."""
    records = published_records(document)
    tight = document["tight_accounting"]
    step = float(tight["accountant"]["discretisation"])
    epsilon = direct_accounting.epsilon_at(records, float(tight["delta"]), step)
    basic_eps = sum(Fraction(r["epsilon"]) for r in document["releases"]) + Fraction(
        document["unpublished_spent"]["epsilon"]
    )
    basic_delta = sum(Fraction(r["delta"]) for r in document["releases"]) + Fraction(
        document["unpublished_spent"]["delta"]
    )
    return epsilon, basic_eps, basic_delta


def test_seeded_demo_registry_recomputes_with_an_independent_accountant(client):
    call_command("seed_demo", stdout=StringIO())
    project = Project.objects.get()
    document = fetch(client, project.slug)
    tight = document["tight_accounting"]
    assert document["version"] == 4
    assert tight["accountant"]["library"] == "dp-accounting"
    assert tight["accountant"]["version"] == "0.6.0"
    assert tight["delta"] == document["caps"]["delta"]
    (published,) = document["releases"]
    kinds = {m["kind"] for m in published["mechanisms"]}
    # Laplace, the argmax, the quantiles (one permute-and-flip record per quantile) and
    # private bounds (a pure generic record per end searched)
    assert kinds == {"discrete_laplace", "report_noisy_max", "permute_and_flip",
                     "generic_eps_delta"}  # fmt: skip
    generic = [m for m in published["mechanisms"] if m["kind"] == "generic_eps_delta"]
    assert all(Fraction(m["delta"]) == 0 for m in generic)
    flips = [m for m in published["mechanisms"] if m["kind"] == "permute_and_flip"]
    assert all(Fraction(m["delta"]) == 0 for m in flips)
    # Every record's basic cost adds up to at most what the release was charged.
    charged = sum(Fraction(m["epsilon"]) * m["count"] for m in published["mechanisms"])
    assert 0 < charged <= Fraction(published["epsilon"])

    epsilon, basic_eps, basic_delta = recompute(document)
    assert (
        basic_eps
        == Fraction(tight["spent_basic"]["epsilon"])
        == Fraction(document["spent"]["epsilon"])
    )
    assert basic_delta == Fraction(document["spent"]["delta"])
    # dp_accounting read at exactly delta (ours leaves a 1e-6 relative margin)
    assert_pld_matches(document, epsilon)
    rdp_epsilon = direct_accounting.rdp_epsilon_at(
        published_records(document), float(tight["delta"])
    )
    assert float(tight["spent_rdp_epsilon"]) == pytest.approx(rdp_epsilon, rel=1e-4)
    assert Decimal(tight["spent_epsilon"]) == min(
        Decimal(tight["spent_pld_epsilon"]),
        Decimal(tight["spent_rdp_epsilon"]),
        Decimal(document["spent"]["epsilon"]),
    )


def test_unpublished_gaussian_releases_past_the_basic_cap_recompute_too(client):
    call_command("seed_demo", stdout=StringIO())
    project = Project.objects.get()
    project.epsilon_cap, project.delta_cap = Decimal("12"), Decimal("0.00001")
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    owner = Membership.objects.get(project=project, role="owner").user
    reviewer = Membership.objects.filter(project=project, role="reviewer").exclude(user=owner)
    reviewer = reviewer.first().user
    spec = noise.count_noise(mechanism="gaussian", epsilon="1", delta="0.000001")
    record = {
        "kind": "discrete_gaussian", "sensitivity": "1", "sigma": str(spec.describe()["sigma"]),
        "epsilon": "1", "delta": "0.000001", "count": 1,
    }  # fmt: skip
    for i in range(15):  # 16 by basic composition: only the tight bound admits them
        req = budget_request_create(
            project=project, title=f"g{i}", epsilon="1", delta="0.000001", summary={},
            spec_hash="f" * 64, requested_by=owner, mechanisms=[record],
        )  # fmt: skip
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
        budget_charge(budget_request=req)
    document = fetch(client, project.slug)
    tight = document["tight_accounting"]
    assert document["unpublished_spent"]["count"] == 15
    (gauss,) = [m for m in document["unpublished_spent"]["mechanisms"] if m["count"] == 15]
    assert gauss["kind"] == "discrete_gaussian" and gauss["sigma"] == record["sigma"]
    epsilon, basic_eps, _ = recompute(document)
    assert basic_eps > 12  # past the cap by the plain sums
    assert_pld_matches(document, epsilon)
    assert epsilon <= 12
    assert tight["spent_epsilon"] == tight["spent_pld_epsilon"]
    html = client.get(reverse("registry:project", kwargs={"slug": project.slug})).content.decode()
    assert "Counted tightly" in html and "dp-accounting 0.6.0" in html
    assert "15 × discrete Gaussian, sensitivity 1, sigma 4.23" in html
