"""The one state machine of a release (DESIGN.md section 2).

Every move goes through `release_transition`, which checks the move against
TRANSITIONS, saves the status and appends a ReleaseEvent (who, when, from, to,
comment). The budget side of each move (request filed, reserved, released,
withdrawn) happens in the same transaction through budgets.services.

Lock order everywhere: the release row first, then (inside budgets.services)
the project row, then the budget request row.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from budgets import services as budget_services
from budgets.models import Membership
from budgets.public_version import project_public_changed
from budgets.selectors import project_roles, role_required
from dpportal import messages
from dpportal.errors import InvalidTransition, NotFound, PermissionDenied
from releases import dispatch
from releases.models import Release, ReleaseEvent, ReleaseResult
from releases.services import release_freeze

logger = logging.getLogger(__name__)

S = Release.Status

#: from-status -> the statuses it may move to. Nothing else is allowed.
TRANSITIONS: dict[str, frozenset[str]] = {
    S.DRAFT: frozenset({S.SUBMITTED, S.WITHDRAWN}),
    S.SUBMITTED: frozenset({S.APPROVED, S.REJECTED, S.WITHDRAWN}),
    S.APPROVED: frozenset({S.QUEUED, S.WITHDRAWN}),
    S.QUEUED: frozenset({S.COMPUTING, S.FAILED, S.WITHDRAWN}),
    S.COMPUTING: frozenset({S.COMPUTED, S.FAILED}),
    S.COMPUTED: frozenset({S.PUBLISHED}),
    S.PUBLISHED: frozenset(),
    S.REJECTED: frozenset(),
    S.WITHDRAWN: frozenset(),
    S.FAILED: frozenset(),
}

#: statuses in which the statistics and parameters may still be edited
EDITABLE = frozenset({S.DRAFT})
#: statuses in which a worker may (still) compute the release
COMPUTABLE = frozenset({S.QUEUED, S.COMPUTING})


def transition_allowed(*, from_status: str, to_status: str) -> bool:
    return to_status in TRANSITIONS.get(from_status, frozenset())


def release_transition(
    *,
    release: Release,
    to_status: str,
    actor: AbstractBaseUser | None = None,
    comment: str = "",
    extra_fields: tuple[str, ...] = (),
) -> Release:
    """Move `release` to `to_status` if the table allows it; save; append an event.

    The caller holds the release row lock (select_for_update) inside a transaction,
    so two concurrent moves cannot both start from the same status.
    """
    from_status = release.status
    if not transition_allowed(from_status=from_status, to_status=to_status):
        raise InvalidTransition(
            gettext("A release that is %(from_status)s cannot become %(to_status)s.")
            % {
                "from_status": str(Release.Status(from_status).label).lower(),
                "to_status": str(Release.Status(to_status).label).lower(),
            }
        )
    release.status = to_status
    release.save(update_fields=["status", *extra_fields])
    # the registry counts and lists releases by status (and publishing adds a page)
    project_public_changed(slug=release.project.slug)
    ReleaseEvent.objects.create(
        release=release,
        actor=actor if actor is not None and actor.is_authenticated else None,
        from_status=from_status,
        to_status=to_status,
        comment=comment or "",
    )
    logger.info("release %s: %s -> %s", release.pk, from_status, to_status)
    return release


def release_lock(*, release_id: int) -> Release:
    """The release row, locked until the end of the caller's transaction."""
    release = Release.objects.select_for_update().filter(pk=release_id).first()
    if release is None:
        raise NotFound(gettext("No such release."))
    return release


def _require_role(*, release: Release, user: AbstractBaseUser | None, role: str) -> None:
    if user is None:
        raise PermissionDenied(gettext("You must be logged in."))
    roles = project_roles(project=release.project, user=user)
    if not roles:
        raise NotFound(gettext("No such release."))
    if role not in roles:
        raise role_required({role})


def release_submit(*, release: Release, actor: AbstractBaseUser) -> Release:
    """draft -> submitted: validate, freeze the spec and its SHA-256, file the budget request.

    After this the statistics and parameters can no longer change (the builder
    services refuse any release that is not a draft).
    """
    with transaction.atomic():
        locked = release_lock(release_id=release.pk)
        _require_role(release=locked, user=actor, role=Membership.Role.OWNER)
        if locked.status != S.DRAFT:
            raise InvalidTransition(gettext("Only a draft release can be submitted."))
        frozen = release_freeze(release=locked)
        budget_request = budget_services.budget_request_create(
            project=locked.project,
            title=locked.title or locked.title_zh,
            epsilon=frozen.epsilon,
            delta=frozen.delta,
            summary=frozen.summary,
            spec_hash=frozen.spec_hash,
            requested_by=actor,
            mechanisms=frozen.mechanisms,
        )
        locked.spec = frozen.spec
        locked.spec_hash = frozen.spec_hash
        locked.epsilon = frozen.epsilon
        locked.delta = frozen.delta
        locked.budget_request = budget_request
        release_transition(
            release=locked,
            to_status=S.SUBMITTED,
            actor=actor,
            extra_fields=("spec", "spec_hash", "epsilon", "delta", "budget_request"),
        )
    return locked


