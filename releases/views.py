"""Pages of releases for the project's members: builder, detail (status, results), actions."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from budgets.models import Membership
from budgets.selectors import (
    budget_summary,
    project_get_for_member,
    project_has_reviewer,
    project_roles,
)
from datasets.models import Column, Dataset
from datasets.selectors import dataset_get_for_member, dataset_usability_problems
from dpportal import statistic_names
from dpportal.bilingual import category_label
from dpportal.errors import ApplicationError, NotFound, PermissionDenied, ValidationFailed
from releases import lifecycle, private_check, rows_tradeoff, selectors, services
from releases.builder_text import builder_text
from releases.models import Release
from releases.opendp_program import opendp_program, program_filename
from releases.presentation import results_for_display
from releases.public import options as public_options
from releases.public.options import page_parse
from releases.public.views import release_preview_html
from releases.services.bounds_declare import bounds_declare
from releases.services.declare_keys import release_declare_found_keys

OWNER = {Membership.Role.OWNER}


def _builder_payload(request: HttpRequest) -> dict[str, Any]:
    if request.content_type == "application/json":
        raw = request.body.decode("utf-8", errors="replace")
    else:
        raw = request.POST.get("payload", "")
    try:
        data = json.loads(raw or "{}")
    except (json.JSONDecodeError, RecursionError):  # malformed, or nested past any real form
        return {}
    return data if isinstance(data, dict) else {}


def _datasets_context(project) -> list[dict[str, Any]]:
    """Ready datasets, newest first, with their columns' PUBLIC domains only (never the
    private profile), and for each whether releases may use it yet and if not, why."""
    out = []
    # every dataset's public (and undeclared) columns in one more query each, not per dataset
    public_columns = Column.objects.exclude(
        kind__in=[Column.Kind.EXCLUDED, Column.Kind.UNDECLARED]
    ).order_by("position")
    ready = Dataset.objects.filter(project=project, status=Dataset.Status.READY)
    datasets = ready.prefetch_related(
        Prefetch("columns", queryset=public_columns, to_attr="public_columns")
    )
    datasets = list(datasets.order_by("-uploaded_at", "-pk"))
    problems = dataset_usability_problems(datasets=datasets)
    for dataset in datasets:
        problem = problems[dataset.pk]
        out.append(
            {
                "id": dataset.pk,
                "name": dataset.name,
                "usable": problem is None,
                "problem": problem or "",
                "id_column": dataset.id_column,
                "contribution_bound": dataset.contribution_bound,
                "columns": [
                    {
                        "name": c.name,
                        "kind": c.kind,
                        "categories": [str(x) for x in c.categories or []],
                        # the codes' labels in the reader's language (the category picker)
                        "category_names": {
                            str(x): category_label(c.category_labels, str(x))
                            for x in c.categories or []
                            if str(x) in (c.category_labels or {})
                        },
                        "lower": str(c.lower) if c.lower is not None else None,
                        "upper": str(c.upper) if c.upper is not None else None,
                        "bin_edges": [str(e) for e in c.bin_edges or []],
                    }
                    for c in dataset.public_columns
                ],
            }
        )
    return out


def _render_builder(request, *, project, release=None, data=None, error="", status=200):
    initial = (
        data
        if data is not None
        else (services.release_form_data(release=release) if release else {})
    )
    datasets = _datasets_context(project)
    usable = [d for d in datasets if d["usable"]]
    if not initial.get("dataset") and usable:
        # a new release opens on the newest dataset that releases may use
        initial = {**initial, "dataset": usable[0]["id"]}
    return render(
        request,
        "releases/builder.html",
        {
            "project": project,
            "release": release,
            "datasets": datasets,
            "usable_datasets": usable,
            "initial": initial,
            "no_reviewer": not project_has_reviewer(project=project, other_than=request.user),
            "budget": budget_summary(project=project),
            "error": error,
            "preview_url": reverse("releases:preview", args=[project.slug]),
            "check_url": reverse("releases:private_check", args=[project.slug]),
            "builder_text": builder_text(),
            "cell_limits": services.plan_cell_limits(),
        },
        status=status,
    )


@login_required
def release_builder_view(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
    if request.method == "POST":
        data = _builder_payload(request)
        try:
            release = services.release_save_draft(project=project, actor=request.user, data=data)
        except ApplicationError as exc:
            return _render_builder(
                request, project=project, data=data, error=exc.message, status=400
            )
        messages.success(
            request, gettext("Draft saved. Check the preview, then submit it for review.")
        )
        return redirect("releases:detail", release.pk)
    return _render_builder(request, project=project)


@login_required
def release_edit_view(request: HttpRequest, release_id: int) -> HttpResponse:
    release = selectors.release_get_for_member(
        release_id=release_id, user=request.user, roles=OWNER
    )
    project = release.project
    if release.status != Release.Status.DRAFT:
        messages.error(request, gettext("This release was submitted: it can no longer be edited."))
        return redirect("releases:detail", release.pk)
    if request.method == "POST":
        data = _builder_payload(request)
        try:
            services.release_save_draft(
                project=project, actor=request.user, data=data, release=release
            )
        except ApplicationError as exc:
            return _render_builder(
                request, project=project, release=release, data=data, error=exc.message, status=400
            )
        messages.success(request, gettext("Draft saved."))
        return redirect("releases:detail", release.pk)
    return _render_builder(request, project=project, release=release)


@login_required
@require_POST
def release_preview_view(request: HttpRequest, project_slug: str) -> JsonResponse:
    """The live preview: the builder's current values in, half-widths and cost out
    (with ?chart=1 the accuracy-versus-epsilon chart's data too)."""
    project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
    try:
        plan = services.release_plan_parse(project=project, data=_builder_payload(request))
        preview = services.plan_preview(plan=plan, chart=request.GET.get("chart") == "1")
    except ApplicationError as exc:
        return JsonResponse({"ok": False, "error": exc.message}, status=400)
    preview["cells_text"] = services.plan_cells_text(statistics=plan.statistics)
    return JsonResponse({"ok": True, "preview": preview})


@require_POST
@never_cache
def release_private_check_view(request: HttpRequest, project_slug: str) -> JsonResponse:
    """The owner's private check of the builder's draft against the data (true values:
    releases.private_check). Owners of the dataset's project only; the answer lives in
    this response alone (no-store), is never stored or logged. Anyone else: 404 (not a
    member, anonymous included: no login redirect that would confirm the project) or 403
    (a member who is not an owner), raised to the error middleware."""
    project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
    try:
        plan = services.release_plan_parse(project=project, data=_builder_payload(request))
    except ValidationFailed as exc:
        return JsonResponse({"ok": False, "error": exc.message}, status=400)
    # the dataset's own owner check (404 / 403 as for its other owner-only pages)
    dataset_get_for_member(dataset_id=plan.dataset.pk, user=request.user, roles=OWNER)
    try:
        check = private_check.check_plan(plan=plan)
    except ValidationFailed as exc:
        response = JsonResponse({"ok": False, "error": exc.message}, status=400)
    else:
        response = JsonResponse({"ok": True, "private": True, "check": check})
    response["Cache-Control"] = "no-store, private"
    return response


#: how long the owner's results page keeps a page of results (results never change)
RESULTS_CACHE_SECONDS = 24 * 3600


def _results_page(result, *, page: int) -> list[dict[str, Any]]:
    """Page `page` of a stored result for display, cached: a result never changes once
    computed, and reading its intervals back costs up to seconds for the largest."""
    key = f"results:display:2:{result.pk}:{page}:{settings.RESULT_PAGE_CELLS}"
    items = cache.get(key)
    if items is None:
        items = results_for_display(result.payload, page=page, spec=result.release.spec)
        cache.set(key, items, RESULTS_CACHE_SECONDS)
    return items


def _named(items: list[dict[str, Any]], statistics: list) -> list[dict[str, Any]]:
    """The results' statistics and their one cell over all rows named in the reader's
    language (the statistics' rows are frozen once submitted)."""
    labels = {s.position: statistic_names.label_of(s) for s in statistics}
    named = []
    for item in items:
        rows = item.get("rows") or []
        if len(rows) == 1:
            rows = [{**rows[0], "cell": statistic_names.cell_name(str(rows[0].get("cell")))}]
        named.append(
            {**item, "label": labels.get(item.get("position"), item["label"]), "rows": rows}
        )
    return named


@login_required
@require_GET
def release_detail_view(request: HttpRequest, release_id: int) -> HttpResponse:
    release = selectors.release_get_for_member(release_id=release_id, user=request.user)
    roles = project_roles(project=release.project, user=request.user)
    try:
        page = page_parse(query=request.GET.dict())
    except ValidationFailed as exc:
        return HttpResponseBadRequest(exc.message, content_type="text/plain; charset=utf-8")
    preview = None
    preview_error = ""
    if release.budget_request_id:
        summary = release.budget_request.summary
        # a request filed outside the builder may carry no per-statistic preview
        if isinstance(summary, dict) and isinstance(summary.get("statistics"), list):
            preview = summary
    elif release.status == Release.Status.DRAFT:
        try:
            preview = services.release_preview(
                project=release.project,
                data=services.release_form_data(release=release),
                accounting=False,  # the detail page shows half-widths and cost only
            )
        except ApplicationError as exc:
            preview_error = exc.message
    result = selectors.release_result_get(release=release)
    statistics = list(
        release.statistics.select_related("column", "column2", "group_column", "group_column2")
    )
    is_owner = Membership.Role.OWNER in roles
    results = _named(_results_page(result, page=page), statistics) if result else None
    share_error = ""
    if results and is_owner:
        try:
            share = rows_tradeoff.share_parse(request.GET.get("share"))
        except ValidationFailed as exc:
            share_error = exc.message
            share = rows_tradeoff.share_parse(None)
        tradeoffs = rows_tradeoff.tradeoffs_for_owner(
            payload=result.payload,
            dataset_id=release.dataset_id,
            current_bound=release.dataset.contribution_bound,
            share=share,
        )
        results = [{**item, "tradeoff": tradeoffs.get(item.get("position"))} for item in results]
    return render(
        request,
        "releases/detail.html",
        {
            "release": release,
            "project": release.project,
            "is_owner": is_owner,
            "is_reviewer": Membership.Role.REVIEWER in roles,
            "no_reviewer": release.status in (Release.Status.DRAFT, Release.Status.SUBMITTED)
            and not project_has_reviewer(
                project=release.project,
                other_than=release.budget_request.requested_by
                if release.budget_request_id
                else request.user,
            ),
            "statistics": statistics,
            "events": release.events.select_related("actor"),
            "preview": preview,
            "preview_error": preview_error,
            "results": results,
            "share_error": share_error,
            "status": selectors.release_status(release=release),
        },
    )


@login_required
@require_GET
def release_opendp_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """The computed release as an OpenDP program (releases.opendp_program), for its project's
    owners only: anyone else gets 404 (a reviewer too: the program is the owner's tool for
    their own data), as does a release without results."""
    try:
        release = selectors.release_get_for_member(
            release_id=release_id, user=request.user, roles=OWNER
        )
    except PermissionDenied:
        raise NotFound(gettext("No such release.")) from None
    if selectors.release_result_get(release=release) is None or not release.spec:
        raise NotFound(gettext("No such release."))
    response = HttpResponse(opendp_program(release), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{program_filename(release)}"'
    response["Cache-Control"] = "no-store, private"
    return response


@login_required
@require_GET
def release_status_view(request: HttpRequest, release_id: int) -> JsonResponse:
    release = selectors.release_get_for_member(release_id=release_id, user=request.user)
    return JsonResponse(selectors.release_status(release=release))


def _action(request: HttpRequest, release_id: int, do, success: str) -> HttpResponse:
    release = selectors.release_get_for_member(release_id=release_id, user=request.user)
    try:
        do(release)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, success)
    return redirect("releases:detail", release.pk)


@login_required
@require_POST
def release_submit_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """Submit a draft. A project without a reviewer still takes the submission (the
    request waits until one is added); the message says so."""
    response = _action(
        request,
        release_id,
        lambda r: lifecycle.release_submit(release=r, actor=request.user),
        gettext("Submitted: a reviewer of the project will decide on its budget."),
    )
    release = Release.objects.select_related("project").get(pk=release_id)
    if release.status == Release.Status.SUBMITTED and not project_has_reviewer(
        project=release.project, other_than=request.user
    ):
        messages.warning(
            request,
            gettext(
                "This project has no reviewer yet: ask a project manager or admin to add "
                "one; the release cannot be reviewed until then."
            ),
        )
    return response


@login_required
@require_POST
def release_withdraw_view(request: HttpRequest, release_id: int) -> HttpResponse:
    return _action(
        request,
        release_id,
        lambda r: lifecycle.release_withdraw(release=r, actor=request.user),
        gettext("Withdrawn."),
    )


@login_required
@require_POST
def release_declare_bounds_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """Declare a computed private-bounds statistic's result as its column's bounds (the
    service checks the owner, the release and the statistic; a refusal is a message)."""
    try:
        position = int(str(request.POST.get("position", "")).strip())
    except ValueError:
        position = -1
    return _action(
        request,
        release_id,
        lambda r: bounds_declare(release=r, position=position, actor=request.user),
        gettext("Declared: later statistics of this column use these bounds and say where "
                "they came from."),
    )  # fmt: skip


@login_required
@require_POST
def release_declare_keys_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """Declare the keys a statistic published as its column's categories. Owners only."""
    release = selectors.release_get_for_member(
        release_id=release_id, user=request.user, roles=OWNER
    )
    try:
        column = release_declare_found_keys(
            project=release.project, release=release, position=request.POST.get("position"),
            actor=request.user,
        )  # fmt: skip
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            gettext(
                "Declared: the %(n)s published keys are now the categories of column "
                "%(column)s, recorded as published by this release."
            )
            % {"n": len(column.categories), "column": column.name},
        )
    return redirect("releases:detail", release.pk)


