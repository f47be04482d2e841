"""Releases for the review-document tests: every statistic kind, Laplace and Gaussian.

Built through the real services (draft, submit, approve, compute in-process), on a
dataset whose privacy unit is a person (ID column `person`, at most 3 rows each),
so that L shows in every sensitivity.
"""

from __future__ import annotations

from decimal import Decimal

from releases import compute, lifecycle
from releases.models import Release
from tests.releases_support import make_dataset, submitted

BOUND = 3

EVERY_KIND = [
    {"kind": "count", "label": "All rows"},
    {"kind": "count", "column": "region", "category": "south", "label": "Rows in the south"},
    {"kind": "histogram", "column": "region", "label": "Rows by region"},
    {"kind": "histogram", "column": "age", "label": "Rows by age band"},
    {"kind": "histogram", "column": "region", "column2": "age", "label": "Region by age band"},
    {"kind": "sum", "column": "income", "lower": "0", "upper": "100000", "label": "Total income"},
    {"kind": "mean", "column": "age", "n_guess": 5000, "label": "Mean age"},
    {"kind": "argmax", "column": "region", "label": "Most common region"},
]
KINDS = [s["kind"] for s in EVERY_KIND]


def review_project(project):
    """The shared `project` fixture with room for two releases."""
    project.epsilon_cap = Decimal("5")
    project.delta_cap = Decimal("0.0001")
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    return project


def person_dataset(*, project, owner):
    return make_dataset(
        project=project, owner=owner, rows=3000, id_column="person", bound=BOUND, people=1200
    )


def gaussian_release(*, project, owner, reviewer, dataset) -> Release:
    """A computed and published Gaussian release of every kind (an earlier release)."""
    release = submitted(
        project=project,
        owner=owner,
        dataset=dataset,
        statistics=EVERY_KIND,
        epsilon="1.6",
        mechanism="gaussian",
        delta="0.000008",
        title="Wave 1 (Gaussian)",
    )
    lifecycle.release_approve(release=release, reviewer=reviewer, comment="fine")
    assert compute.release_compute(release_id=release.pk) == "computed"
    release = Release.objects.get(pk=release.pk)
    return lifecycle.release_publish(release=release, actor=owner)


def laplace_release(*, project, owner, dataset) -> Release:
    """A submitted (pending) Laplace release of every kind."""
    return submitted(
        project=project,
        owner=owner,
        dataset=dataset,
        statistics=EVERY_KIND,
        epsilon="0.8",
        title="Wave 2 (Laplace)",
    )
