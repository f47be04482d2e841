"""`manage.py seed_demo`: deterministic, idempotent, built through the services.

It also leaves a published release with every statistic kind and a request
pending in the reviewer's inbox (releases.demo).
"""

from __future__ import annotations

import re
from decimal import Decimal
from html import escape as html_escape
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


def test_seed_demo_publishes_every_kind_and_leaves_one_request_pending(client, monkeypatch):
    from budgets.models import BudgetRequest, LedgerEntry
    from releases import compute
    from releases.demo import EVERY_KIND, PENDING_TITLE, PUBLISHED_TITLE
    from releases.models import Release, Statistic

    # a first run dies while computing (as if killed): the release stays queued
    real_compute = compute.release_compute

    def crash(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compute, "release_compute", crash)
    with pytest.raises(KeyboardInterrupt):
        call_command("seed_demo", stdout=StringIO())
    assert Release.objects.get().status == Release.Status.QUEUED
    monkeypatch.setattr(compute, "release_compute", real_compute)
    call_command("seed_demo", stdout=StringIO())  # picks the queued release up
    call_command("seed_demo", stdout=StringIO())  # idempotent: no second demo release

    published = Release.objects.get(title=PUBLISHED_TITLE)
    assert published.status == Release.Status.PUBLISHED
    kinds = set(published.statistics.values_list("kind", flat=True))
    # every kind the builder offers that the demo's Laplace mechanism can draw; the
    # cross-tabulation alone needs the Gaussian mechanism
    from releases.kinds import REGISTRY

    drawable = {n for n, k in REGISTRY.items() if k.mechanism_problem("laplace") is None}
    assert kinds == drawable
    assert set(Statistic.Kind.values) - drawable == {"crosstab", "keys"}
    stats = list(published.statistics.order_by("position"))
    assert any(s.kind == "count" and not s.column_id for s in stats)
    assert any(s.kind == "count" and s.category for s in stats)
    histograms = [s for s in stats if s.kind == "histogram"]
    assert {(s.column.kind, s.column2_id is not None) for s in histograms} == {
        ("categorical", False),
        ("numeric", False),
        ("categorical", True),
    }
    # computed through the compute service: results stored, the reservation charged
    assert published.result.payload["statistics"]
    assert set(
        LedgerEntry.objects.filter(request=published.budget_request).values_list("kind", flat=True)
    ) == {"reserve", "charge"}
    assert published.epsilon == Decimal(1)  # the typed total, split exactly

    pending = Release.objects.get(title=PENDING_TITLE)
    assert pending.status == Release.Status.SUBMITTED
    assert Release.objects.count() == 2

    # the public page renders every statistic, one Plotly figure per chart statistic
    page = client.get(
        reverse(
            "public:release", kwargs={"slug": published.project.slug, "release_id": published.pk}
        )
    )
    assert page.status_code == 200
    html = page.content.decode()
    for spec in EVERY_KIND:
        assert html_escape(spec["label"]) in html
    # a selection stated in a sentence (the most common category, private bounds) has no chart
    charts = [s for s in stats if s.kind not in ("argmax", "bounds")]
    assert len(re.findall(r'<div class="plot" id="chart-\d+"', html)) == len(charts)
    assert "Estimated bounds of hours" in html
    assert "plotly" in html and 'id="release-data"' in html
    assert client.get(reverse("public:home")).status_code == 200

    # the reviewer finds the pending request in the inbox
    client.force_login(authenticate(username="reviewer", password="demo-reviewer-pass"))
    inbox = client.get(reverse("budgets:inbox"))
    assert inbox.status_code == 200
    request = BudgetRequest.objects.get(status=BudgetRequest.Status.PENDING)
    assert request.release == pending
    assert html_escape(PENDING_TITLE) in inbox.content.decode()