#: The value of the confirmation field the publish page posts; anything else publishes nothing.
PUBLISH_CONFIRMATION = "publish"


@login_required
@require_http_methods(["GET", "POST"])
@never_cache
def release_publish_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """GET: the exact public page of a computed release, bannered as a preview, with the
    confirmation form. POST with the confirmation: publish. Owners only."""
    release = selectors.release_get_for_member(
        release_id=release_id, user=request.user, roles=OWNER
    )
    if release.status == Release.Status.PUBLISHED:
        return redirect("public:release", release.project.slug, release.pk)
    if release.status != Release.Status.COMPUTED:
        messages.error(request, gettext("Only a computed release can be published."))
        return redirect("releases:detail", release.pk)
    if request.method == "POST":
        if request.POST.get("confirm") != PUBLISH_CONFIRMATION:
            messages.error(request, gettext("Check the preview, then confirm to publish."))
            return redirect("releases:publish", release.pk)
        return _action(
            request,
            release.pk,
            lambda r: lifecycle.release_publish(release=r, actor=request.user),
            gettext("Published: the results are now public."),
        )
    try:
        options = public_options.view_options_parse(query=request.GET.dict())
    except ApplicationError:
        options = public_options.view_options_parse(query={})
    html = release_preview_html(
        request,
        release=release,
        options=options,
        template="releases/publish_preview.html",
        extra={"confirmation": PUBLISH_CONFIRMATION},
    )
    return HttpResponse(html)


@login_required
@require_POST
def release_clone_view(request: HttpRequest, release_id: int) -> HttpResponse:
    """A rejected or withdrawn release as a new draft (owners): to its edit page."""
    release = selectors.release_get_for_member(
        release_id=release_id, user=request.user, roles=OWNER
    )
    try:
        clone = services.release_clone(release=release, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("releases:detail", release.pk)
    messages.success(
        request,
        gettext("A new draft with the same statistics. Check it, then submit it for review."),
    )
    return redirect("releases:edit", clone.pk)


@login_required
@require_POST
def release_approve_view(request: HttpRequest, release_id: int) -> HttpResponse:
    comment = request.POST.get("comment", "")
    return _action(
        request,
        release_id,
        lambda r: lifecycle.release_approve(release=r, reviewer=request.user, comment=comment),
        gettext("Approved: the release is queued for computation."),
    )


@login_required
@require_POST
def release_reject_view(request: HttpRequest, release_id: int) -> HttpResponse:
    comment = request.POST.get("comment", "")
    return _action(
        request,
        release_id,
        lambda r: lifecycle.release_reject(release=r, reviewer=request.user, comment=comment),
        gettext("Rejected."),
    )
