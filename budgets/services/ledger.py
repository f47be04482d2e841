"""The ledger's moves after an approval: CHARGE (privacy spent) or RELEASE (returned).

Also the lock every budget write takes (project row first, then the request row).
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from budgets.models import BudgetRequest, LedgerEntry, Membership, Project
from budgets.public_version import project_public_changed
from budgets.services.validation import _check_note
from dpportal.errors import InvalidTransition, NotFound

logger = logging.getLogger(__name__)


def _lock_request(*, budget_request_id: object) -> tuple[Project, BudgetRequest]:
    """Lock the project row FIRST, then the request row (one lock order everywhere).

    Every write that can move a project's committed budget takes the project row
    lock, so checks against the caps see every earlier approval (no overspend race).
    """
    try:
        request_id = int(budget_request_id)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise NotFound(gettext("No such budget request."))
    project_id = (
        BudgetRequest.objects.filter(pk=request_id).values_list("project_id", flat=True).first()
    )
    if project_id is None:
        raise NotFound(gettext("No such budget request."))
    project = Project.objects.select_for_update().get(pk=project_id)
    budget_request = BudgetRequest.objects.select_for_update().get(pk=request_id)
    return project, budget_request


def _user_roles(*, project: Project, user: AbstractBaseUser | None) -> set[str]:
    if user is None or not getattr(user, "is_authenticated", False):
        return set()
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def _open_reservation(*, budget_request: BudgetRequest) -> LedgerEntry | None:
    entries = list(LedgerEntry.objects.filter(request=budget_request))
    reserve = next((e for e in entries if e.kind == LedgerEntry.Kind.RESERVE), None)
    settled = any(e.kind != LedgerEntry.Kind.RESERVE for e in entries)
    return None if reserve is None or settled else reserve


def budget_charge(
    *, budget_request: BudgetRequest, actor: AbstractBaseUser | None = None, note: str = ""
) -> LedgerEntry:
    """Convert the request's open reservation into a CHARGE (privacy is now spent).

    Called by the release worker inside the transaction that stores the noisy
    results, so the charge and the results commit together or not at all; nests
    as a savepoint and never commits on its own.
    """
    return _settle_open(
        budget_request=budget_request,
        kind=LedgerEntry.Kind.CHARGE,
        actor=actor,
        note=_check_note(note) or "results stored",
    )


def budget_release(
    *, budget_request: BudgetRequest, actor: AbstractBaseUser | None = None, note: str = ""
) -> LedgerEntry:
    """Return the request's open reservation (withdrawal, or a failure before any row was
    read: releases.lifecycle.release_fail decides which failures)."""
    return _settle_open(
        budget_request=budget_request,
        kind=LedgerEntry.Kind.RELEASE,
        actor=actor,
        note=_check_note(note) or "reservation returned",
    )


def _settle_open(
    *, budget_request: BudgetRequest, kind: str, actor: AbstractBaseUser | None, note: str
) -> LedgerEntry:
    with transaction.atomic():
        project, locked = _lock_request(budget_request_id=budget_request.pk)
        # Idempotency: the locked row and the ledger decide, never the caller's copy.
        if locked.status != BudgetRequest.Status.APPROVED:
            raise InvalidTransition(
                gettext("This request is %(status)s; it holds no reservation to settle.")
                % {"status": locked.get_status_display().lower()}
            )
        reserve = _open_reservation(budget_request=locked)
        if reserve is None:
            raise InvalidTransition(
                gettext("This request has no open reservation: it was already charged or returned.")
            )
        entry = _settle(
            project=project,
            budget_request=locked,
            reserve=reserve,
            kind=kind,
            actor=actor,
            note=note,
        )
    logger.info("budget request %s settled: %s", budget_request.pk, kind)
    return entry


def _settle(
    *,
    project: Project,
    budget_request: BudgetRequest,
    reserve: LedgerEntry,
    kind: str,
    actor: AbstractBaseUser | None,
    note: str,
) -> LedgerEntry:
    try:
        with transaction.atomic():
            project_public_changed(slug=project.slug)  # the registry's figures
            return LedgerEntry.objects.create(
                project=project,
                request=budget_request,
                kind=kind,
                epsilon=reserve.epsilon,
                delta=reserve.delta,
                mechanisms=reserve.mechanisms,
                actor=actor if actor is not None and actor.is_authenticated else None,
                note=note,
            )
    except IntegrityError:
        # The partial unique index: a second settlement of one reservation.
        raise InvalidTransition(
            gettext("This request's reservation was already charged or returned.")
        )
