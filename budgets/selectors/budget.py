"""Reads of the budget: exact totals from the ledger, budget requests, ledger entries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import ClassVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Q, QuerySet, Sum
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry, Membership, Project
from budgets.selectors.accounting import cost_fits
from budgets.selectors.projects import project_roles
from budgets.selectors.summary import BudgetSummary
from dpportal.errors import NotFound


def _ledger_sums(entries: QuerySet[LedgerEntry]) -> dict[int, dict[str, list[Decimal]]]:
    """Exact (epsilon, delta) sums of `entries` per project and kind, in ONE query.

    PostgreSQL adds NUMERIC exactly, so it sums; SQLite (the embedded default)
    keeps decimals as floats, so there each row's exact Decimal is added here.
    """
    out: dict[int, dict[str, list[Decimal]]] = {}

    def bucket(project_id: int, kind: str) -> list[Decimal]:
        kinds = out.setdefault(
            project_id, {k: [amounts.ZERO, amounts.ZERO] for k in LedgerEntry.Kind.values}
        )
        return kinds[kind]

    entries = entries.order_by()
    if connection.vendor == "postgresql":
        rows = entries.values("project_id", "kind").annotate(eps=Sum("epsilon"), delta=Sum("delta"))
        for project_id, kind, epsilon, delta in rows.values_list(
            "project_id", "kind", "eps", "delta"
        ):
            bucket(project_id, kind)[:] = [epsilon, delta]
        return out
    for project_id, kind, epsilon, delta in entries.values_list(
        "project_id", "kind", "epsilon", "delta"
    ):
        sums = bucket(project_id, kind)
        sums[0] = amounts.add(sums[0], epsilon)
        sums[1] = amounts.add(sums[1], delta)
    return out


def _summary(
    *, epsilon_cap: Decimal, delta_cap: Decimal, sums: dict[str, list[Decimal]] | None
) -> BudgetSummary:
    """Caps and ledger sums to a BudgetSummary.

    Every CHARGE or RELEASE settles its RESERVE for the same amount, so the open
    reservations are reserves - charges - releases.
    """
    zero = [amounts.ZERO, amounts.ZERO]
    sums = sums or {}
    reserve = sums.get("reserve", zero)
    charge = sums.get("charge", zero)
    release = sums.get("release", zero)
    open_eps = amounts.sub(amounts.sub(reserve[0], charge[0]), release[0])
    open_delta = amounts.sub(amounts.sub(reserve[1], charge[1]), release[1])
    committed_eps = amounts.add(charge[0], open_eps)
    committed_delta = amounts.add(charge[1], open_delta)
    return BudgetSummary(
        epsilon_cap=epsilon_cap,
        delta_cap=delta_cap,
        epsilon_spent=charge[0],
        delta_spent=charge[1],
        epsilon_committed=committed_eps,
        delta_committed=committed_delta,
        epsilon_remaining=amounts.sub(epsilon_cap, committed_eps),
        delta_remaining=amounts.sub(delta_cap, committed_delta),
        epsilon_reserved=open_eps,
        delta_reserved=open_delta,
    )


def budget_summary(*, project: Project) -> BudgetSummary:
    """The project's caps, spent, committed and remaining budget, from its ledger.

    Sums are exact Decimal arithmetic over the entries (no float accumulation).
    """
    sums = _ledger_sums(LedgerEntry.objects.filter(project_id=project.pk))
    return _summary(
        epsilon_cap=project.epsilon_cap, delta_cap=project.delta_cap, sums=sums.get(project.pk)
    )


def budget_summaries(*, projects: Iterable[Project]) -> dict[int, BudgetSummary]:
    """`budget_summary` of several projects at once (one query whatever their number)."""
    by_id = {p.pk: p for p in projects}
    sums = _ledger_sums(LedgerEntry.objects.filter(project_id__in=list(by_id)))
    return {
        pk: _summary(epsilon_cap=p.epsilon_cap, delta_cap=p.delta_cap, sums=sums.get(pk))
        for pk, p in by_id.items()
    }


class MomentLabels:
    """Labels of a standing's two columns, by the moment it is read at (LABELS[moment])."""

    LABELS: ClassVar[dict[str, tuple[str, ...]]]
    moment: str

    @property
    def before_label(self) -> str:
        return str(self.LABELS[self.moment][0])  # the active language's (the labels are lazy)

    @property
    def after_label(self) -> str:
        return str(self.LABELS[self.moment][1])


