"""A2: a hypothesis state machine over the budget services; ledger invariants at every step.

The model keeps, per request, what the ledger must say; after every step the
exact totals of the ledger must equal the model's and `ledger_audit` must be
clean. Crashes are simulated by raising inside the caller's transaction after a
charge (the results' transaction rolls back: the charge must vanish).
"""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from budgets.models import BudgetRequest, LedgerEntry
from budgets.selectors import budget_summary, ledger_audit
from budgets.services import (
    budget_charge,
    budget_release,
    budget_request_approve,
    budget_request_create,
    budget_request_reject,
    budget_request_withdraw,
)
from dpportal.errors import BudgetExceeded, InvalidTransition, SelfApproval
from dpportal.privacy import pld
from dpportal.privacy.mechanism_records import MechanismRecord
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

COSTS = [Decimal("0.1"), Decimal("0.25"), Decimal("0.3"), Decimal("0.05")]
DELTAS = [Decimal("0"), Decimal("0.000001"), Decimal("0.000004")]
CAP_EPS, CAP_DELTA = Decimal("1"), Decimal("0.00001")
_counter = itertools.count()


class Crash(Exception):
    pass


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        n = next(_counter)
        self.owner = UserFactory(username="sm-owner")
        self.reviewer = UserFactory(username="sm-reviewer")
        self.project = ProjectFactory(
            slug=f"sm-{n}", name=f"SM {n}", epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA
        )
        MembershipFactory(project=self.project, user=self.owner, role="owner")
        MembershipFactory(project=self.project, user=self.owner, role="reviewer")
        MembershipFactory(project=self.project, user=self.reviewer, role="reviewer")
        # model: request id -> (epsilon, delta, state) with state in
        # pending / reserved / charged / released / rejected / withdrawn
        self.model: dict[int, list] = {}

    def ids(self, *states: str) -> list[int]:
        return sorted(pk for pk, (_, _, state) in self.model.items() if state in states)

    def committed(self) -> tuple[Decimal, Decimal]:
        rows = [(e, d) for e, d, s in self.model.values() if s in ("reserved", "charged")]
        return sum((e for e, _ in rows), Decimal(0)), sum((d for _, d in rows), Decimal(0))

    def records(self) -> list[MechanismRecord]:
        return [
            MechanismRecord.generic(epsilon=e, delta=d)
            for e, d, s in self.model.values()
            if s in ("reserved", "charged")
        ]

    @rule(eps=st.sampled_from(COSTS), delta=st.sampled_from(DELTAS))
    def request(self, eps, delta):
        req = budget_request_create(
            project=self.project, title="r", epsilon=eps, delta=delta, summary={},
            spec_hash="e" * 64, requested_by=self.owner,
        )  # fmt: skip
        self.model[req.pk] = [eps, delta, "pending"]

    @precondition(lambda self: self.ids("pending", "reserved", "rejected", "withdrawn"))
    @rule(data=st.data(), self_approval=st.booleans())
    def approve(self, data, self_approval):
        pk = data.draw(st.sampled_from(self.ids("pending", "reserved", "rejected", "withdrawn")))
        eps, delta, state = self.model[pk]
        if self_approval:
            with pytest.raises(SelfApproval):
                budget_request_approve(budget_request_id=pk, reviewer=self.owner)
            return
        if state != "pending":
            with pytest.raises(InvalidTransition):
                budget_request_approve(budget_request_id=pk, reviewer=self.reviewer)
            return
        c_eps, c_delta = self.committed()
        within_basic = c_eps + eps <= CAP_EPS and c_delta + delta <= CAP_DELTA
        # the tight bound may admit what the sums do not (generic records: no mechanisms)
        tight = pld.within_cap(
            self.records(), [MechanismRecord.generic(epsilon=eps, delta=delta)],
            epsilon_cap=CAP_EPS, delta_cap=CAP_DELTA, count_fit=False,
        )  # fmt: skip
        if not (within_basic or tight.within):
            with pytest.raises(BudgetExceeded):
                budget_request_approve(budget_request_id=pk, reviewer=self.reviewer)
            return
        budget_request_approve(budget_request_id=pk, reviewer=self.reviewer)
        self.model[pk][2] = "reserved"

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def reject(self, data):
        pk = data.draw(st.sampled_from(sorted(self.model)))
        if self.model[pk][2] != "pending":
            with pytest.raises(InvalidTransition):
                budget_request_reject(budget_request_id=pk, reviewer=self.reviewer, comment="no")
            return
        budget_request_reject(budget_request_id=pk, reviewer=self.reviewer, comment="no")
        self.model[pk][2] = "rejected"

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def withdraw(self, data):
        pk = data.draw(st.sampled_from(sorted(self.model)))
        if self.model[pk][2] not in ("pending", "reserved"):
            with pytest.raises(InvalidTransition):
                budget_request_withdraw(budget_request_id=pk, actor=self.owner)
            return
        budget_request_withdraw(budget_request_id=pk, actor=self.owner)
        self.model[pk][2] = "withdrawn"

    @precondition(lambda self: self.model)
    @rule(data=st.data(), crash=st.sampled_from(["none", "before-commit"]))
    def compute(self, data, crash):
        """The worker: charge inside the results' transaction (maybe crashing before commit)."""
        pk = data.draw(st.sampled_from(sorted(self.model)))
        req = BudgetRequest.objects.get(pk=pk)
        if self.model[pk][2] != "reserved":
            with pytest.raises(InvalidTransition):
                budget_charge(budget_request=req)
            return
        if crash == "before-commit":
            with pytest.raises(Crash), transaction.atomic():
                budget_charge(budget_request=req)
                raise Crash
            return  # nothing committed: still reserved, a retry may compute afresh
        budget_charge(budget_request=req)
        self.model[pk][2] = "charged"

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def fail_before_noise(self, data):
        pk = data.draw(st.sampled_from(sorted(self.model)))
        req = BudgetRequest.objects.get(pk=pk)
        if self.model[pk][2] != "reserved":
            with pytest.raises(InvalidTransition):
                budget_release(budget_request=req)
            return
        budget_release(budget_request=req)
        self.model[pk][2] = "released"

    @invariant()
    def ledger_matches_model(self):
        summary = budget_summary(project=self.project)
        c_eps, c_delta = self.committed()
        charged = [(e, d) for e, d, s in self.model.values() if s == "charged"]
        assert summary.epsilon_committed == c_eps
        assert summary.delta_committed == c_delta
        assert summary.epsilon_spent == sum((e for e, _ in charged), Decimal(0))
        assert summary.delta_spent == sum((d for _, d in charged), Decimal(0))
        # within the cap by either bound (the basic sums or the tight PLD epsilon)
        assert (summary.epsilon_committed <= CAP_EPS and summary.delta_committed <= CAP_DELTA) or (
            pld.pld_epsilon(self.records(), CAP_DELTA) <= CAP_EPS
        )
        assert summary.epsilon_remaining == CAP_EPS - c_eps
        entries = LedgerEntry.objects.filter(project=self.project)
        for pk, (_, _, state) in self.model.items():
            kinds = sorted(entries.filter(request_id=pk).values_list("kind", flat=True))
            expected = {
                "pending": [], "rejected": [], "reserved": ["reserve"],
                "charged": ["charge", "reserve"], "released": ["release", "reserve"],
            }.get(state)  # fmt: skip
            if expected is not None:
                assert kinds == expected, (state, kinds)
            else:  # withdrawn: before or after an approval
                assert kinds in ([], ["release", "reserve"]), kinds
        assert ledger_audit(project=self.project) == []


@pytest.mark.django_db
def test_ledger_state_machine():
    LedgerMachine.TestCase.settings = settings(
        max_examples=15,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    LedgerMachine.TestCase().runTest()
