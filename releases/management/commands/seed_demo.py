"""`manage.py seed_demo`: demo users, project, census-like dataset and releases.

Idempotent (a second run leaves one demo) and built through the services, so the
demo walks the real paths: upload, in-process ingest, declaration, then a
release with every statistic kind submitted, approved by the reviewer, computed
by the compute service the Celery task runs and published, and a second
release left pending in the reviewer's inbox (releases.demo).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from budgets.models import Membership, Project
from budgets.services import membership_add, project_create
from datasets.demo import EDUCATION, REGIONS, SEXES, write_census_csv
from datasets.models import Dataset
from datasets.services import (
    dataset_confirm_unit,
    dataset_create,
    dataset_declare,
    dataset_delete,
    dataset_ingest,
)
from releases.demo import DemoNotComputed, demo_releases_seed

DEMO_SLUG = "demo-census"
DEMO_DATASET = "Demo census"
DEMO_ROWS = 120_000
OWNER = ("owner", "demo-owner-pass")  # noqa: S105 - printed demo credentials by design
REVIEWER = ("reviewer", "demo-reviewer-pass")  # noqa: S105

DECLARATION = {
    "person_id": {"kind": "excluded"},
    "age": {"kind": "numeric", "lower": "18", "upper": "90",
            "bin_edges": ["18", "30", "45", "65", "90"]},
    "sex": {"kind": "categorical", "categories": SEXES},
    "region": {"kind": "categorical", "categories": REGIONS, "missing": "category"},
    "education": {"kind": "categorical", "categories": EDUCATION},
    "income": {"kind": "numeric", "lower": "0", "upper": "250000",
               "bin_edges": ["0", "20000", "40000", "60000", "100000", "250000"]},
    "hours": {"kind": "numeric", "lower": "0", "upper": "80",
              "bin_edges": ["0", "20", "35", "45", "60", "80"]},
}  # fmt: skip


def _user(username: str, password: str):
    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"email": f"{username}@demo.invalid"}
    )
    user.set_password(password)
    user.is_active = True
    user.save()
    return user


class Command(BaseCommand):
    help = (
        "Create the demo users, project, ingested and declared census-like dataset, a "
        "published release with every statistic kind and one release pending review."
    )

    def handle(self, *args, **options) -> None:
        with transaction.atomic():
            owner = _user(*OWNER)
            reviewer = _user(*REVIEWER)
            project = Project.objects.filter(slug=DEMO_SLUG).first()
            if project is None:
                project = project_create(
                    name="Demo census",
                    slug=DEMO_SLUG,
                    description="Synthetic census-like survey used to try dpportal.",
                    privacy_unit_description="One person of the synthetic census (all their rows).",
                    epsilon_cap="5",
                    delta_cap="0.000001",
                    created_by=owner,
                )
            membership_add(project=project, user=owner, role=Membership.Role.OWNER)
            membership_add(project=project, user=reviewer, role=Membership.Role.REVIEWER)

        dataset = Dataset.objects.filter(project=project, name=DEMO_DATASET).first()
        if dataset is not None and dataset.status == Dataset.Status.READY and dataset.declared:
            if dataset.unit_confirmed_at is None:  # seeded before confirmations existed
                dataset_confirm_unit(
                    dataset=dataset,
                    actor=owner,
                    unit="person",
                    id_column=dataset.id_column,
                    contribution_bound=dataset.contribution_bound,
                )
            self.stdout.write("The demo dataset is already there.")
        else:
            if dataset is not None and not dataset.releases.exists():
                dataset_delete(dataset=dataset, actor=owner)  # half-built earlier: start over
            dataset = self._build_dataset(project=project, owner=owner)
        try:
            demo = demo_releases_seed(
                project=project, dataset=dataset, owner=owner, reviewer=reviewer
            )
        except DemoNotComputed as exc:
            raise CommandError(str(exc)) from exc

        self.stdout.write(
            self.style.SUCCESS(
                f"Demo ready: project '{project.name}' (/projects/{project.slug}/), "
                f"dataset /datasets/{dataset.pk}/\n"
                f"  public dashboard: /p/{project.slug}/releases/{demo.published.pk}/\n"
                f"  pending review:   /releases/{demo.pending.pk}/\n"
                f"  owner login:    {OWNER[0]} / {OWNER[1]}\n"
                f"  reviewer login: {REVIEWER[0]} / {REVIEWER[1]}"
            )
        )

    def _build_dataset(self, *, project: Project, owner) -> Dataset:
        with tempfile.TemporaryDirectory() as tmp:
            path = write_census_csv(Path(tmp) / "demo-census.csv", rows=DEMO_ROWS, seed=2026)
            with open(path, "rb") as handle:
                dataset = dataset_create(
                    project=project,
                    name=DEMO_DATASET,
                    uploaded_file=File(handle, name=path.name),
                    uploaded_by=owner,
                    dispatch=False,  # ingested right here, by the same service the task runs
                )
        dataset = dataset_ingest(dataset_id=dataset.pk)
        if dataset is None or dataset.status != Dataset.Status.READY:
            reason = dataset.failure_reason if dataset else "it disappeared"
            raise RuntimeError(f"the demo dataset did not ingest: {reason}")
        return dataset_declare(
            dataset=dataset,
            actor=owner,
            columns=DECLARATION,
            id_column="person_id",
            contribution_bound=2,
            unit="person",  # the owner's explicit choice: this confirms the privacy unit
        )
