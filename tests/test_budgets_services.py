"""Budget requests, approvals and the ledger, at the services level."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError

from budgets.models import AppendOnlyError, BudgetRequest, LedgerEntry
from budgets.selectors import budget_summary
from budgets.services import (
    budget_charge,
    budget_release,
    budget_request_approve,
    budget_request_create,
    budget_request_reject,
    budget_request_withdraw,
)
from dpportal.errors import (
    BudgetExceeded,
    InvalidTransition,
    NotFound,
    PermissionDenied,
    SelfApproval,
    ValidationFailed,
)
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def make_request(project, owner, epsilon="0.1", delta="0", title="Ages"):
    return budget_request_create(
        project=project,
        title=title,
        epsilon=epsilon,
        delta=delta,
        summary={"statistics": [{"kind": "count"}]},
        spec_hash="a" * 64,
        requested_by=owner,
    )


def kinds(project):
    return list(LedgerEntry.objects.filter(project=project).values_list("kind", flat=True))


def test_approve_reserves_and_charge_converts(project, owner, reviewer):
    req = make_request(project, owner, epsilon="0.25", delta="0.000001")
    assert kinds(project) == []
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer, comment="fine")
    s = budget_summary(project=project)
    assert s.epsilon_spent == 0
    assert s.epsilon_committed == Decimal("0.25")
    assert s.epsilon_remaining == Decimal("0.75")
    assert s.delta_committed == Decimal("0.000001")
    budget_charge(budget_request=req)
    s = budget_summary(project=project)
    assert s.epsilon_spent == Decimal("0.25") == s.epsilon_committed
    assert s.delta_remaining == Decimal("0.00001") - Decimal("0.000001")
    assert kinds(project) == ["reserve", "charge"]
    with pytest.raises(InvalidTransition):
        budget_charge(budget_request=req)
    with pytest.raises(InvalidTransition):
        budget_release(budget_request=req)
    with pytest.raises(InvalidTransition):
        budget_request_withdraw(budget_request_id=req.pk, actor=owner)
    assert kinds(project) == ["reserve", "charge"]


def test_exact_decimal_sums_reach_the_cap_exactly(project, owner, reviewer):
    # 0.1 ten times is exactly 1.0 in Decimal (as floats it is 0.9999999999999999).
    for i in range(10):
        req = make_request(project, owner, title=f"r{i}")
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    assert budget_summary(project=project).epsilon_remaining == 0
    # By basic composition nothing remains; tightly, ten pure 0.1 releases are
    # (0.9937, 0.00001)-DP (randomized response composed, the project's delta cap),
    # so 0.05 more (1.0377 tightly) is refused by both bounds and the refusal says so...
    extra = make_request(project, owner, epsilon="0.05")
    with pytest.raises(BudgetExceeded, match="only epsilon 0, delta 1\xa0×\xa010⁻⁵ remain") as info:
        budget_request_approve(budget_request_id=extra.pk, reviewer=reviewer)
    assert "Counted tightly" in info.value.message
    assert (
        "epsilon 0.9937 of its cap of 1, so epsilon 0.006309 remains, and this request would "
        "bring it to epsilon 1.038"
    ) in info.value.message
    assert info.value.extra["epsilon_remaining"] == "0"
    assert float(info.value.extra["tight_epsilon_committed"]) == pytest.approx(0.99369, abs=1e-4)
    # ... while a sliver the sums cannot admit fits under the tight bound.
    sliver = make_request(project, owner, epsilon="0.000000000001")
    budget_request_approve(budget_request_id=sliver.pk, reviewer=reviewer)
    assert budget_summary(project=project).epsilon_remaining == Decimal("-0.000000000001")


def test_release_returns_reservation(project, owner, reviewer):
    req = make_request(project, owner, epsilon="0.6")
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    budget_release(budget_request=req, note="worker failed before noise")
    s = budget_summary(project=project)
    assert s.epsilon_committed == 0 and s.epsilon_remaining == Decimal("1")
    with pytest.raises(InvalidTransition):
        budget_charge(budget_request=req)
    assert kinds(project) == ["reserve", "release"]


def test_withdraw_pending_and_approved(project, owner, reviewer):
    pending = make_request(project, owner)
    budget_request_withdraw(budget_request_id=pending.pk, actor=owner)
    assert kinds(project) == []
    approved = make_request(project, owner, epsilon="0.5")
    budget_request_approve(budget_request_id=approved.pk, reviewer=reviewer)
    budget_request_withdraw(budget_request_id=approved.pk, actor=owner)
    approved.refresh_from_db()
    assert approved.status == "withdrawn"
    assert kinds(project) == ["reserve", "release"]
    assert budget_summary(project=project).epsilon_remaining == 1
    with pytest.raises(InvalidTransition):
        budget_request_approve(budget_request_id=approved.pk, reviewer=reviewer)
    with pytest.raises(InvalidTransition):
        budget_request_withdraw(budget_request_id=approved.pk, actor=owner)


def test_reviewer_cannot_withdraw_someone_elses_request(project, owner, reviewer):
    req = make_request(project, owner)
    with pytest.raises(PermissionDenied):
        budget_request_withdraw(budget_request_id=req.pk, actor=reviewer)


def test_self_approval_refused_even_for_a_reviewer(project, owner, reviewer):
    MembershipFactory(project=project, user=owner, role="reviewer")
    req = make_request(project, owner)
    with pytest.raises(SelfApproval):
        budget_request_approve(budget_request_id=req.pk, reviewer=owner)
    with pytest.raises(SelfApproval):
        budget_request_reject(budget_request_id=req.pk, reviewer=owner, comment="no")
    req.refresh_from_db()
    assert req.status == "pending" and kinds(project) == []


def test_outsiders_refused(project, owner, reviewer):
    req = make_request(project, owner)
    other = ProjectFactory()
    other_owner = UserFactory(username="other-owner")
    other_reviewer = UserFactory(username="other-reviewer")
    MembershipFactory(project=other, user=other_owner, role="owner")
    MembershipFactory(project=other, user=other_reviewer, role="reviewer")
    for user in (other_owner, other_reviewer, UserFactory(username="nobody")):
        with pytest.raises(NotFound):
            budget_request_approve(budget_request_id=req.pk, reviewer=user)
    with pytest.raises(PermissionDenied):
        budget_request_approve(budget_request_id=req.pk, reviewer=owner)
    with pytest.raises(NotFound):
        budget_request_approve(budget_request_id=req.pk + 1000, reviewer=reviewer)
    assert kinds(project) == []


@pytest.mark.parametrize(
    ("epsilon", "delta", "message"),
    [
        ("-0.1", "0", "epsilon must be greater than 0"),
        ("0", "0", "epsilon must be greater than 0"),
        ("NaN", "0", "epsilon must be a finite number"),
        ("Infinity", "0", "epsilon must be a finite number"),
        (float("inf"), "0", "epsilon must be a finite number"),
        (float("nan"), "0", "epsilon must be a finite number"),
        ("abc", "0", "epsilon must be a number"),
        ("1.5", "0", "above the project's epsilon cap of 1"),
        ("0.1", "-0.0001", "delta must be at least 0"),
        ("0.1", "NaN", "delta must be a finite number"),
        ("0.1", "-Infinity", "delta must be a finite number"),
        ("0.1", "1", "delta must be at least 0 and below 1"),
        ("0.1", "0.001", "above the project's delta cap"),
        ("0.1234567890123", "0", "at most 12 decimal places"),
    ],
)
def test_bad_amounts_refused(project, owner, epsilon, delta, message):
    with pytest.raises(ValidationFailed, match=message):
        make_request(project, owner, epsilon=epsilon, delta=delta)
    assert BudgetRequest.objects.count() == 0


def test_comment_limit_and_decided_requests(project, owner, reviewer):
    req = make_request(project, owner)
    with pytest.raises(ValidationFailed, match="limit is 2000"):
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer, comment="x" * 2001)
    with pytest.raises(ValidationFailed, match="reason"):
        budget_request_reject(budget_request_id=req.pk, reviewer=reviewer, comment="  ")
    assert kinds(project) == []
    budget_request_reject(budget_request_id=req.pk, reviewer=reviewer, comment="too costly")
    with pytest.raises(InvalidTransition, match="rejected"):
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    with pytest.raises(InvalidTransition):
        budget_request_reject(budget_request_id=req.pk, reviewer=reviewer, comment="again")
    with pytest.raises(InvalidTransition):
        budget_request_withdraw(budget_request_id=req.pk, actor=owner)
    assert kinds(project) == []


def test_only_owners_request_budget(project, reviewer):
    with pytest.raises(PermissionDenied):
        make_request(project, reviewer)


def test_charge_nests_inside_the_callers_transaction(project, owner, reviewer):
    req = make_request(project, owner)
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with transaction.atomic():
            budget_charge(budget_request=req)
            raise Boom  # storing the results failed: the charge must vanish with them
    assert kinds(project) == ["reserve"]
    budget_charge(budget_request=req)
    assert kinds(project) == ["reserve", "charge"]


def test_ledger_is_append_only_in_the_orm(project, owner, reviewer):
    req = make_request(project, owner)
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    entry = LedgerEntry.objects.get()
    entry.epsilon = Decimal("0.0001")
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        LedgerEntry.objects.filter(pk=entry.pk).update(epsilon=0)
    with pytest.raises(AppendOnlyError):
        LedgerEntry.objects.all().delete()
    assert LedgerEntry.objects.get().epsilon == Decimal("0.1")


def test_ledger_is_append_only_in_postgresql(project, owner, reviewer):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger exists on PostgreSQL only")
    req = make_request(project, owner)
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    for sql in (
        "UPDATE budgets_ledgerentry SET epsilon = 0",
        "DELETE FROM budgets_ledgerentry",
    ):
        with pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql)
    assert LedgerEntry.objects.get().epsilon == Decimal("0.1")


def test_database_refuses_a_second_settlement(project, owner, reviewer):
    from django.db import IntegrityError

    req = make_request(project, owner)
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    budget_charge(budget_request=req)
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            LedgerEntry.objects.create(
                project=project, request=req, kind="release", epsilon="0.1", delta="0"
            )
