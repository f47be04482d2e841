"""Response times of the largest release the cell limits allow: cold and cached.

    .venv/bin/python bench/largest_release.py [--repeats 3] [--rows 20000] [--check]

Builds, in its own PostgreSQL database (DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/dpportal_bench_largest; created, migrated and
flushed by this script) with Redis as the cache (REDIS_URL, default
redis://127.0.0.1:6379/3), a published release whose statistics total
RELEASE_MAX_CELLS_PER_RELEASE cells, each statistic at its kind's limit where the
total allows, including the dearest kinds to read back: grouped means (pivot
intervals) and a standard deviation by group (at RELEASE_MAX_SPREAD_CELLS). The
release goes through the real services: builder, submission, approval, the
compute service (synchronously, timed) and publication.

Then, through Django's test client (the whole middleware stack, no network), it
times the public page, data.json, data.csv (streamed: the time includes reading
every chunk) and the owner's results page: "cold" right after clearing the cache
(each surface pays for building the release's public data), "cached" on the
request after. Prints the median of --repeats runs beside the goals (cached
under 1 s, cold under 5 s) and a JSON line. --check exits 1 when a goal is missed.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py
# would shadow the standard library's `http` package: drop it before importing.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import argparse
import json
import os
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_CACHED_S = 1.0
GOAL_COLD_S = 5.0
CATEGORIES = [f"c{i:02d}" for i in range(98)]  # + Other + Missing: 100 cells
BINNED = (("x", 100), ("w", 97), ("t", 95), ("v", 3), ("u", 50), ("s", 35))  # name, bins


def write_parquet(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(26)  # bench DATA, not noise
    code = np.array(CATEGORIES + ["other"])[gen.integers(0, 99, rows)].astype(object)
    code[gen.random(rows) < 0.02] = None
    table = pa.table(
        {
            "code": pa.array(code, type=pa.string()),
            **{
                name: pa.array(gen.integers(0, bins, rows), type=pa.int64())
                for name, bins in BINNED
            },
            "income": pa.array(np.round(gen.gamma(2.0, 200.0, rows), 2), type=pa.float64()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def build_release(rows: int):
    """The largest release: published, through the real services. Returns
    (release, owner, compute seconds, cells per statistic)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from budgets.models import Membership, Project
    from datasets.models import Column, Dataset
    from releases import kinds, lifecycle, services
    from releases.compute import release_compute
    from releases.models import Release

    user_model = get_user_model()
    owner = user_model.objects.create_user("bench-owner", password="x-bench-password-1")
    reviewer = user_model.objects.create_user("bench-reviewer", password="x-bench-password-1")
    project = Project.objects.create(
        name="Largest", slug="largest", description="The largest release the limits allow.",
        privacy_unit_description="One row.", epsilon_cap=100, delta_cap=0, created_by=owner,
    )  # fmt: skip
    Membership.objects.create(project=project, user=owner, role="owner")
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    relative = "datasets/largest.parquet"
    write_parquet(Path(settings.MEDIA_ROOT) / relative, rows)
    dataset = Dataset.objects.create(
        project=project, name="largest", uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, contribution_bound=1, declared=True,
        unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="code", position=0, suggested_type="string",
        kind="categorical", categories=CATEGORIES, missing="category",
    )  # fmt: skip
    for position, (name, bins) in enumerate(BINNED, start=1):
        Column.objects.create(
            dataset=dataset, name=name, position=position, suggested_type="integer",
            kind="numeric", lower=Decimal(0), upper=Decimal(bins),
            bin_edges=list(range(bins + 1)),
        )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="income", position=9, suggested_type="float", kind="numeric",
        lower=Decimal(0), upper=Decimal(2000),
    )  # fmt: skip
    money = {"column": "income", "lower": "0", "upper": "2000", "n_guess": rows}
    # RELEASE_MAX_CELLS_PER_RELEASE (20,000) in all, each dear kind at its own limit
    statistics_ = [
        {"kind": "histogram", "column": "code", "column2": "x"},  # 10,000
        {"kind": "grouped_sum", "group_by": "w", "group_by2": "t", **money},  # 9,215
        {"kind": "grouped_mean", "group_by": "code", "group_by2": "v", **money},  # 300 x 2
        {"kind": "stddev", "group_by": "u", **money},  # 50 x 3
        {"kind": "histogram", "column": "s"},  # 35
    ]
    data = {
        "title": "Largest allowed", "dataset": dataset.pk, "mechanism": "laplace",
        "confidence": "0.95", "epsilon": "6", "statistics": statistics_,
    }  # fmt: skip
    plan = services.release_plan_parse(project=project, data=data)
    cells = [kinds.get(s.kind).cell_count(s) for s in plan.statistics]
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    with mock.patch("releases.dispatch.release_dispatch"):  # computed here, not by a worker
        lifecycle.release_approve(release=release, reviewer=reviewer)
    started = time.perf_counter()
    outcome = release_compute(release_id=release.pk)
    compute_s = time.perf_counter() - started
    if outcome != "computed":
        raise SystemExit(f"the release did not compute: {outcome}")
    release = Release.objects.get(pk=release.pk)
    release = lifecycle.release_publish(release=release, actor=owner)
    return release, owner, compute_s, cells


