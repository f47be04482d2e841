"""Reads of the budget: exact totals from the ledger, budget requests, ledger entries."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry, Membership, Project
from budgets.selectors.projects import project_roles
from dpportal.errors import NotFound


@dataclass(frozen=True)
class BudgetSummary:
    """A project's budget, exact: spent = charges; committed = charges + open reservations."""

    epsilon_cap: Decimal
    delta_cap: Decimal
    epsilon_spent: Decimal
    delta_spent: Decimal
    epsilon_committed: Decimal
    delta_committed: Decimal
    epsilon_remaining: Decimal
    delta_remaining: Decimal
    epsilon_reserved: Decimal = amounts.ZERO
    delta_reserved: Decimal = amounts.ZERO

    def after(self, *, epsilon: Decimal, delta: Decimal) -> dict[str, Decimal]:
        """What would remain after committing a further `epsilon`, `delta`."""
        return {
            "epsilon_remaining": amounts.sub(self.epsilon_remaining, epsilon),
            "delta_remaining": amounts.sub(self.delta_remaining, delta),
        }

    def percent(self, which: str) -> dict[str, float]:
        """Spent and committed as percentages of the cap (display only)."""
        cap = getattr(self, f"{which}_cap")
        if cap <= 0:
            return {"spent": 0.0, "committed": 0.0}
        spent = float(getattr(self, f"{which}_spent") / cap * 100)
        committed = float(getattr(self, f"{which}_committed") / cap * 100)
        return {"spent": min(spent, 100.0), "committed": min(committed, 100.0)}


def budget_summary(*, project: Project) -> BudgetSummary:
    """The project's caps, spent, committed and remaining budget, from its ledger.

    Sums are exact Decimal arithmetic over the entries (no float accumulation).
    Every CHARGE or RELEASE settles its RESERVE for the same amount, so the open
    reservations are reserves - charges - releases.
    """
    sums = {kind: [amounts.ZERO, amounts.ZERO] for kind in LedgerEntry.Kind.values}
    for kind, epsilon, delta in LedgerEntry.objects.filter(project_id=project.pk).values_list(
        "kind", "epsilon", "delta"
    ):
        sums[kind][0] = amounts.add(sums[kind][0], epsilon)
        sums[kind][1] = amounts.add(sums[kind][1], delta)
    reserve, charge, release = sums["reserve"], sums["charge"], sums["release"]
    open_eps = amounts.sub(amounts.sub(reserve[0], charge[0]), release[0])
    open_delta = amounts.sub(amounts.sub(reserve[1], charge[1]), release[1])
    committed_eps = amounts.add(charge[0], open_eps)
    committed_delta = amounts.add(charge[1], open_delta)
    return BudgetSummary(
        epsilon_cap=project.epsilon_cap,
        delta_cap=project.delta_cap,
        epsilon_spent=charge[0],
        delta_spent=charge[1],
        epsilon_committed=committed_eps,
        delta_committed=committed_delta,
        epsilon_remaining=amounts.sub(project.epsilon_cap, committed_eps),
        delta_remaining=amounts.sub(project.delta_cap, committed_delta),
        epsilon_reserved=open_eps,
        delta_reserved=open_delta,
    )


def budget_request_get_for_member(
    *, budget_request_id: int, user: AbstractBaseUser | AnonymousUser
) -> BudgetRequest:
    """A budget request visible to `user` (a member of its project), else NotFound."""
    budget_request = (
        BudgetRequest.objects.select_related("project", "requested_by", "decided_by")
        .filter(pk=budget_request_id)
        .first()
    )
    if budget_request is None or not project_roles(project=budget_request.project, user=user):
        raise NotFound("No such budget request.")
    return budget_request


def budget_request_list_pending_for_reviewer(
    *, user: AbstractBaseUser | AnonymousUser
) -> QuerySet[BudgetRequest]:
    """Pending requests in projects where `user` is a reviewer, made by someone else."""
    if not user.is_authenticated:
        return BudgetRequest.objects.none()
    project_ids = Membership.objects.filter(user=user, role=Membership.Role.REVIEWER).values_list(
        "project_id", flat=True
    )
    return (
        BudgetRequest.objects.filter(
            project_id__in=project_ids, status=BudgetRequest.Status.PENDING
        )
        .exclude(requested_by=user)
        .select_related("project", "requested_by")
        .order_by("requested_at", "id")
    )


def ledger_list_for_project(*, project: Project) -> QuerySet[LedgerEntry]:
    return (
        LedgerEntry.objects.filter(project=project)
        .select_related("actor", "request")
        .order_by("created_at", "id")
    )
