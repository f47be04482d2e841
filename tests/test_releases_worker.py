"""Releases computed by REAL Celery worker processes on PostgreSQL and Redis.

Covers: submit -> approve -> computed end to end; a worker SIGKILLed in the
middle of a computation (the message is redelivered: acks_late); a canary
dataset whose true aggregates never reach the database, Redis, Celery's
results or the logs; Redis down at approval time (the release stays queued;
the periodic re-dispatch sends it once Redis is back). The crash scans of
Redis and the recovery by heartbeat are in test_releases_crash.py.
"""

from __future__ import annotations

import math
import os
import re
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone

from budgets.models import LedgerEntry
from datasets.models import Column, Dataset
from releases import lifecycle
from releases.models import Release, ReleaseEvent, ReleaseResult
from tests.conftest import wait_for
from tests.releases_support import make_dataset, submitted, true_values

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parent.parent


def ledger_kinds(release) -> list[str]:
    return list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


def status_of(release_id: int) -> str:
    return Release.objects.get(pk=release_id).status


def diagnose(release_id: int, *workers) -> str:
    """What a failing wait shows: the release's state and events, and EVERY worker's log."""
    release = Release.objects.get(pk=release_id)
    events = [(e.from_status, e.to_status, e.comment) for e in release.events.all()]
    logs = "\n".join(f"--- worker {i} log ---\n{w.log()}" for i, w in enumerate(workers))
    return (
        f"release {release_id}: status={release.status} progress={release.progress} "
        f"failure={release.failure_reason!r}\nevents={events}\n{logs}"
    )


def test_submit_approve_compute_end_to_end(celery_worker, project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=20000)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)  # dispatched on commit
    wait_for(
        lambda: status_of(release.pk) == "computed",
        timeout=180,
        message=f"not computed\n{diagnose(release.pk, celery_worker)}",
    )
    release.refresh_from_db()
    assert ledger_kinds(release) == ["reserve", "charge"]
    payload = ReleaseResult.objects.get(release=release).payload
    truth = true_values(dataset)
    stats = payload["statistics"]
    noisy = [stats[0]["values"][0], stats[1]["values"][0], *stats[2]["values"]]
    exact = [truth["count"], truth["south"], *truth["region_hist"]]
    assert noisy != exact
    # The worker draws from the OS CSPRNG (no seed reaches it), so: each value lies within
    # the 1 - 1e-9 tail bound of its discrete Laplace noise, b ln(1e9) with b = L/eps
    # (P[|Y| >= t] <= 2 exp(-t/b)): false failure <= 2e-9 per value, <= 2e-8 for these 8.
    # b = 10 here (eps 0.1 each), a bound of 208: a lost row group (2,000 rows) fails it.
    eps = [Decimal(release.spec["statistics"][i]["epsilon"]) for i in (0, 1, 2, 2, 2, 2, 2, 2)]
    for value, true, e in zip(noisy, exact, eps, strict=True):
        assert abs(value - true) <= math.log(1e9) / float(e), (value, true, e)
    assert [e.to_status for e in release.events.all()] == [
        "submitted", "approved", "queued", "computing", "computed"
    ]  # fmt: skip


def test_worker_killed_mid_computation_is_redelivered(
    celery_workers, project, owner, reviewer, tmp_path
):
    pause = tmp_path / "pause"
    pause.write_text("hold")
    first = celery_workers.start(DPPORTAL_TEST_PAUSE_FILE=str(pause))
    dataset = make_dataset(project=project, owner=owner, rows=20000, row_group_size=2000)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    # the first worker processed one chunk and now waits at the pause point
    wait_for(
        lambda: Release.objects.get(pk=release.pk).progress > 0,
        timeout=60,
        message=f"no progress; log:\n{first.log()}",
    )
    assert status_of(release.pk) == "computing"
    first.kill()  # SIGKILL the worker and its pool child: the message stays unacknowledged
    pause.unlink()
    # a new worker restores unacknowledged messages older than its visibility
    # timeout (1 s) when it starts (kombu's redis transport): wait until the
    # killed worker's message is in the unacked index and older than that
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    wait_for(
        lambda: (entries := client.zrange("unacked_index", 0, -1, withscores=True))
        and all(score < time.time() - 1.5 for _, score in entries),
        timeout=60,
        message=f"no unacknowledged message; log:\n{first.log()}",
    )
    second = celery_workers.start(CELERY_VISIBILITY_TIMEOUT="1")
    wait_for(
        lambda: status_of(release.pk) == "computed",
        timeout=180,
        message=f"not recomputed\n{diagnose(release.pk, first, second)}",
    )
    release.refresh_from_db()
    assert ReleaseResult.objects.filter(release=release).count() == 1
    assert ledger_kinds(release) == ["reserve", "charge"]
    assert "releases.compute" in second.log()
    payload = ReleaseResult.objects.get(release=release).payload
    time.sleep(1)
    assert ReleaseResult.objects.get(release=release).payload == payload


# --- canary -------------------------------------------------------------------------

CANARY_ROWS = 987_654
CANARY_NORTH = 456_789
CANARY_AMOUNT = 7


def canary_dataset(project, owner) -> Dataset:
    region = np.where(np.arange(CANARY_ROWS) < CANARY_NORTH, "north", "south")
    table = pa.table(
        {
            "region": pa.array(region, type=pa.string()),
            "amount": pa.array(np.full(CANARY_ROWS, CANARY_AMOUNT), type=pa.int64()),
        }
    )
    relative = f"datasets/canary-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=131072)
    dataset = Dataset.objects.create(
        project=project, name="canary", uploaded_by=owner, parquet_file=relative,
        status="ready", declared=True, unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="region", position=0, suggested_type="string",
        kind="categorical", categories=["north", "south"],
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="amount", position=1, suggested_type="integer",
        kind="numeric", lower=Decimal(0), upper=Decimal(10),
    )  # fmt: skip
    return dataset