@dataclass(frozen=True)
class BudgetStanding(MomentLabels):
    """A request's cost against its project's remaining budget, at the moment that matters.

    `moment` says which: "now" for a pending request (before = remaining now, after =
    what approving would leave); "approval" for a request whose cost was reserved
    (the budget just before its RESERVE entry, and after it: never subtracted twice,
    whatever was approved since); "rejection" at the rejection (nothing reserved);
    "withdrawn" for a request withdrawn before any decision (nothing reserved).
    """

    moment: str
    at: datetime | None
    epsilon_cost: Decimal
    delta_cost: Decimal
    epsilon_cap: Decimal
    delta_cap: Decimal
    epsilon_before: Decimal
    delta_before: Decimal
    epsilon_after: Decimal
    delta_after: Decimal
    # pending only: the tight (PLD) accountant admits the cost although the sums do not
    fits_tight: bool = False
    # the remaining epsilon by the one spend figure (cap - the tight loss at the cap's
    # delta; spend.standing_with_spend), before and after; None: not accounted. The
    # epsilon_before/after above are the basic sums, the explanation beside it.
    tight_epsilon_before: Decimal | None = None
    tight_epsilon_after: Decimal | None = None

    LABELS: ClassVar[dict[str, tuple[str, str, str]]] = {
        "now": (_("Remaining now"), _("Remaining after approval"), ""),
        "approval": (
            _("Remaining before the approval"),
            _("Remaining after the approval"),
            _(
                "As the budget stood when this request was approved: its cost was reserved then "
                "and is not subtracted again."
            ),
        ),
        "rejection": (
            _("Remaining at the rejection"),
            _("Remaining after the rejection"),
            _("As the budget stood when this request was rejected: nothing was reserved."),
        ),
        "withdrawn": (
            _("Remaining now"),
            _("Remaining after (nothing reserved)"),
            _("Withdrawn before any decision: nothing was reserved."),
        ),
    }

    @property
    def note(self) -> str:
        return str(self.LABELS[self.moment][2])

    @property
    def fits(self) -> bool:
        """Whether the cost fits (pending: approving would not be refused, by either bound)."""
        return (self.epsilon_after >= 0 and self.delta_after >= 0) or self.fits_tight


def _caps_at(*, project: Project, at: datetime) -> tuple[Decimal, Decimal]:
    """The project's caps at `at`: the first later change's old caps, else today's."""
    later = project.cap_changes.filter(created_at__gt=at).order_by("created_at", "id").first()
    if later is not None:
        return later.old_epsilon_cap, later.old_delta_cap
    return project.epsilon_cap, project.delta_cap


def _standing(
    *,
    budget_request: BudgetRequest,
    moment: str,
    at: datetime | None,
    summary: BudgetSummary,
    subtract: bool,
) -> BudgetStanding:
    eps_cost, delta_cost = budget_request.epsilon, budget_request.delta
    before_eps, before_delta = summary.epsilon_remaining, summary.delta_remaining
    return BudgetStanding(
        moment=moment,
        at=at,
        epsilon_cost=eps_cost,
        delta_cost=delta_cost,
        epsilon_cap=summary.epsilon_cap,
        delta_cap=summary.delta_cap,
        epsilon_before=before_eps,
        delta_before=before_delta,
        epsilon_after=amounts.sub(before_eps, eps_cost) if subtract else before_eps,
        delta_after=amounts.sub(before_delta, delta_cost) if subtract else before_delta,
    )


def budget_standing(
    *, budget_request: BudgetRequest, summary: BudgetSummary | None = None
) -> BudgetStanding:
    """The budget before and after `budget_request` (see BudgetStanding), exact.

    A decided request is measured from the ledger entries written before its
    decision (approvals, charges and releases lock the project row, so the
    entries' ids follow the order of their commits) and the caps of that time.
    `summary`, the project's current budget, may be passed by a list page.
    """
    project = budget_request.project
    status = budget_request.status
    if status == BudgetRequest.Status.PENDING:
        now = summary or budget_summary(project=project)
        standing = _standing(
            budget_request=budget_request, moment="now", at=None, summary=now, subtract=True
        )
        if standing.epsilon_after >= 0 and standing.delta_after >= 0:
            return standing
        # the approval's own verdict (cost_fits): the PLD bound may admit what the sums do not
        fit = cost_fits(
            project=project,
            summary=now,
            epsilon=budget_request.epsilon,
            delta=budget_request.delta,
            mechanisms=budget_request.mechanisms,
            cached=True,  # a page: kept per ledger state (accounting.cap_check_cached)
        )
        return replace(standing, fits_tight=fit.within)
    reserve = (
        LedgerEntry.objects.filter(request=budget_request, kind=LedgerEntry.Kind.RESERVE)
        .only("pk", "created_at")
        .first()
    )
    if reserve is not None:
        moment, at, subtract = "approval", reserve.created_at, True
        earlier = Q(pk__lt=reserve.pk)
    elif budget_request.decided_at is not None:
        moment, at, subtract = "rejection", budget_request.decided_at, False
        earlier = Q(created_at__lte=budget_request.decided_at)
    else:
        now = summary or budget_summary(project=project)
        return _standing(
            budget_request=budget_request, moment="withdrawn", at=None, summary=now, subtract=False
        )
    sums = _ledger_sums(LedgerEntry.objects.filter(earlier, project_id=project.pk))
    epsilon_cap, delta_cap = _caps_at(project=project, at=at)
    then = _summary(epsilon_cap=epsilon_cap, delta_cap=delta_cap, sums=sums.get(project.pk))
    return _standing(
        budget_request=budget_request, moment=moment, at=at, summary=then, subtract=subtract
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
        raise NotFound(gettext("No such budget request."))
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
        # the release (a reverse one-to-one) too: list pages link every request to it
        .select_related("project", "requested_by", "release")
        .order_by("requested_at", "id")
    )


def ledger_list_for_project(*, project: Project) -> QuerySet[LedgerEntry]:
    return (
        LedgerEntry.objects.filter(project=project)
        .select_related("actor", "request")
        .order_by("created_at", "id")
    )
