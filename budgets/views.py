"""Pages for projects, budgets, the reviewer inbox and the public registry.

A budget request's own page and its decision are releases' (releases/review_views.py):
the page shows a release's review document, the decision moves its state machine.

Thin: each view parses a form, calls one service or selector, and shows the
ApplicationError's message next to the form when the service refuses. Access
errors (NotFound, PermissionDenied) become the 404/403 pages in the middleware.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header, parse_etags
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from budgets import selectors, services
from budgets.forms import CapsForm, MemberAddForm, ProjectCreateForm
from budgets.models import BudgetRequest, Membership, Project
from dpportal import formatting, public_cache
from dpportal.errors import ApplicationError, NotFound, PermissionDenied
from dpportal.product import product_version


def members_post_only(view):
    """POST endpoints that change things: anonymous callers get 403, not a login page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            raise PermissionDenied(gettext("You must be logged in."))
        return view(request, *args, **kwargs)

    return require_POST(wrapper)


def first_error(form) -> str:
    """A bound form's first error as one line, prefixed by its field's label."""
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
    summary = selectors.budget_summary(project=project)
    return {
        "project": project,
        "roles": roles,
        "is_owner": Membership.Role.OWNER in roles,
        "is_reviewer": Membership.Role.REVIEWER in roles,
        "summary": summary,
        # the one spend figure (tight at the cap's delta), the sums above its explanation
        "spend": selectors.project_spend_figure(project=project, summary=summary).to_json(),
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
        messages.error(request, first_error(form))
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
            messages.error(request, first_error(caps_form))
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


# --- the reviewer's inbox (a request's page and decisions: releases.review.views) ------


@login_required
@require_GET
def inbox_view(request: HttpRequest) -> HttpResponse:
    entries = selectors.inbox_list_for_reviewer(user=request.user)
    return render(request, "budgets/inbox.html", {"entries": entries})


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
            "deployment_url": (
                reverse("registry:project_deployment", kwargs={"slug": project.slug})
                if selectors.deployment_entry_available(registry=registry)
                else None
            ),
        },
    )


@require_GET
def registry_json_view(request: HttpRequest, slug: str) -> HttpResponse:
    # from the cache without a query when nothing changed (budgets.public_version)
    now = timezone.now()
    body, version, depends = selectors.project_registry_json_cached(slug=slug, now=now)
    etag = f'"{version}"'
    if public_cache.not_modified(request.headers.get("If-None-Match"), etag):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(body, content_type="application/json")
    # public and the same for everyone: caches may keep it a minute, then revalidate
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={REGISTRY_MAX_AGE}"
    response["Access-Control-Allow-Origin"] = "*"
    # the version names the UTC day: answered early until that day ends
    day = timezone.localdate(now, timezone=UTC)
    midnight = datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)
    return public_cache.offer(
        response, depends=depends, etag=etag, valid_until=midnight.timestamp()
    )


@require_GET
def registry_deployment_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The project's entry for the OpenDP Deployments Registry, as a JSON download.

    Public like the registry it is made from (the same project lookup, the same
    headers, its ETag the registry's version); a project with nothing published has
    no data product to register, so no entry (404).
    """
    project = selectors.project_get_public(slug=slug)
    registry, version = selectors.project_registry_cached(project=project)
    if not selectors.deployment_entry_available(registry=registry):
        raise NotFound(gettext("This project has published nothing yet: it has no entry."))
    etag = f'"deployment-{version}-{product_version()}"'
    if etag in parse_etags(request.headers.get("If-None-Match", "")):
        response = HttpResponseNotModified()
    else:
        site_url = request.build_absolute_uri("/").rstrip("/")
        entry = selectors.deployment_entry_from_registry(registry=registry, site_url=site_url)
        response = JsonResponse(entry, json_dumps_params={"ensure_ascii": False, "indent": 2})
        response["Content-Disposition"] = content_disposition_header(
            True, f"opendp-deployment-{project.slug}.json"
        )
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={REGISTRY_MAX_AGE}"
    response["Access-Control-Allow-Origin"] = "*"
    return response