def timed_get(client, url: str) -> tuple[float, int, int]:
    """(seconds, status, bytes) of one GET, reading a streamed body to its end."""
    started = time.perf_counter()
    response = client.get(url)
    if response.streaming:
        size = sum(len(chunk) for chunk in response.streaming_content)
    else:
        size = len(response.content)
    return time.perf_counter() - started, response.status_code, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    url = os.environ.setdefault(
        "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dpportal_bench_largest"
    )
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/3")
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DPPORTAL_VAR_DIR", tempfile.mkdtemp(prefix="bench-largest-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    from bench.database import ensure_database

    ensure_database(url)

    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    cache.clear()
    release, owner, compute_s, cells = build_release(args.rows)
    slug = release.project.slug
    surfaces = {
        "public page": (reverse("public:release", args=[slug, release.pk]), False),
        "data.json": (reverse("public:release-json", args=[slug, release.pk]), False),
        "data.csv": (reverse("public:release-csv", args=[slug, release.pk]), False),
        "owner's results": (reverse("releases:detail", args=[release.pk]), True),
    }
    anonymous, member = Client(), Client()
    member.force_login(owner)
    print(
        f"release: {len(cells)} statistics, {sum(cells):,} cells "
        f"(limits {settings.RELEASE_MAX_CELLS_PER_RELEASE:,} per release, "
        f"{settings.RELEASE_MAX_CELLS_PER_STATISTIC:,} per statistic, "
        f"{settings.RELEASE_MAX_GROUPED_MEAN_CELLS:,} of grouped means, "
        f"{settings.RELEASE_MAX_SPREAD_CELLS:,} of spreads): " + ", ".join(f"{c:,}" for c in cells)
    )
    print(f"compute: {compute_s:.2f} s, {args.rows:,} rows")
    results = {}
    missed = []
    print(f"{'surface':<17} {'cold s':>8} {'cached s':>9} {'bytes':>11}   goals: cold < "
          f"{GOAL_COLD_S:g} s, cached < {GOAL_CACHED_S:g} s")  # fmt: skip
    for name, (path, private) in surfaces.items():
        client = member if private else anonymous
        cold, cached = [], []
        size = 0
        for _ in range(args.repeats):
            cache.clear()
            seconds, status, size = timed_get(client, path)
            if status != 200:
                raise SystemExit(f"{name}: HTTP {status}")
            cold.append(seconds)
            cached.append(timed_get(client, path)[0])
        cold_s, cached_s = statistics.median(cold), statistics.median(cached)
        ok = cold_s < GOAL_COLD_S and cached_s < GOAL_CACHED_S
        if not ok:
            missed.append(name)
        results[name] = {"cold_s": round(cold_s, 3), "cached_s": round(cached_s, 3), "bytes": size}
        print(f"{name:<17} {cold_s:>8.3f} {cached_s:>9.3f} {size:>11,}   "
              f"{'ok' if ok else 'MISSED'}")  # fmt: skip
    print(json.dumps({"cells": cells, "compute_s": round(compute_s, 2), "surfaces": results}))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
