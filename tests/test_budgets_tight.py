"""Issue 13: approval with the tight (PLD) accountant, on PostgreSQL.

A project with cap (10, 1e-5) admits about 70 Gaussian (1, 1e-6) releases
instead of the 10 basic composition allows; the first that would pass the cap
is refused and changes nothing; reservation, charge, release and withdrawal
change what the accountant sees; concurrent approvals cannot overspend. The
committed totals are recomputed with dp_accounting directly (tests/direct_accounting).
No statistical assertion: every number is deterministic.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from fractions import Fraction

import pytest
from django.core.management import call_command
from django.db import connection, connections

from budgets.models import BudgetRequest, LedgerEntry
from budgets.selectors import budget_standing, budget_summary, committed_records
from budgets.services import (
    budget_charge,
    budget_release,
    budget_request_approve,
    budget_request_create,
    budget_request_withdraw,
    project_caps_update,
)
from dpportal import formatting
from dpportal.errors import BudgetExceeded, ValidationFailed
from dpportal.privacy import noise, pld
from dpportal.privacy.mechanism_records import MechanismRecord, records_from_explanation
from releases.services.preview import release_preview
from tests import direct_accounting
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.releases_support import builder_data, make_dataset, submitted

CAP_EPS, CAP_DELTA = Decimal("10"), Decimal("0.00001")
GAUSS = records_from_explanation(
    noise.count_noise(mechanism="gaussian", epsilon="1", delta="0.000001").describe()
)[0]


@pytest.fixture
def tight_project(db, owner, reviewer):
    project = ProjectFactory(created_by=owner, epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    return project


def gaussian_request(project, owner, title="g", mechanisms=None):
    return budget_request_create(
        project=project, title=title, epsilon="1", delta="0.000001", summary={},
        spec_hash="c" * 64, requested_by=owner,
        mechanisms=[GAUSS.to_dict()] if mechanisms is None else mechanisms,
    )  # fmt: skip


def committed_epsilon_directly(project) -> float:
    """The committed RESERVE rows' PLD epsilon at the cap's delta, by dp_accounting alone."""
    released = LedgerEntry.objects.filter(project=project, kind="release").values("request_id")
    rows = LedgerEntry.objects.filter(project=project, kind="reserve").exclude(
        request_id__in=released
    )
    records = [m for row in rows for m in row.mechanisms]
    return direct_accounting.epsilon_at(records, float(project.delta_cap))


def test_cap_admits_five_times_more_gaussian_releases_than_basic(tight_project, owner, reviewer):
    project = tight_project
    # One release through the real builder and submit path: its records come from the spec.
    dataset = make_dataset(project=project, owner=owner, rows=300)
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=[{"kind": "count"}],
        epsilon="1", mechanism="gaussian", delta="0.000001",
    )  # fmt: skip
    first = release.budget_request
    assert first.mechanisms == [GAUSS.to_dict()]
    assert GAUSS.kind == "discrete_gaussian" and GAUSS.sigma == Fraction("4.231")
    budget_request_approve(budget_request_id=first.pk, reviewer=reviewer)
    admitted = 1
    # The bulk straight through budget_request_create with the same records.
    refusal = None
    while refusal is None:
        req = gaussian_request(project, owner, title=f"g{admitted}", mechanisms=first.mechanisms)
        entries_before = list(LedgerEntry.objects.filter(project=project).values_list("pk"))
        try:
            budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
            admitted += 1
        except BudgetExceeded as exc:
            refusal = exc
        assert admitted < 200, "the tight accountant never refused"
    assert admitted >= 5 * 10  # basic composition admits 10 such releases
    assert admitted == pld.releases_that_fit([], [GAUSS], epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA)
    # The refusal changed nothing and says what remains under both bounds, in words.
    assert list(LedgerEntry.objects.filter(project=project).values_list("pk")) == entries_before
    req.refresh_from_db()
    assert req.status == BudgetRequest.Status.PENDING
    committed = formatting.delta(Decimal(admitted) / 10**6)  # '7.1 × 10⁻⁵', readable
    assert f"already past its cap: epsilon {admitted}, delta {committed} committed" in (
        refusal.message
    )
    assert "has used epsilon 9.946 of its cap of 10, so epsilon 0.05448 remains, and this " in (
        refusal.message
    )
    assert "e-" not in refusal.message and "E-" not in refusal.message
    assert refusal.extra["epsilon_remaining"] == str(10 - admitted)
    assert refusal.extra["tight_delta"] == "0.00001"
    assert (
        float(refusal.extra["tight_epsilon_after"])
        > 10
        > float(refusal.extra["tight_epsilon_committed"])
    )
    # Recomputed with dp_accounting directly: within the cap, one more would not be.
    assert committed_epsilon_directly(project) <= 10 + 1e-3
    one_more = direct_accounting.epsilon_at([GAUSS.times(admitted + 1).to_dict()], 1e-5)
    assert one_more > 10 - 1e-3
    call_command("audit_ledger")
    # The owner's views agree with the approval: the next one does not fit, a smaller one does.
    assert not budget_standing(budget_request=req).fits
    preview = release_preview(
        project=project,
        data=builder_data(dataset, statistics=[{"kind": "count"}], epsilon="1",
                          mechanism="gaussian", delta="0.000001"),
    )  # fmt: skip
    assert preview["fits"] is False
    small = release_preview(
        project=project,
        data=builder_data(dataset, statistics=[{"kind": "count"}], epsilon="0.05",
                          mechanism="laplace"),
    )  # fmt: skip
    assert small["fits"] is True  # no basic room at all: only the tight bound admits it


def test_pending_request_standing_uses_the_tight_bound(tight_project, owner, reviewer):
    for i in range(10):
        budget_request_approve(
            budget_request_id=gaussian_request(tight_project, owner, f"b{i}").pk,
            reviewer=reviewer,
        )
    assert budget_summary(project=tight_project).epsilon_remaining == 0
    pending = gaussian_request(tight_project, owner, "eleventh")
    standing = budget_standing(budget_request=pending)
    assert standing.epsilon_after < 0 and standing.fits and standing.fits_tight
    budget_request_approve(budget_request_id=pending.pk, reviewer=reviewer)


def test_reservation_charge_release_and_withdrawal_change_what_the_accountant_sees(
    tight_project, owner, reviewer
):
    project = tight_project
    laplace = MechanismRecord.discrete_laplace(sensitivity=1, scale=2)
    a = gaussian_request(project, owner, "a")
    b = budget_request_create(
        project=project, title="b", epsilon="0.5", delta="0", summary={}, spec_hash="d" * 64,
        requested_by=owner, mechanisms=[laplace.to_dict()],
    )  # fmt: skip
    c = gaussian_request(project, owner, "c")
    legacy = budget_request_create(  # no records: a generic (epsilon, delta) mechanism
        project=project, title="legacy", epsilon="0.25", delta="0", summary={},
        spec_hash="e" * 64, requested_by=owner,
    )  # fmt: skip
    assert committed_records(project=project) == []  # pending requests commit nothing
    for req in (a, b, c, legacy):
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    assert committed_records(project=project) == [
        GAUSS.times(2), laplace, MechanismRecord.generic(epsilon="0.25"),
    ]  # fmt: skip
    budget_charge(budget_request=a)  # spent: still committed
    assert GAUSS.times(2) in committed_records(project=project)
    budget_release(budget_request=c)  # returned before any noise: no longer committed
    assert GAUSS in committed_records(project=project)
    assert GAUSS.times(2) not in committed_records(project=project)
    budget_request_withdraw(budget_request_id=b.pk, actor=owner)
    assert committed_records(project=project) == [GAUSS, MechanismRecord.generic(epsilon="0.25")]
    charge = LedgerEntry.objects.get(request=a, kind="charge")
    assert charge.mechanisms == [GAUSS.to_dict()]  # settlement rows carry the records too


@pytest.fixture
def pg(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")


def race(request_ids, reviewer):
    """Approve each id from its own thread (own DB connection), released by a barrier."""
    barrier = threading.Barrier(len(request_ids), timeout=60)
    outcomes: list[object] = [None] * len(request_ids)

    def run(index: int, request_id: int) -> None:
        try:
            barrier.wait()
            budget_request_approve(budget_request_id=request_id, reviewer=reviewer)
            outcomes[index] = "ok"
        except Exception as exc:  # recorded and asserted on below
            outcomes[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, rid)) for i, rid in enumerate(request_ids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return outcomes


def test_concurrent_gaussian_approvals_only_tight_accounting_admits(pg):
    """Past the basic cap, 24 concurrent approvals: exactly the slots the PLD bound leaves."""
    owner = UserFactory(username="tight-race-owner")
    reviewer = UserFactory(username="tight-race-reviewer")
    project = ProjectFactory(epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    fit = pld.releases_that_fit([], [GAUSS], epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA)
    history = fit - 8  # far past basic composition's 10: only the PLD bound admits more
    for i in range(history):
        budget_request_approve(
            budget_request_id=gaussian_request(project, owner, f"h{i}").pk, reviewer=reviewer
        )
    ids = [gaussian_request(project, owner, f"r{i}").pk for i in range(24)]
    outcomes = race(ids, reviewer)
    assert outcomes.count("ok") == 8, outcomes
    assert sum(isinstance(o, BudgetExceeded) for o in outcomes) == 16, outcomes
    assert LedgerEntry.objects.filter(project=project, kind="reserve").count() == fit
    # No overspend by the measure that admitted them, recomputed with dp_accounting directly
    # (the basic sums are past the cap by design: 70 > 10, admitted by the tight bound only).
    assert committed_epsilon_directly(project) <= 10 + 1e-3
    assert budget_summary(project=project).epsilon_committed == fit
    call_command("audit_ledger")  # raises CommandError on any violation


def test_owner_may_lower_the_cap_to_what_the_tight_accountant_counts(
    tight_project, owner, reviewer
):
    for i in range(20):
        budget_request_approve(
            budget_request_id=gaussian_request(tight_project, owner, f"c{i}").pk,
            reviewer=reviewer,
        )
    tight = pld.pld_epsilon([GAUSS.times(20)], Fraction("1e-5"))
    assert 4 < tight < 5  # by the plain sums: 20, past the cap of 10 already
    with pytest.raises(ValidationFailed, match="cannot go below the 20 already committed"):
        project_caps_update(project=tight_project, actor=owner, epsilon_cap="4", delta_cap="1e-5")
    project_caps_update(project=tight_project, actor=owner, epsilon_cap="5", delta_cap="1e-5")
    assert tight_project.epsilon_cap == 5
    call_command("audit_ledger")


def test_one_release_past_the_plain_cap_is_filed_when_it_fits_tightly(tight_project, owner):
    """Twelve Gaussian statistics cost (12, 1.2e-5) by the sums, past the cap (10, 1e-5),
    but about epsilon 3.5 at delta 1e-5 together: the request is filed; fifty are
    past the cap both ways and refused, with nothing written."""
    twelve = budget_request_create(
        project=tight_project, title="twelve", epsilon="12", delta="0.000012", summary={},
        spec_hash="c" * 64, requested_by=owner, mechanisms=[GAUSS.times(12).to_dict()],
    )  # fmt: skip
    assert twelve.pk and twelve.mechanisms == [GAUSS.times(12).to_dict()]
    assert direct_accounting.epsilon_at(twelve.mechanisms, float(CAP_DELTA)) < 10
    before = BudgetRequest.objects.count()
    with pytest.raises(ValidationFailed, match="epsilon cap of 10, even counted tightly"):
        budget_request_create(
            project=tight_project, title="too many", epsilon="400", delta="0.0004",
            summary={}, spec_hash="c" * 64, requested_by=owner,
            mechanisms=[GAUSS.times(400).to_dict()],
        )  # fmt: skip
    # A generic request past the plain cap has no tighter bound to show.
    with pytest.raises(ValidationFailed, match="epsilon cap of 10"):
        budget_request_create(
            project=tight_project, title="generic", epsilon="11", delta="0",
            summary={}, spec_hash="c" * 64, requested_by=owner,
        )  # fmt: skip
    assert BudgetRequest.objects.count() == before