def canary_values(release) -> list[int]:
    """The true aggregates, in every unit they exist in during the computation."""
    from fractions import Fraction

    south = CANARY_ROWS - CANARY_NORTH
    values = [CANARY_ROWS, CANARY_NORTH, south, CANARY_ROWS * CANARY_AMOUNT]
    for entry in release.spec["statistics"]:
        if entry.get("granularity"):
            units = int(CANARY_AMOUNT / Fraction(entry["granularity"]))
            values.append(units * CANARY_ROWS)
    return values


def found(values: list[int], text: str) -> list[int]:
    return [v for v in values if re.search(rf"(?<![0-9]){v}(?![0-9])", text)]


def redis_dump(url: str) -> str:
    client = redis.Redis.from_url(url)
    parts = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        parts.append(repr(key))
        if kind == "string":
            parts.append(repr(client.get(key)))
        elif kind == "list":
            parts.append(repr(client.lrange(key, 0, -1)))
        elif kind == "hash":
            parts.append(repr(client.hgetall(key)))
        elif kind == "set":
            parts.append(repr(client.smembers(key)))
        elif kind == "zset":
            parts.append(repr(client.zrange(key, 0, -1, withscores=True)))
    return "\n".join(parts)


def pg_dump() -> str:
    s = connection.settings_dict
    result = subprocess.run(
        ["pg_dump", "-h", s.get("HOST") or "127.0.0.1", "-p", str(s.get("PORT") or 5432),
         "-U", s.get("USER") or "postgres", "--data-only", s["NAME"]],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return result.stdout


def test_canary_true_values_never_at_rest(celery_workers, project, owner, reviewer, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("before_commit")  # the first attempt fails after aggregating
    worker = celery_workers.start(concurrency=2, DPPORTAL_TEST_FAIL_FILE=str(fail))
    dataset = canary_dataset(project, owner)
    release = submitted(
        project=project,
        owner=owner,
        dataset=dataset,
        epsilon="0.0004",  # tiny: a noisy value equal to the truth has probability ~1e-4
        statistics=[
            {"kind": "count"},
            {"kind": "histogram", "column": "region"},
            {"kind": "sum", "column": "amount"},
            {"kind": "mean", "column": "amount", "n_guess": 1000000},
        ],
    )
    lifecycle.release_approve(release=release, reviewer=reviewer)
    wait_for(
        lambda: status_of(release.pk) == "computed",
        timeout=180,
        message=f"not computed\n{diagnose(release.pk, worker)}",
    )
    assert not fail.exists()  # the injected failure happened and was retried
    # recorded by its type only, never its text (which could quote data)
    assert "AttemptFailed('RuntimeError')" in worker.log()
    assert "injected test failure" not in worker.log()
    release.refresh_from_db()
    assert ledger_kinds(release) == ["reserve", "charge"]
    canaries = canary_values(release)
    payload_text = str(ReleaseResult.objects.get(release=release).payload)
    assert found(canaries, payload_text) == []
    assert found(canaries, pg_dump()) == []
    assert found(canaries, redis_dump(os.environ["REDIS_URL"])) == []
    celery_workers.stop_all()
    for w in celery_workers.workers:
        assert found(canaries, w.log()) == []
    # the scan is able to see a value: the dataset's public row groups are not hidden
    assert found([CANARY_ROWS], f"count {CANARY_ROWS}") == [CANARY_ROWS]


# --- Redis down at approval ---------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
         "--daemonize", "no", "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(host="127.0.0.1", port=port)
    wait_for(lambda: _ping(client), timeout=20, message="private redis did not start")
    return proc


def _ping(client) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


APPROVE = """
import os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
django.setup()
from django.contrib.auth import get_user_model
from releases import lifecycle
from releases.models import Release
release = Release.objects.get(pk=int(sys.argv[1]))
reviewer = get_user_model().objects.get(pk=int(sys.argv[2]))
lifecycle.release_approve(release=release, reviewer=reviewer)
print("approved")
"""

REDISPATCH = """
import os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
django.setup()
from datetime import timedelta
from releases.lifecycle import release_redispatch_stale
print("sent", release_redispatch_stale(queued_after=timedelta(0)))
"""


def test_redis_down_at_approval_then_redispatched(celery_workers, project, owner, reviewer):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    env = celery_workers.env(REDIS_URL=url, DEBUG="1")
    dataset = make_dataset(project=project, owner=owner, rows=5000)
    release = submitted(project=project, owner=owner, dataset=dataset)
    # Redis is down (never started on this port): the approving request must not hang
    approving = subprocess.run(
        [sys.executable, "-c", APPROVE, str(release.pk), str(reviewer.pk)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert approving.returncode == 0, approving.stderr
    assert "approved" in approving.stdout
    assert "could not send the compute task" in approving.stderr
    release.refresh_from_db()
    assert release.status == "queued"
    assert ledger_kinds(release) == ["reserve"]  # the approval committed
    server = start_redis(port)
    try:
        worker = celery_workers.start(REDIS_URL=url)
        redispatch = subprocess.run(
            [sys.executable, "-c", REDISPATCH], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "sent 1" in redispatch.stdout, redispatch.stderr
        wait_for(
            lambda: status_of(release.pk) == "computed",
            timeout=180,
            message=f"not computed\n{diagnose(release.pk, worker)}",
        )
        assert ledger_kinds(release) == ["reserve", "charge"]
        assert ReleaseEvent.objects.filter(release=release, to_status="computed").count() == 1
    finally:
        celery_workers.stop_all()
        server.terminate()
        server.wait(timeout=20)
