"""The reviewer's page of a budget request: its review document, and the decision.

Here and not in budgets because the page shows a release's review document and a
decision moves the release's state machine (releases.services.review); its
addresses are under /projects/requests/ (releases/review/urls.py).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from budgets import selectors as budget_selectors
from budgets.forms import DecisionForm
from budgets.models import BudgetRequest, Membership
from budgets.views import first_error, members_post_only
from dpportal.errors import ApplicationError, NotFound, PermissionDenied
from releases.review.selectors import review_document_get
from releases.services.review import budget_request_decide


@login_required
@require_GET
def request_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    budget_request = budget_selectors.budget_request_get_for_member(
        budget_request_id=pk, user=request.user
    )
    return _render_request(request, budget_request, DecisionForm())


def _render_request(
    request: HttpRequest, budget_request: BudgetRequest, form: DecisionForm, status: int = 200
) -> HttpResponse:
    roles = budget_selectors.project_roles(project=budget_request.project, user=request.user)
    context = dict(
        budget_request=budget_request,
        document=review_document_get(budget_request=budget_request),
        form=form,
        project=budget_request.project,
        can_decide=(
            Membership.Role.REVIEWER in roles
            and budget_request.requested_by_id != request.user.pk
            and budget_request.status == BudgetRequest.Status.PENDING
        ),
        is_requester=budget_request.requested_by_id == request.user.pk,
    )
    return render(request, "budgets/request_detail.html", context, status=status)


def _decide(request: HttpRequest, pk: int, *, approve: bool) -> HttpResponse:
    budget_request = budget_selectors.budget_request_get_for_member(
        budget_request_id=pk, user=request.user
    )
    form = DecisionForm(request.POST)
    if not form.is_valid():
        form.add_error(None, first_error(form))
        return _render_request(request, budget_request, form, status=400)
    try:
        budget_request_decide(
            budget_request=budget_request,
            reviewer=request.user,
            approve=approve,
            comment=form.cleaned_data["comment"],
        )
    except (NotFound, PermissionDenied):
        raise
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        budget_request.refresh_from_db()
        return _render_request(request, budget_request, form, status=exc.status_code)
    done = (
        gettext("Request “%(title)s” approved; its cost is reserved.")
        if approve
        else gettext("Request “%(title)s” rejected.")
    )
    messages.success(request, done % {"title": budget_request.title})
    return redirect("review:request_detail", pk=budget_request.pk)


@members_post_only
def request_approve_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=True)


@members_post_only
def request_reject_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=False)
