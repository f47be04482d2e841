"""The demo releases `manage.py seed_demo` builds, through the real services.

One release with every statistic kind walks the whole lifecycle: the owner
saves and submits it, the reviewer approves it (reserving its budget), the
compute service the Celery task calls computes it (noise drawn once, results
and charge in one transaction), and the owner publishes it. A second release is
left submitted, pending in the reviewer's inbox.

Idempotent: each demo release is found by its title; a run picks up a release
where an earlier one stopped (e.g. queued when the process was killed) and
never builds a second one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from budgets.models import Project
from datasets.models import Dataset
from releases import compute, lifecycle, services
from releases.models import Release

logger = logging.getLogger(__name__)

PUBLISHED_TITLE = "Demo census: who answered"
PENDING_TITLE = "Demo census: incomes by region (awaiting review)"
#: a demo release in one of these is over; a new one is built in its place
ENDED = (Release.Status.FAILED, Release.Status.WITHDRAWN, Release.Status.REJECTED)

#: every statistic kind the builder offers, on the demo census's declared columns
EVERY_KIND = [
    {"kind": "count", "label": "People-rows in the census"},
    {"kind": "count", "column": "sex", "category": "female", "label": "Rows of women"},
    {"kind": "histogram", "column": "education", "label": "Highest education"},
    {"kind": "histogram", "column": "age", "label": "Age groups"},
    {"kind": "histogram", "column": "sex", "column2": "age", "label": "Age groups by sex"},
    {"kind": "sum", "column": "hours", "label": "Total weekly working hours"},
    {"kind": "mean", "column": "income", "n_guess": 100000, "label": "Mean yearly income"},
    {"kind": "argmax", "column": "region", "label": "Most common region"},
    # grouped tables, quantiles, spread
    {"kind": "grouped_mean", "column": "income", "group_by": "education", "n_guess": 10000,
     "label": "Mean yearly income by education"},
    {"kind": "grouped_sum", "column": "hours", "group_by": "sex",
     "label": "Total weekly working hours by sex"},
    {"kind": "quantiles", "column": "income", "quantiles": ["0.25", "0.5", "0.75"],
     "step": "1000", "n_guess": 100000, "label": "Median and quartiles of yearly income"},
    {"kind": "stddev", "column": "hours", "n_guess": 100000,
     "label": "Standard deviation of weekly working hours"},
    {"kind": "variance", "column": "age", "group_by": "sex", "n_guess": 40000,
     "label": "Variance of age by sex"},
    {"kind": "bounds", "column": "hours", "label": "Private bounds of weekly working hours"},
    {"kind": "rows_per_person", "cap": "100", "label": "Rows per person"},
]  # fmt: skip

PENDING_STATISTICS = [
    {"kind": "histogram", "column": "region", "label": "Rows per region"},
    {"kind": "mean", "column": "income", "n_guess": 100000, "label": "Mean yearly income"},
    {"kind": "histogram", "column": "education", "column2": "sex",
     "label": "Education by sex"},
]  # fmt: skip


class DemoNotComputed(RuntimeError):
    """The demo release could not be computed (the reason is the release's own)."""


@dataclass(frozen=True)
class DemoReleases:
    published: Release
    pending: Release


def _builder_data(*, dataset: Dataset, title: str, statistics: list[dict], **extra) -> dict:
    return {
        "title": title,
        "dataset": dataset.pk,
        "mechanism": "laplace",
        "confidence": "0.95",
        "statistics": statistics,
        **extra,
    }


def _latest(*, project: Project, title: str) -> Release | None:
    return Release.objects.filter(project=project, title=title).order_by("-pk").first()


def demo_release_publish(
    *, project: Project, dataset: Dataset, owner: AbstractBaseUser, reviewer: AbstractBaseUser
) -> Release:
    """The published demo release with every kind: built, or finished where a run stopped."""
    release = _latest(project=project, title=PUBLISHED_TITLE)
    if release is None or release.status in ENDED:
        release = services.release_save_draft(
            project=project,
            actor=owner,
            data=_builder_data(
                dataset=dataset,
                title=PUBLISHED_TITLE,
                statistics=EVERY_KIND,
                epsilon="1",
                description=(
                    "Every kind of statistic dpportal releases, on the synthetic census: "
                    "counts, histograms (categorical, binned, two-way), a clipped sum, a mean, "
                    "the most common region, a mean by group, a sum by group, the median and "
                    "quartiles, a standard deviation, a variance by group and the rows per person."
                ),
            ),
        )
    if release.status == Release.Status.DRAFT:
        release = lifecycle.release_submit(release=release, actor=owner)
    if release.status == Release.Status.SUBMITTED:
        # sends the compute task on commit; the worker finds it done (idempotent)
        release = lifecycle.release_approve(
            release=release, reviewer=reviewer, comment="Demo: approved by the demo reviewer."
        )
    if release.status in lifecycle.COMPUTABLE:
        # the service the Celery task calls, run here: seed_demo runs before any worker
        try:
            compute.release_compute(release_id=release.pk)
        except compute.SpecMismatch as exc:  # as the task does: fail, return the budget
            lifecycle.release_fail(release_id=release.pk, reason=exc.records)
        release.refresh_from_db()
    if release.status == Release.Status.COMPUTED:
        release = lifecycle.release_publish(release=release, actor=owner)
    if release.status != Release.Status.PUBLISHED:
        raise DemoNotComputed(
            f"The demo release is {release.get_status_display().lower()}: "
            f"{release.failure_reason or 'it could not be computed'}"
        )
    return release


def demo_release_pending(*, project: Project, dataset: Dataset, owner: AbstractBaseUser) -> Release:
    """A second demo release, submitted and waiting in the reviewer's inbox (built once)."""
    release = _latest(project=project, title=PENDING_TITLE)
    if release is None:
        release = services.release_save_draft(
            project=project,
            actor=owner,
            data=_builder_data(
                dataset=dataset,
                title=PENDING_TITLE,
                statistics=PENDING_STATISTICS,
                epsilon="0.5",
                description="Regional counts and incomes, waiting for the reviewer's decision.",
            ),
        )
    if release.status == Release.Status.DRAFT:
        release = lifecycle.release_submit(release=release, actor=owner)
    return release


def demo_releases_seed(
    *, project: Project, dataset: Dataset, owner: AbstractBaseUser, reviewer: AbstractBaseUser
) -> DemoReleases:
    """Both demo releases: one published with every kind, one pending review."""
    published = demo_release_publish(
        project=project, dataset=dataset, owner=owner, reviewer=reviewer
    )
    pending = demo_release_pending(project=project, dataset=dataset, owner=owner)
    return DemoReleases(published=published, pending=pending)
