"""Exact ledger records for every kind, through the real services, recomputed from outside.

- Twenty Gaussian grouped-sum releases (6 cells, L = 3, epsilon 1, delta 1e-6)
  fit under a (10, 1e-5) cap through the real approval service: each is a
  zcdp_gaussian record, composed by Renyi DP (their deltas alone add past the
  cap, so neither basic composition nor the PLD with generic stand-ins admits
  the last ten).
- The registry JSON of a project holding every kind, Laplace and Gaussian,
  recomputes the project's tight total with dp_accounting's own factories
  (tests/direct_accounting: PLD factories and RDP DpEvents) from the JSON's
  published parameters alone.
Deterministic: no statistical assertion (the compute uses a fixed seed and no
test reads a noisy value).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import jsonschema
import pytest
from django.urls import reverse

from budgets.models import BudgetRequest
from budgets.services import budget_request_approve, budget_request_create
from dpportal.errors import BudgetExceeded
from dpportal.privacy import pld
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, lifecycle, services
from releases.models import Release
from tests import direct_accounting
from tests.factories import MembershipFactory, ProjectFactory
from tests.releases_support import builder_data, make_dataset, submitted

pytestmark = pytest.mark.django_db

CAP_EPS, CAP_DELTA = Decimal("10"), Decimal("0.00001")
GROUPED_SUM = {"kind": "grouped_sum", "column": "income", "group_by": "region"}
SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "budgets/schemas/registry.schema.json").read_text()
)


@pytest.fixture
def capped(db, owner, reviewer):
    project = ProjectFactory(created_by=owner, epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    return project


@pytest.fixture
def people_dataset(capped, owner):
    """Up to L = 3 rows per person (the `person` column), region: 4 categories + Other + Missing."""
    return make_dataset(
        project=capped, owner=owner, rows=600, id_column="person", bound=3, people=150
    )


def test_twenty_gaussian_grouped_sums_fit_a_10_1e5_cap(capped, owner, reviewer, people_dataset):
    releases = []
    for i in range(20):
        release = submitted(
            project=capped, owner=owner, dataset=people_dataset, statistics=[GROUPED_SUM],
            epsilon="1", mechanism="gaussian", delta="0.000001", title=f"Grouped {i}",
        )  # fmt: skip
        budget_request_approve(budget_request_id=release.budget_request.pk, reviewer=reviewer)
        releases.append(release)
    requests = BudgetRequest.objects.filter(project=capped)
    assert requests.count() == 20
    assert {r.status for r in requests} == {BudgetRequest.Status.APPROVED}
    # Each release is one zCDP record: the six cells' l2 sensitivity, L = 3 rows in one cell.
    (record,) = releases[0].budget_request.mechanisms
    assert record["kind"] == "zcdp_gaussian"
    assert all(r.budget_request.mechanisms == [record] for r in releases)
    parsed = MechanismRecord.from_dict(record)
    assert parsed.rho == Fraction(record["rho"])
    assert parsed.rho == parsed.sensitivity**2 / (2 * parsed.sigma**2)
    # Basic sums: epsilon 20, delta 2e-5, past both caps; dp_accounting's RDP: about 4.66.
    records = [m for r in requests for m in r.mechanisms]
    assert sum(Fraction(m["delta"]) for m in records) > Fraction(CAP_DELTA)
    direct = direct_accounting.rdp_epsilon_at(records, float(CAP_DELTA))
    assert direct == pytest.approx(4.66, abs=0.01)
    spend = pld.project_spend([parsed.times(20)], CAP_DELTA)
    assert spend.rdp_epsilon == pytest.approx(direct, rel=1e-4)
    assert spend.epsilon == spend.rdp_epsilon  # the PLD with generic stand-ins is unbounded
    # As many more as the RDP bound allows fit, and the next one is refused.
    fit = pld.releases_that_fit([parsed.times(20)], [parsed], epsilon_cap=10, delta_cap=CAP_DELTA)
    assert fit > 20
    extra = [parsed.times(20 + fit)]
    assert pld.project_spend(extra, CAP_DELTA).epsilon <= 10
    assert pld.project_spend([parsed.times(21 + fit)], CAP_DELTA).epsilon > 10
    assert direct_accounting.rdp_epsilon_at([parsed.times(21 + fit).to_dict()], 1e-5) > 10 - 1e-3
    # The real approval service refuses what the RDP bound does not admit, and says so.
    too_many = parsed.times(fit + 1)
    over = budget_request_create(
        project=capped, title="too many", epsilon=str(fit + 1),
        delta=str(Decimal(fit + 1) / 10**6), summary={}, spec_hash="d" * 64,
        requested_by=owner, mechanisms=[too_many.to_dict()],
    )  # fmt: skip
    with pytest.raises(BudgetExceeded) as refused:
        budget_request_approve(budget_request_id=over.pk, reviewer=reviewer)
    assert "Counted tightly (privacy loss distributions or Renyi DP" in refused.value.message
    # the twenty already approved, read tightly (about 4.66; the sigma's rounding moves the
    # last digit with the grid)
    assert re.search(r"has used epsilon 4\.6[5-7]\d of its cap of 10", refused.value.message)
    over.refresh_from_db()
    assert over.status == BudgetRequest.Status.PENDING


EVERY_KIND = [
    {"kind": "count"},
    {"kind": "histogram", "column": "region"},
    {"kind": "sum", "column": "income"},
    {"kind": "mean", "column": "age", "n_guess": 600},
    {"kind": "grouped_sum", "column": "income", "group_by": "region"},
    {"kind": "grouped_mean", "column": "income", "group_by": "region", "n_guess": 100},
    {"kind": "quantiles", "column": "income", "quantiles": "0.25, 0.5, 0.75", "step": "1000"},
    {"kind": "stddev", "column": "age", "n_guess": 600},
    {"kind": "variance", "column": "income", "group_by": "region", "n_guess": 100},
]


def computed(project, owner, reviewer, dataset, *, mechanism, statistics, **extra):
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=statistics, epsilon="1",
        mechanism=mechanism, title=f"Every kind, {mechanism}", **extra,
    )  # fmt: skip
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk, rng=SeededTestRandom(3)) == "computed"
    return Release.objects.get(pk=release.pk)


def test_registry_of_every_kind_recomputes_with_dp_accounting(
    client, capped, owner, reviewer, people_dataset
):
    laplace = computed(
        capped, owner, reviewer, people_dataset, mechanism="laplace",
        statistics=[*EVERY_KIND, {"kind": "argmax", "column": "region"}],
    )  # fmt: skip
    computed(
        capped, owner, reviewer, people_dataset, mechanism="gaussian", statistics=EVERY_KIND,
        delta="0.000001",
    )  # fmt: skip
    lifecycle.release_publish(release=laplace, actor=owner)  # one listed, one merged unpublished
    response = client.get(reverse("registry:project_json", kwargs={"slug": capped.slug}))
    assert response.status_code == 200
    document = response.json()
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())
    records = [m for r in document["releases"] for m in r["mechanisms"]]
    records += document["unpublished_spent"]["mechanisms"]
    kinds = {m["kind"] for m in records}
    assert kinds == {
        "discrete_laplace",
        "discrete_gaussian",
        "zcdp_gaussian",
        "report_noisy_max",
        "permute_and_flip",
    }  # fmt: skip  (no generic stand-in: every mechanism has its exact record)
    # Three quantiles: two levels of the joint draw and six interval ends (records of
    # equal epsilon merged: counts 2 and 6).
    (published,) = document["releases"]
    flips = [m for m in published["mechanisms"] if m["kind"] == "permute_and_flip"]
    assert sorted(m["count"] for m in flips) == [2, 6]
    assert all(Fraction(m["delta"]) == 0 for m in flips)
    assert sum(m["count"] for m in records if m["kind"] == "permute_and_flip") == 16
    for m in records:
        if m["kind"] == "zcdp_gaussian":
            sens, sigma = Fraction(m["sensitivity"]), Fraction(m["sigma"])
            assert Fraction(m["rho"]) == sens**2 / (2 * sigma**2)
    tight = document["tight_accounting"]
    delta = float(tight["delta"])
    step = float(tight["accountant"]["discretisation"])
    direct_pld = direct_accounting.epsilon_at(records, delta, step)
    direct_rdp = direct_accounting.rdp_epsilon_at(records, delta)
    ours_pld, ours_rdp = float(tight["spent_pld_epsilon"]), float(tight["spent_rdp_epsilon"])
    allowance = direct_accounting.rounding_allowance(records, step)
    assert direct_pld - allowance - 1e-3 <= ours_pld <= direct_pld + 1e-3
    assert ours_rdp == pytest.approx(direct_rdp, rel=1e-4)
    basic_eps = Fraction(document["spent"]["epsilon"])
    assert basic_eps == 2 and Fraction(document["spent"]["delta"]) == Fraction(1, 10**6)
    # The stated total is the smallest of the three, each recomputed from outside.
    recomputed = min(direct_pld, direct_rdp, float(basic_eps))
    assert float(tight["spent_epsilon"]) == pytest.approx(recomputed, abs=allowance + 1e-3)
    html = client.get(reverse("registry:project", kwargs={"slug": capped.slug})).content.decode()
    assert "6 × permute-and-flip selection, epsilon" in html
    assert "discrete Gaussian vector, l2 sensitivity" in html and "zCDP rho" in html
    assert "by Renyi differential privacy (zCDP for Gaussian vectors): epsilon" in html


@pytest.mark.parametrize("bound", [1, 3])
def test_each_gaussian_vector_gets_the_record_its_sigma_was_calibrated_for(capped, owner, bound):
    """A vector on which one person can move several cells (L > 1, more than one cell) is a
    zcdp_gaussian record at its l2 sensitivity; a vector on which one person moves one
    coordinate only (one cell, or L = 1) is a one-coordinate discrete_gaussian record, as
    its sigma was calibrated (CKS Thm 7). Never the 1-D record for a multivariate shift."""
    dataset = make_dataset(
        project=capped, owner=owner, rows=300, id_column="person" if bound > 1 else "",
        bound=bound, people=100 if bound > 1 else None,
    )  # fmt: skip
    plan = services.release_plan_parse(
        project=capped,
        data=builder_data(
            dataset, statistics=EVERY_KIND, epsilon="1", mechanism="gaussian",
            delta="0.000001",
        ),
    )  # fmt: skip
    for stat in plan.statistics:
        records = dp.statistic_records(plan=plan, stat=stat)
        if stat.kind == "quantiles":
            assert [r.kind for r in records] == ["permute_and_flip"] * (2 + 6)
            assert len({r.epsilon for r in records}) == 2
            assert sum(r.epsilon for r in records) == Fraction(stat.epsilon)
            continue
        specs = dp.statistic_noise(plan=plan, stat=stat)
        assert len(records) == len(specs)
        for record, spec in zip(records, specs, strict=True):
            grouped = stat.kind in ("grouped_sum", "grouped_mean", "variance")
            if bound > 1 and grouped:
                assert record.kind == "zcdp_gaussian", (stat.kind, spec)
                assert record.rho == Fraction(spec.l2_sensitivity) ** 2 / (2 * spec.sigma**2)
            elif stat.kind != "histogram":  # histograms: the shift-pattern argument
                assert record.kind == "discrete_gaussian", (stat.kind, spec)
            assert record.sigma == spec.sigma and (record.epsilon, record.delta) == (
                spec.epsilon, spec.delta,
            )  # fmt: skip
