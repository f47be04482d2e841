"""Reads for releases (see STYLE.md: selectors read)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils.translation import gettext

from budgets.models import Project
from budgets.selectors import project_roles, role_required
from dpportal import messages
from dpportal.errors import NotFound
from releases.lifecycle import release_worker_lost
from releases.models import Release, ReleaseResult


def release_get_for_member(
    *,
    release_id: object,
    user: AbstractBaseUser | AnonymousUser,
    roles: set[str] | None = None,
) -> Release:
    """The release if `user` is a member of its project (with one of `roles`, if given).

    Non-members and anonymous users get NotFound (404): a private release's
    existence does not leak.
    """
    try:
        pk = int(str(release_id))
    except (TypeError, ValueError):
        raise NotFound(gettext("No such release."))
    release = (
        Release.objects.select_related("project", "dataset", "budget_request", "created_by")
        .filter(pk=pk)
        .first()
    )
    held = project_roles(project=release.project, user=user) if release else set()
    if release is None or not held:
        raise NotFound(gettext("No such release."))
    if roles is not None and not (held & roles):
        raise role_required(roles)
    return release


def release_list_for_project(*, project: Project) -> QuerySet[Release]:
    return Release.objects.filter(project=project).select_related("dataset").order_by("-created_at")


def release_list_published(*, project: Project | None = None) -> QuerySet[Release]:
    """Published releases (public), newest first."""
    releases = Release.objects.filter(status=Release.Status.PUBLISHED).select_related(
        "project", "result"
    )
    if project is not None:
        releases = releases.filter(project=project)
    return releases.order_by("-published_at")


def release_result_get(*, release: Release) -> ReleaseResult | None:
    return ReleaseResult.objects.filter(release=release).first()


def release_status(*, release: Release) -> dict[str, Any]:
    """What the detail page polls: status and progress (no timings, no values).

    `worker_lost`: computing, but the worker's heartbeat went silent; the release is
    being sent to another worker (releases.lifecycle), and the label says so.
    """
    worker_lost = release_worker_lost(release=release)
    return {
        "id": release.pk,
        "status": release.status,
        "status_label": "Worker lost, resuming" if worker_lost else release.get_status_display(),
        "worker_lost": worker_lost,
        "progress": round(float(release.progress), 4),
        "failure_reason": (
            messages.reader_text(release.failure_record, fallback=release.failure_reason)
            if release.status == "failed"
            else ""
        ),
        "has_results": ReleaseResult.objects.filter(release=release).exists(),
    }