def release_approve(*, release: Release, reviewer: AbstractBaseUser, comment: str = "") -> Release:
    """submitted -> approved -> queued, reserving the budget, in one transaction.

    The compute task is sent only after the transaction commits (on_commit): a
    worker must never see a release whose approval might still roll back. If the
    broker is down the release simply stays queued; the periodic re-dispatch
    sends it later.
    """
    with transaction.atomic():
        locked = release_lock(release_id=release.pk)
        if not project_roles(project=locked.project, user=reviewer):
            raise NotFound(gettext("No such release."))
        if locked.status != S.SUBMITTED or locked.budget_request_id is None:
            raise InvalidTransition(gettext("Only a submitted release can be approved."))
        budget_services.budget_request_approve(
            budget_request_id=locked.budget_request_id, reviewer=reviewer, comment=comment
        )
        release_transition(release=locked, to_status=S.APPROVED, actor=reviewer, comment=comment)
        locked.dispatched_at = timezone.now()
        release_transition(
            release=locked, to_status=S.QUEUED, actor=reviewer, extra_fields=("dispatched_at",)
        )
        release_id = locked.pk
        # robust: the approval is committed by then; a failing dispatch is logged by
        # Django and left to the periodic re-dispatch, never turned into an error
        transaction.on_commit(lambda: dispatch.release_dispatch(release_id=release_id), robust=True)
    return locked


def release_reject(*, release: Release, reviewer: AbstractBaseUser, comment: str) -> Release:
    """submitted -> rejected; the budget request is rejected with the comment."""
    with transaction.atomic():
        locked = release_lock(release_id=release.pk)
        if not project_roles(project=locked.project, user=reviewer):
            raise NotFound(gettext("No such release."))
        if locked.status != S.SUBMITTED or locked.budget_request_id is None:
            raise InvalidTransition(gettext("Only a submitted release can be rejected."))
        budget_services.budget_request_reject(
            budget_request_id=locked.budget_request_id, reviewer=reviewer, comment=comment
        )
        release_transition(release=locked, to_status=S.REJECTED, actor=reviewer, comment=comment)
    return locked


def release_withdraw(*, release: Release, actor: AbstractBaseUser) -> Release:
    """draft/submitted/approved/queued -> withdrawn; an open reservation is RELEASEd.

    Holding the release row lock, the move cannot race a worker: the worker takes
    the same lock to move queued -> computing, and a computing release can no
    longer be withdrawn.
    """
    with transaction.atomic():
        locked = release_lock(release_id=release.pk)
        _require_role(release=locked, user=actor, role=Membership.Role.OWNER)
        if not transition_allowed(from_status=locked.status, to_status=S.WITHDRAWN):
            raise InvalidTransition(
                gettext("A release that is %(status)s cannot be withdrawn.")
                % {"status": locked.get_status_display().lower()}
            )
        if locked.budget_request_id is not None:
            budget_services.budget_request_withdraw(
                budget_request_id=locked.budget_request_id, actor=actor
            )
        release_transition(release=locked, to_status=S.WITHDRAWN, actor=actor)
    return locked


def release_publish(*, release: Release, actor: AbstractBaseUser) -> Release:
    """computed -> published: the noisy results become public (owners only)."""
    with transaction.atomic():
        locked = release_lock(release_id=release.pk)
        _require_role(release=locked, user=actor, role=Membership.Role.OWNER)
        if locked.status != S.COMPUTED:
            raise InvalidTransition(gettext("Only a computed release can be published."))
        locked.published_at = timezone.now()
        locked.published_by = actor
        release_transition(
            release=locked,
            to_status=S.PUBLISHED,
            actor=actor,
            extra_fields=("published_at", "published_by"),
        )
    return locked


