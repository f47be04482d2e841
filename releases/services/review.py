"""A reviewer's decision on a budget request: the one rule the page and the API both call.

A request that belongs to a release moves through the release's state machine
(releases.lifecycle: the budget and the release's status change in one
transaction, and an approval queues the computation); any other request is
decided by the budget services alone.

Not re-exported by `releases.services`: the lifecycle imports that package, and
this module imports the lifecycle. Import it as `releases.services.review`.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from budgets import services as budget_services
from budgets.models import BudgetRequest
from releases import lifecycle


def budget_request_decide(
    *, budget_request: BudgetRequest, reviewer: AbstractBaseUser, approve: bool, comment: str
) -> None:
    """Approve (reserving the cost) or reject `budget_request` as `reviewer`, with `comment`.

    Raises the services' ApplicationError (NotFound, PermissionDenied, SelfApproval,
    InvalidTransition, BudgetExceeded, ...) and changes nothing when refused.
    """
    release = getattr(budget_request, "release", None)  # reverse one-to-one: None if absent
    if release is not None:
        if approve:
            lifecycle.release_approve(release=release, reviewer=reviewer, comment=comment)
        else:
            lifecycle.release_reject(release=release, reviewer=reviewer, comment=comment)
    elif approve:
        budget_services.budget_request_approve(
            budget_request_id=budget_request.pk, reviewer=reviewer, comment=comment
        )
    else:
        budget_services.budget_request_reject(
            budget_request_id=budget_request.pk, reviewer=reviewer, comment=comment
        )
