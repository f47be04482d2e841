"""Reads for the public dashboards: only published projects and releases.

Every lookup returns published releases only (NotFound otherwise), so nothing
unpublished is reachable from a public page. What a published release shows is
built from what it stores by `releases.public.data` (its dates, approval and
privacy unit in words by `releases.public.facts`); the downloads by
`releases.public.downloads`; the reader's options by `releases.public.options`.
"""

from __future__ import annotations

from django.db.models import Count, Max, Q, QuerySet
from django.utils.translation import gettext

from budgets.models import Project
from dpportal.errors import NotFound
from releases.models import Release


def _published() -> Q:
    return Q(releases__status=Release.Status.PUBLISHED)


def project_list_published() -> QuerySet[Project]:
    """Projects with at least one published release, annotated with their count and latest."""
    return (
        Project.objects.annotate(
            published_count=Count("releases", filter=_published()),
            last_published_at=Max("releases__published_at", filter=_published()),
        )
        .filter(published_count__gt=0)
        .order_by("name")
    )


def project_get_published(*, slug: str) -> Project:
    """The project named `slug` if it has a published release; NotFound otherwise."""
    project = project_list_published().filter(slug=slug).first()
    if project is None:
        raise NotFound(gettext("No such project."))
    return project


def release_list_published(*, project: Project) -> QuerySet[Release]:
    """The project's published releases, newest first, with their number of statistics."""
    return (
        Release.objects.filter(project=project, status=Release.Status.PUBLISHED)
        .annotate(statistic_count=Count("statistics"))
        .order_by("-published_at", "-pk")
    )


def release_get_published(*, slug: str, release_id: int) -> Release:
    """The published release `release_id` of project `slug`; NotFound for anything else.

    Unpublished releases (computed, failed, draft...) are not distinguished from
    missing ones, so their existence does not leak.
    """
    release = (
        Release.objects.select_related("project")
        .filter(
            pk=release_id,
            project__slug=slug,
            status=Release.Status.PUBLISHED,
            published_at__isnull=False,
            result__isnull=False,
        )
        .first()
    )
    if release is None:
        raise NotFound(gettext("No such release."))
    return release


def release_version_key(*, release: Release) -> str:
    """Identifies the immutable published content of a release (for caches and ETags)."""
    assert release.published_at is not None
    return f"{release.pk}:{release.published_at.isoformat()}"
