"""`manage.py seed_demo`: deterministic, idempotent, built through the services."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.urls import reverse

from budgets.models import Membership, Project
from datasets.models import Column, Dataset

pytestmark = pytest.mark.django_db


def test_seed_demo_twice_leaves_one_ready_declared_demo(client):
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert "owner / demo-owner-pass" in out.getvalue()
    assert "reviewer / demo-reviewer-pass" in out.getvalue()
    call_command("seed_demo", stdout=StringIO())

    project = Project.objects.get()
    dataset = Dataset.objects.get()
    assert dataset.project == project
    assert dataset.status == Dataset.Status.READY and dataset.declared
    assert (dataset.id_column, dataset.contribution_bound) == ("person_id", 2)
    assert set(Membership.objects.values_list("user__username", "role")) == {
        ("owner", "owner"),
        ("reviewer", "reviewer"),
    }
    parquet = pq.ParquetFile(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert parquet.metadata.num_rows >= 100_000
    ids = parquet.read(columns=["person_id"]).column(0)
    assert len(ids.unique()) < len(ids)  # some people are on several rows
    region = dataset.columns.get(name="region")
    assert region.kind == Column.Kind.CATEGORICAL and len(region.categories) == 50
    assert dataset.columns.filter(kind=Column.Kind.UNDECLARED).count() == 0

    owner = authenticate(username="owner", password="demo-owner-pass")
    assert owner is not None
    assert authenticate(username="reviewer", password="demo-reviewer-pass") is not None
    client.force_login(owner)
    page = client.get(reverse("datasets:detail", kwargs={"pk": dataset.pk}))
    assert page.status_code == 200 and "Demo census" in page.content.decode()


def test_seed_demo_is_deterministic(tmp_path):
    from datasets.demo import write_census_csv

    a = write_census_csv(tmp_path / "a.csv", rows=3000, seed=2026).read_bytes()
    b = write_census_csv(tmp_path / "b.csv", rows=3000, seed=2026).read_bytes()
    assert a == b
