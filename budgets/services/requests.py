"""Budget requests: filed by an owner, decided by another reviewer, or withdrawn.

An approval RESERVEs the request's cost in the ledger; withdrawing an approved
request RELEASEs it.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from budgets.amounts import text as _text
from budgets.models import BudgetRequest, LedgerEntry, Membership, Project
from budgets.public_version import project_public_changed
from budgets.selectors import budget_summary as _ledger_totals
from budgets.selectors import cost_fits, entry_records
from budgets.services.ledger import _lock_request, _open_reservation, _settle, _user_roles
from budgets.services.validation import (
    TITLE_MAX_LENGTH,
    _check_comment,
    parse_cost,
    parse_mechanisms,
)
from dpportal.errors import (
    BudgetExceeded,
    InvalidTransition,
    NotFound,
    PermissionDenied,
    SelfApproval,
    ValidationFailed,
)
from dpportal.privacy.pld import within_cap

logger = logging.getLogger(__name__)


def budget_request_create(
    *,
    project: Project,
    title: str,
    epsilon: object,
    delta: object,
    summary: dict,
    spec_hash: str,
    requested_by: AbstractBaseUser,
    mechanisms: list | None = None,
) -> BudgetRequest:
    """File a request for `epsilon`/`delta` of `project`'s budget (status pending).

    No ledger entry yet: only an approval reserves budget. `mechanisms`: the
    release's mechanism records (MechanismRecord.to_dict); none means the tight
    accountant treats the request as a generic (epsilon, delta) mechanism.
    """
    title = (title or "").strip() if isinstance(title, str) else ""
    if not title:
        raise ValidationFailed(gettext("A budget request needs a title."))
    if len(title) > TITLE_MAX_LENGTH:
        raise ValidationFailed(
            gettext("The title may be at most %(limit)s characters.") % {"limit": TITLE_MAX_LENGTH}
        )
    eps, dlt = parse_cost(epsilon, delta)
    if not isinstance(summary, dict):
        raise ValidationFailed(gettext("The request's summary must be a JSON object."))
    if not isinstance(spec_hash, str) or not (0 < len(spec_hash) <= 64):
        raise ValidationFailed(
            gettext("The request needs the specification's hash (at most 64 chars).")
        )
    records = parse_mechanisms(mechanisms or [], epsilon=eps, delta=dlt)
    _check_alone_within_cap(project=project, epsilon=eps, delta=dlt, mechanisms=records)
    if Membership.Role.OWNER not in _user_roles(project=project, user=requested_by):
        raise PermissionDenied(gettext("Only an owner of the project may request budget."))
    budget_request = BudgetRequest.objects.create(
        project=project,
        title=title,
        epsilon=eps,
        delta=dlt,
        summary=summary,
        spec_hash=spec_hash,
        requested_by=requested_by,
        mechanisms=records,
    )
    logger.info("budget request %s filed in project %s", budget_request.pk, project.pk)
    return budget_request


def _check_alone_within_cap(
    *, project: Project, epsilon: Decimal, delta: Decimal, mechanisms: list
) -> None:
    """Refuse a release that alone would pass the project's cap by both valid bounds.

    By the plain sums first; a release of several Gaussian statistics can cost more
    than the cap by the sums and still fit by tight accounting, as approval decides.
    """
    if epsilon <= project.epsilon_cap and delta <= project.delta_cap:
        return
    alone = within_cap(
        [],
        entry_records(epsilon=epsilon, delta=delta, mechanisms=mechanisms),
        epsilon_cap=project.epsilon_cap,
        delta_cap=project.delta_cap,
        count_fit=False,
    )
    if alone.within:
        return
    if epsilon > project.epsilon_cap:
        raise ValidationFailed(
            gettext(
                "epsilon %(epsilon)s is above the project's epsilon cap of %(cap)s, "
                "even counted tightly."
            )
            % {"epsilon": _text(epsilon), "cap": _text(project.epsilon_cap)}
        )
    raise ValidationFailed(
        gettext(
            "delta %(delta)s is above the project's delta cap of %(cap)s, even counted tightly."
        )
        % {"delta": _text(delta), "cap": _text(project.delta_cap)}
    )


def _check_decision(
    *, project: Project, budget_request: BudgetRequest, reviewer: AbstractBaseUser, verb: str
) -> None:
    """May `reviewer` approve or reject (`verb`) this request now? Else the error that says why."""
    roles = _user_roles(project=project, user=reviewer)
    if not roles:
        raise NotFound(gettext("No such budget request."))
    if Membership.Role.REVIEWER not in roles:
        raise PermissionDenied(
            gettext("Only a reviewer of the project may approve budget requests.")
            if verb == "approve"
            else gettext("Only a reviewer of the project may reject budget requests.")
        )
    if budget_request.requested_by_id == reviewer.pk:
        raise SelfApproval(
            gettext(
                "You made this request, so another reviewer must decide on it "
                "(you may withdraw it instead)."
            )
            if verb == "reject"
            else gettext("You made this request, so another reviewer must decide on it.")
        )
    if budget_request.status != BudgetRequest.Status.PENDING:
        status = {"status": budget_request.get_status_display().lower()}
        raise InvalidTransition(
            gettext("This request is %(status)s; only a pending request can be approved.") % status
            if verb == "approve"
            else gettext("This request is %(status)s; only a pending request can be rejected.")
            % status
        )


def _record_decision(
    *, budget_request: BudgetRequest, status: str, reviewer: AbstractBaseUser, comment: str
) -> None:
    budget_request.status = status
    budget_request.decided_by = reviewer
    budget_request.decided_at = timezone.now()
    budget_request.comment = comment
    budget_request.save(update_fields=["status", "decided_by", "decided_at", "comment"])
    project_public_changed(slug=budget_request.project.slug)  # the registry's figures


def budget_request_approve(
    *, budget_request_id: int, reviewer: AbstractBaseUser, comment: str = ""
) -> BudgetRequest:
    """Approve a pending request and RESERVE its cost in the ledger.

    Refused (BudgetExceeded, naming what remains by both bounds) unless the project
    stays within its cap (epsilon_cap, delta_cap) after the request by EITHER the
    basic sums or the tight PLD accountant (budgets.selectors.accounting.cost_fits);
    the requester can never approve their own request.
    """
    comment = _check_comment(comment)
    with transaction.atomic():
        project, budget_request = _lock_request(budget_request_id=budget_request_id)
        _check_decision(
            project=project, budget_request=budget_request, reviewer=reviewer, verb="approve"
        )
        # Basic sums first, the PLD bound only if they do not fit (cost_fits); both
        # read the ledger under the project row lock taken above, so concurrent
        # approvals see each other's reservations whichever bound decides.
        fit = cost_fits(
            project=project,
            summary=_ledger_totals(project=project),
            epsilon=budget_request.epsilon,
            delta=budget_request.delta,
            mechanisms=budget_request.mechanisms,
        )
        if not fit.within:
            raise BudgetExceeded(fit.refusal(what=gettext("this request")), extra=fit.extra())
        _record_decision(
            budget_request=budget_request,
            status=BudgetRequest.Status.APPROVED,
            reviewer=reviewer,
            comment=comment,
        )
        LedgerEntry.objects.create(
            project=project,
            request=budget_request,
            kind=LedgerEntry.Kind.RESERVE,
            epsilon=budget_request.epsilon,
            delta=budget_request.delta,
            mechanisms=budget_request.mechanisms,
            actor=reviewer,
            note="approved",
        )
    logger.info("budget request %s approved; cost reserved", budget_request.pk)
    return budget_request


def budget_request_reject(
    *, budget_request_id: int, reviewer: AbstractBaseUser, comment: str
) -> BudgetRequest:
    """Reject a pending request with a reason (no ledger entry)."""
    comment = _check_comment(comment, required=True)
    with transaction.atomic():
        project, budget_request = _lock_request(budget_request_id=budget_request_id)
        _check_decision(
            project=project, budget_request=budget_request, reviewer=reviewer, verb="reject"
        )
        _record_decision(
            budget_request=budget_request,
            status=BudgetRequest.Status.REJECTED,
            reviewer=reviewer,
            comment=comment,
        )
    logger.info("budget request %s rejected", budget_request.pk)
    return budget_request


def budget_request_withdraw(*, budget_request_id: int, actor: AbstractBaseUser) -> BudgetRequest:
    """Withdraw a request: pending -> withdrawn, or approved -> withdrawn + RELEASE.

    Only the requester or an owner of the project may withdraw. An approved request
    whose reservation was already charged (noise drawn) can never be withdrawn.
    """
    with transaction.atomic():
        project, budget_request = _lock_request(budget_request_id=budget_request_id)
        roles = _user_roles(project=project, user=actor)
        if not roles:
            raise NotFound(gettext("No such budget request."))
        if budget_request.requested_by_id != actor.pk and Membership.Role.OWNER not in roles:
            raise PermissionDenied(
                gettext("Only the requester or an owner may withdraw this request.")
            )
        if budget_request.status == BudgetRequest.Status.PENDING:
            pass
        elif budget_request.status == BudgetRequest.Status.APPROVED:
            reserve = _open_reservation(budget_request=budget_request)
            if reserve is None:
                raise InvalidTransition(
                    gettext(
                        "This request's budget has already been spent or returned; "
                        "it can no longer be withdrawn."
                    )
                )
            _settle(
                project=project,
                budget_request=budget_request,
                reserve=reserve,
                kind=LedgerEntry.Kind.RELEASE,
                actor=actor,
                note="withdrawn",
            )
        else:
            raise InvalidTransition(
                gettext(
                    "This request is %(status)s; only a pending or approved request can be "
                    "withdrawn."
                )
                % {"status": budget_request.get_status_display().lower()}
            )
        budget_request.status = BudgetRequest.Status.WITHDRAWN
        budget_request.save(update_fields=["status"])
        project_public_changed(slug=budget_request.project.slug)  # the registry's figures
    logger.info("budget request %s withdrawn", budget_request.pk)
    return budget_request