def release_fail(*, release_id: int, reason: messages.Message) -> Release | None:
    """queued/computing -> failed, and the reservation settled, in one transaction.

    THE rule for a failed computation's budget (the one place it is decided):

    - the dataset's rows had begun to be read (`data_read_at` set, by
      `release_data_read_begins`, in this attempt or any earlier one): the reservation
      is CHARGED. Whether a computation fails once it has seen the data may depend on
      the data, and everyone who can see the status sees the outcome: a refund would
      make that observation free. So a failure after reading costs what success costs
      (the noise never drawn is simply not published).
    - no row had been read (refused before reading: a changed specification, the
      stored copy missing or unreachable, the worker lost or the database away before
      the mark): the reservation is RELEASEd. Nothing the outcome depends on came
      from the rows.

    The mark is written and committed before the first row is read, so a worker killed
    mid-read, or a retry that gives up later for any reason, still charges.

    `reason`: message records (dpportal.messages), stored with their English so that
    each reader sees them in their own language; a last sentence saying whether the
    budget was spent or returned is added here. A release that already has results
    (they and their charge commit together), or is no longer computable, is left alone
    (idempotent).
    """
    with transaction.atomic():
        locked = release_lock(release_id=release_id)
        if locked.status not in COMPUTABLE or release_has_result(release=locked):
            return None
        charged = locked.data_read_at is not None
        reason = [*reason, messages.record(_SPENT if charged else _RETURNED)]
        english = messages.english(reason)
        locked.failure_reason = english[:2000]
        locked.failure_record = reason
        release_transition(
            release=locked,
            to_status=S.FAILED,
            comment=english[:500],
            extra_fields=("failure_reason", "failure_record"),
        )
        if locked.budget_request_id is not None:
            settle = budget_services.budget_charge if charged else budget_services.budget_release
            settle(
                budget_request=locked.budget_request,
                note="failed after reading the data" if charged else "failed",
            )
    logger.warning("release %s failed (%s)", release_id, "charged" if charged else "returned")
    return locked


_SPENT = gettext_noop(
    "The reserved budget was spent: the computation failed after it had read the dataset."
)
_RETURNED = gettext_noop("Nothing was spent: the reserved budget was returned.")


def release_data_read_begins(*, release_id: int) -> None:
    """Record, durably, that this release's rows are about to be read (before the first row).

    An autocommit UPDATE outside any transaction of the compute path: it is on disk
    before any row is read, so a failure from here on charges (`release_fail`). Kept
    across retries: the first attempt's mark stays. Raises if it cannot be written,
    so nothing is read unmarked.
    """
    Release.objects.filter(pk=release_id, data_read_at__isnull=True).update(
        data_read_at=timezone.now()
    )


# --- recovery: a worker that died mid-computation -------------------------------------
#
# A computing worker writes Release.heartbeat_at every few seconds (releases.compute,
# settings.DPPORTAL_COMPUTE_HEARTBEAT_SECONDS). A release whose heartbeat is older
# than the stall threshold has lost its worker: its page says "worker lost, resuming"
# and the periodic re-dispatch (celery beat) sends the compute task again. Sending it
# twice is harmless: the computation is idempotent (results, CHARGE and `computed`
# commit in one transaction, under the release row lock) and a delivery finding a
# live computation (its advisory lock held) does nothing.

#: queued longer than this -> the compute task is sent again (the broker was down)
REDISPATCH_QUEUED_AFTER = timedelta(seconds=60)


def compute_stalled_after() -> timedelta:
    """How long a computing release may go without a heartbeat before it is presumed lost."""
    return timedelta(seconds=float(settings.DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS))


def release_worker_lost(*, release: Release, now: datetime | None = None) -> bool:
    """True when the release is computing but its worker stopped writing its heartbeat."""
    if release.status != S.COMPUTING or release.heartbeat_at is None:
        return False
    return release.heartbeat_at <= (now or timezone.now()) - compute_stalled_after()


def release_redispatch_stale(
    *,
    queued_after: timedelta = REDISPATCH_QUEUED_AFTER,
    stalled_after: timedelta | None = None,
) -> int:
    """Send the compute task again for releases left queued or whose worker was lost.

    A release is sent at most once per threshold (dispatched_at), so a backlog of
    busy workers does not fill the queue with copies. Returns how many were sent.
    """
    now = timezone.now()
    stalled_after = compute_stalled_after() if stalled_after is None else stalled_after
    queued = Release.objects.filter(status=S.QUEUED).filter(
        models.Q(dispatched_at__isnull=True) | models.Q(dispatched_at__lte=now - queued_after)
    )
    lost = Release.objects.filter(status=S.COMPUTING).filter(
        models.Q(heartbeat_at__isnull=True) | models.Q(heartbeat_at__lte=now - stalled_after),
        models.Q(dispatched_at__isnull=True) | models.Q(dispatched_at__lte=now - stalled_after),
    )
    sent = 0
    for release_id in [*queued.values_list("pk", flat=True), *lost.values_list("pk", flat=True)]:
        if dispatch.release_dispatch(release_id=release_id):
            Release.objects.filter(pk=release_id).update(dispatched_at=now)
            sent += 1
    if sent:
        logger.info("re-dispatched %s release(s)", sent)
    return sent


def release_has_result(*, release: Release) -> bool:
    return ReleaseResult.objects.filter(release_id=release.pk).exists()
