"""Pages for projects, budgets, the reviewer inbox and the public registry.

Thin: each view parses a form, calls one service or selector, and shows the
ApplicationError's message next to the form when the service refuses. Access
errors (NotFound, PermissionDenied) become the 404/403 pages in the middleware.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import parse_etags
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from budgets import selectors, services
from budgets.forms import CapsForm, DecisionForm, MemberAddForm, ProjectCreateForm
from budgets.models import BudgetRequest, Membership, Project
from dpportal import formatting
from dpportal.errors import ApplicationError, NotFound, PermissionDenied
from releases import lifecycle
from releases.review_selectors import review_document_get


def members_post_only(view):
    """POST endpoints that change things: anonymous callers get 403, not a login page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            raise PermissionDenied(gettext("You must be logged in."))
        return view(request, *args, **kwargs)

    return require_POST(wrapper)


def _first_error(form) -> str:
    for field, errors in form.errors.items():
        label = form.fields[field].label or field.replace("_", " ") if field in form.fields else ""
        return f"{label}: {errors[0]}" if label else errors[0]
    return gettext("Please correct the form.")


# --- projects ----------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def project_create_view(request: HttpRequest) -> HttpResponse:
    form = ProjectCreateForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                project = services.project_create(created_by=request.user, **form.cleaned_data)
            except ApplicationError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(
                    request,
                    gettext("Project “%(name)s” created; you are its owner.")
                    % {"name": project.name},
                )
                return redirect("budgets:project_detail", slug=project.slug)
    return render(request, "budgets/project_form.html", {"form": form}, status=status)


def _project_context(request: HttpRequest, project: Project) -> dict:
    roles = selectors.project_roles(project=project, user=request.user)
    return {
        "project": project,
        "roles": roles,
        "is_owner": Membership.Role.OWNER in roles,
        "is_reviewer": Membership.Role.REVIEWER in roles,
        "summary": selectors.budget_summary(project=project),
    }


@login_required
@require_GET
def project_detail_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get_for_member(slug=slug, user=request.user)
    context = _project_context(request, project)
    context.update(
        datasets=project.datasets.order_by("-uploaded_at"),
        releases=project.releases.order_by("-created_at"),
        members=project.memberships.select_related("user").order_by("user__username", "role"),
        pending=project.budget_requests.filter(status=BudgetRequest.Status.PENDING),
        member_form=MemberAddForm(),
    )
    return render(request, "budgets/project_detail.html", context)


@members_post_only
def project_member_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get_for_member(
        slug=slug, user=request.user, roles={Membership.Role.OWNER}
    )
    form = MemberAddForm(request.POST)
    if not form.is_valid():
        messages.error(request, _first_error(form))
    else:
        try:
            services.project_member_add(project=project, actor=request.user, **form.cleaned_data)
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            role = Membership.Role(form.cleaned_data["role"]).label
            messages.success(
                request,
                gettext("%(user)s added as %(role)s.")
                % {"user": form.cleaned_data["username"], "role": role},
            )
    return redirect("budgets:project_detail", slug=project.slug)


def _project_for_budget_page(request: HttpRequest, slug: str) -> Project:
    if request.user.is_staff:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise NotFound(gettext("No such project."))
        return project
    return selectors.project_get_for_member(slug=slug, user=request.user)


@login_required
@require_http_methods(["GET", "POST"])
def project_budget_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project_for_budget_page(request, slug)
    status = 200
    caps_form = CapsForm(
        request.POST or None,
        # exact plain text in the inputs ('10', not '1E+1'; '0.000001', not 24 places)
        initial={
            "epsilon_cap": formatting.exact(project.epsilon_cap),
            "delta_cap": formatting.exact(project.delta_cap),
        },
    )
    if request.method == "POST":
        status = 400
        if not caps_form.is_valid():
            messages.error(request, _first_error(caps_form))
        else:
            try:
                services.project_caps_update(
                    project=project, actor=request.user, **caps_form.cleaned_data
                )
            except (NotFound, PermissionDenied):
                raise
            except ApplicationError as exc:
                messages.error(request, exc.message)
                status = exc.status_code
            else:
                messages.success(request, gettext("Caps changed; the change is recorded below."))
                return redirect("budgets:project_budget", slug=project.slug)
    context = _project_context(request, project)
    context.update(
        ledger=selectors.ledger_list_for_project(project=project),
        cap_changes=project.cap_changes.select_related("actor").order_by("-created_at", "-id"),
        caps_form=caps_form,
        can_change_caps=context["is_owner"] or request.user.is_staff,
        epsilon_percent=context["summary"].percent("epsilon"),
        delta_percent=context["summary"].percent("delta"),
    )
    return render(request, "budgets/project_budget.html", context, status=status)


# --- reviewer inbox and decisions ----------------------------------------------------


@login_required
@require_GET
def inbox_view(request: HttpRequest) -> HttpResponse:
    entries = selectors.inbox_list_for_reviewer(user=request.user)
    return render(request, "budgets/inbox.html", {"entries": entries})


@login_required
@require_GET
def request_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    budget_request = selectors.budget_request_get_for_member(
        budget_request_id=pk, user=request.user
    )
    return _render_request(request, budget_request, DecisionForm())


def _render_request(
    request: HttpRequest, budget_request: BudgetRequest, form: DecisionForm, status: int = 200
) -> HttpResponse:
    roles = selectors.project_roles(project=budget_request.project, user=request.user)
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
    budget_request = selectors.budget_request_get_for_member(
        budget_request_id=pk, user=request.user
    )
    form = DecisionForm(request.POST)
    if not form.is_valid():
        form.add_error(None, _first_error(form))
        return _render_request(request, budget_request, form, status=400)
    comment = form.cleaned_data["comment"]
    release = getattr(budget_request, "release", None)
    try:
        if release is not None:
            # The release's state machine moves with the budget, in one transaction.
            if approve:
                lifecycle.release_approve(release=release, reviewer=request.user, comment=comment)
            else:
                lifecycle.release_reject(release=release, reviewer=request.user, comment=comment)
        elif approve:
            services.budget_request_approve(
                budget_request_id=budget_request.pk, reviewer=request.user, comment=comment
            )
        else:
            services.budget_request_reject(
                budget_request_id=budget_request.pk, reviewer=request.user, comment=comment
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
    return redirect("budgets:request_detail", pk=budget_request.pk)


@members_post_only
def request_approve_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=True)


@members_post_only
def request_reject_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=False)


# --- the public registry ---------------------------------------------------------------


REGISTRY_MAX_AGE = 60


@require_GET
def registry_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get_public(slug=slug)
    registry, _ = selectors.project_registry_cached(project=project)
    return render(
        request,
        "budgets/registry.html",
        {
            "project": project,
            "registry": registry,
            "json_url": reverse("registry:project_json", kwargs={"slug": project.slug}),
        },
    )


@require_GET
def registry_json_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get_public(slug=slug)
    registry, version = selectors.project_registry_cached(project=project)
    etag = f'"{version}"'
    if etag in parse_etags(request.headers.get("If-None-Match", "")):
        response = HttpResponseNotModified()
    else:
        response = JsonResponse(registry)
    # public and the same for everyone: caches may keep it a minute, then revalidate
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={REGISTRY_MAX_AGE}"
    response["Access-Control-Allow-Origin"] = "*"
    return response
