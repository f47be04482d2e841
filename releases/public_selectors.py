"""Reads for the public dashboards: only published projects and releases.

Every lookup returns published releases only (NotFound otherwise), so nothing
unpublished is reachable from a public page. What a published release shows is
built from what it stores by `releases.public.data`; the downloads by
`releases.public.downloads`; the reader's options by `releases.public.options`.

No compute time is public, not even `computed_at`: with the public approval time
it gives the compute duration, which depends on the noise the exact rejection
samplers drew (PRIVACY-TESTING.md, "Timing").
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from budgets.models import Project
from dpportal.errors import NotFound
from releases.models import Release

# --- projects and releases ---------------------------------------------------------


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
        raise NotFound("No such project.")
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
        raise NotFound("No such release.")
    return release


def release_version_key(*, release: Release) -> str:
    """Identifies the immutable published content of a release (for caches and ETags)."""
    assert release.published_at is not None
    return f"{release.pk}:{release.published_at.isoformat()}"


# --- the public facts of one release ---------------------------------------------------


def day_text(value: datetime | None) -> str:
    """A moment as its UTC calendar day ('2026-11-23'): public times are days only.

    Approval and publication are people's acts and public by design, to the day;
    anything finer, next to other public times, could time the computation.
    """
    return timezone.localdate(value, timezone=UTC).isoformat() if value else ""


def privacy_unit_text(*, release: Release) -> str:
    """The privacy unit the release actually used, in the project's words and the dataset's.

    The unit is the one frozen in the release's specification (the dataset's for a
    release without one). The text says it plainly: a person identified by an ID
    column with at most L rows used, or one row; and when the dataset's owner had
    not confirmed that unit before the release was submitted (releases from before
    confirmations existed), it says so instead of implying the project's description.
    """
    from dpportal.formatting import integer  # moves to the imports when this module is split

    project, dataset = release.project, release.dataset
    frozen = (release.spec or {}).get("privacy_unit") or {}
    id_column = frozen.get("id_column", dataset.id_column) or ""
    bound = int(frozen.get("contribution_bound", dataset.contribution_bound) or 1)
    submitted_at = release.budget_request.requested_at if release.budget_request else None
    confirmed = (
        dataset.unit_confirmed_at is not None
        and (submitted_at is None or dataset.unit_confirmed_at <= submitted_at)
        and (dataset.id_column or "") == id_column
        and (not id_column or dataset.contribution_bound == bound)
    )
    words = project.privacy_unit_description.strip()
    lead = f"{words.rstrip('.')}. " if words else ""
    if id_column:
        rows = "row" if bound == 1 else "rows"
        used = (
            f"In this release: one person, identified by the column '{id_column}' of the "
            f"dataset '{dataset.name}'; at most {integer(bound)} {rows} per person were used."
        )
        if not confirmed:
            used += " The dataset's owner had not confirmed this privacy unit before the release."
        return lead + used
    if confirmed:
        return (
            f"{lead}In this release: one row of the dataset '{dataset.name}', as its owner "
            "confirmed (each row belongs to a different privacy unit)."
        )
    return (
        f"{lead}In this release: each row of the dataset '{dataset.name}' was protected on its "
        "own; its owner had not confirmed that one row is one privacy unit, so someone with "
        "several rows is protected less than this description says."
    )


def release_approval(*, release: Release) -> dict[str, str] | None:
    """Who approved the release's budget and on which day (None when not recorded)."""
    request = release.budget_request
    if request is None or request.decided_by is None or request.status != "approved":
        return None
    reviewer = request.decided_by
    name = (reviewer.get_full_name() or reviewer.get_username()).strip()
    return {
        "reviewer": name,
        "decided_at": day_text(request.decided_at),
    }
