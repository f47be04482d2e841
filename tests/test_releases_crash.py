"""A worker SIGKILLed in the middle of a computation, with REAL worker processes and Redis.

- Nothing the broker holds (every key of the Redis database, every type, message
  bodies decoded) nor any worker log ever holds a true aggregate or anything that
  looks like a key: during the computation, after the crash (the message waits
  in kombu's `unacked` hash) and after the redelivered computation finished.
- Recovery by heartbeat: the killed worker's release is shown to its owner as
  "worker lost, resuming" once its heartbeat goes silent, and celery beat's
  re-dispatch has another worker finish it within minutes, charged once.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import redis
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from budgets.models import LedgerEntry
from datasets.models import Column, Dataset
from releases import lifecycle
from releases.models import Release, ReleaseEvent, ReleaseResult
from tests.conftest import ROOT, wait_for
from tests.leak_scan import redis_blobs, scan
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.worker

ROWS = 654_321
REGIONS = ["north", "south", "east"]
AMOUNT_MAX = 1000


def distinctive_dataset(project, owner) -> tuple[Dataset, dict[str, int]]:
    """A dataset whose true aggregates are 6- to 9-digit numbers, and those aggregates."""
    gen = np.random.default_rng(20260612)  # test DATA, not noise
    region = np.array(REGIONS)[gen.choice(3, ROWS, p=[0.5, 0.3, 0.2])]
    amount = gen.integers(0, AMOUNT_MAX + 1, ROWS).astype(np.int64)
    table = pa.table({"region": pa.array(region), "amount": pa.array(amount)})
    relative = f"datasets/distinctive-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=65536)
    dataset = Dataset.objects.create(
        project=project, name="distinctive", uploaded_by=owner, parquet_file=relative,
        status="ready", declared=True, unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="region", position=0, suggested_type="string",
        kind="categorical", categories=REGIONS,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="amount", position=1, suggested_type="integer",
        kind="numeric", lower=Decimal(0), upper=Decimal(AMOUNT_MAX),
    )  # fmt: skip
    truth = {"count": ROWS, "sum": int(amount.sum())}
    truth.update({r: int(np.count_nonzero(region == r)) for r in REGIONS})
    return dataset, truth


STATISTICS = [
    {"kind": "count"},
    {"kind": "histogram", "column": "region"},
    {"kind": "sum", "column": "amount"},
    {"kind": "mean", "column": "amount", "n_guess": 500000},
]


def true_aggregates(release, truth: dict[str, int]) -> list[int]:
    """Every true aggregate, in every unit it exists in during the computation."""
    values = set(truth.values())
    for entry in release.spec["statistics"]:
        if entry.get("granularity"):  # sums are computed in grid units
            values.add(int(truth["sum"] / Fraction(entry["granularity"])))
    assert all(v >= 100_000 for v in values)  # distinctive: no coincidental match
    return sorted(values)


def ledger_kinds(release) -> list[str]:
    return list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


def logs(*workers) -> list[tuple[str, bytes]]:
    return [(f"worker {i} log", w.log_path.read_bytes()) for i, w in enumerate(workers)]


def test_the_scanner_sees_values_and_keys_in_every_form():
    """The scan below is able to fail: it finds what it looks for, however it is written."""
    values = [654321, 123456789]
    body = base64.b64encode(json.dumps([[1], {"partial": 123456789}]).encode())
    message = json.dumps({"body": body.decode(), "headers": {"argsrepr": "(7,)"}}).encode()
    assert {v for _, v, _ in scan([("msg", message)], values).values} == {123456789}
    assert scan([("log", b"count=654,321 rows")], values).values
    assert scan([("log", b"total 1.23456789e+08")], values).values
    assert scan([("pickle", b"\x80\x04J" + (654321).to_bytes(4, "little"))], values).values
    assert not scan([("log", b"took 0.654321 s; id 7654321")], values).values
    key = base64.urlsafe_b64encode(os.urandom(32))  # what a Fernet key looks like
    assert scan([("args", b'[7, [0, 1], "' + key + b'"]')], []).keys
    assert scan([("hex", os.urandom(32).hex().encode())], []).keys
    uuid_only = b'{"id": "3b5f6c2e-1d2a-4c3b-9a8e-7f6d5c4b3a21"}'
    assert not scan([("uuid", uuid_only)], []).keys


def test_sigkill_mid_compute_leaves_no_true_value_or_key_anywhere(
    celery_workers, project, owner, reviewer, tmp_path
):
    url = os.environ["REDIS_URL"]
    pause = tmp_path / "pause"
    pause.write_text("aggregated")  # wait holding every true aggregate in memory
    first = celery_workers.start(DPPORTAL_TEST_PAUSE_FILE=str(pause))
    dataset, truth = distinctive_dataset(project, owner)
    release = submitted(project=project, owner=owner, dataset=dataset, statistics=STATISTICS)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    wait_for(
        lambda: Release.objects.get(pk=release.pk).progress >= 0.99,
        timeout=120,
        message=f"never aggregated; log:\n{first.log()}",
    )
    time.sleep(1)  # at the pause point
    values = true_aggregates(Release.objects.get(pk=release.pk), truth)

    during = scan(redis_blobs(url) + logs(first), values)
    first.kill()  # SIGKILL: the message stays unacknowledged in Redis
    pause.unlink()
    client = redis.Redis.from_url(url)
    wait_for(
        lambda: (entries := client.zrange("unacked_index", 0, -1, withscores=True))
        and all(score < time.time() - 1.5 for _, score in entries),
        timeout=60,
        message=f"no unacknowledged message; log:\n{first.log()}",
    )
    crashed = redis_blobs(url)
    assert any(where.startswith("hash unacked") for where, _ in crashed)  # it was read
    after_crash = scan(crashed + logs(first), values)

    second = celery_workers.start(CELERY_VISIBILITY_TIMEOUT="1")
    wait_for(
        lambda: Release.objects.get(pk=release.pk).status == "computed",
        timeout=180,
        message=f"not recomputed; logs:\n{first.log()}\n{second.log()}",
    )
    celery_workers.stop_all()
    after = scan(redis_blobs(url) + logs(first, second), values)

    assert not during, f"during the computation:\n{during}"
    assert not after_crash, f"after the crash:\n{after_crash}"
    assert not after, f"after the redelivered computation:\n{after}"
    assert ledger_kinds(release) == ["reserve", "charge"]
    assert ReleaseResult.objects.filter(release=release).count() == 1


# --- recovery by heartbeat ----------------------------------------------------------

#: test settings: a heartbeat every second, lost after 6 s of silence, beat every 2 s
RECOVERY = {
    "DPPORTAL_COMPUTE_HEARTBEAT_SECONDS": "1",
    "DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS": "6",
    "DPPORTAL_REDISPATCH_SECONDS": "2",
}


def start_beat(celery_workers, tmp_path) -> subprocess.Popen:
    """A real `celery beat` sending the periodic re-dispatch to the test's private queue."""
    log = open(tmp_path / "beat.log", "wb")  # noqa: SIM115 - closed when the process ends
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dpportal.celery", "beat", "-l", "INFO",
         "-s", str(tmp_path / "beat-schedule"), "--pidfile="],
        cwd=ROOT, env=celery_workers.env(**RECOVERY), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def test_killed_worker_resumes_within_minutes_and_the_owner_sees_it(
    celery_workers, project, owner, reviewer, tmp_path, client, settings
):
    settings.DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS = 6  # the page reads the workers' threshold
    pause = tmp_path / "pause"
    pause.write_text("hold")
    first = celery_workers.start(DPPORTAL_TEST_PAUSE_FILE=str(pause), **RECOVERY)
    dataset = make_dataset(project=project, owner=owner, rows=20000, row_group_size=2000)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    wait_for(
        lambda: Release.objects.get(pk=release.pk).progress > 0,
        timeout=60,
        message=f"no progress; log:\n{first.log()}",
    )
    # paused inside one chunk, the worker is alive: its heartbeat thread keeps beating
    beat_before = Release.objects.get(pk=release.pk).heartbeat_at
    wait_for(
        lambda: Release.objects.get(pk=release.pk).heartbeat_at > beat_before,
        timeout=15,
        message="no heartbeat from a live worker",
    )
    client.force_login(owner)
    page = client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    assert 'id="worker-lost" hidden' in page and ">Computing<" in page

    killed_at = time.monotonic()
    first.kill()  # SIGKILL: no more heartbeat
    pause.unlink()
    status_url = reverse("releases:status", args=[release.pk])
    wait_for(
        lambda: client.get(status_url).json()["worker_lost"],
        timeout=30,
        message="the owner was never told the worker was lost",
    )
    status = client.get(status_url).json()
    assert status["status"] == "computing" and status["status_label"] == "Worker lost, resuming"
    page = client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    assert 'id="worker-lost" hidden' not in page and "Worker lost, resuming" in page

    # only the heartbeat path may recover it: the broker would not redeliver for an hour
    beat = start_beat(celery_workers, tmp_path)
    try:
        second = celery_workers.start(CELERY_VISIBILITY_TIMEOUT="3600", **RECOVERY)
        wait_for(
            lambda: Release.objects.get(pk=release.pk).status == "computed",
            timeout=180,
            message=f"not resumed; logs:\n{first.log()}\n{second.log()}\n"
            f"{(tmp_path / 'beat.log').read_text()}",
        )
        resumed_after = time.monotonic() - killed_at
    finally:
        beat.terminate()
        beat.wait(timeout=20)
    assert resumed_after < 180, resumed_after
    assert "re-dispatched 1 release(s)" in second.log()
    assert ledger_kinds(release) == ["reserve", "charge"]
    assert ReleaseResult.objects.filter(release=release).count() == 1
    assert ReleaseEvent.objects.filter(release=release, to_status="computed").count() == 1
    status = client.get(status_url).json()
    assert status["status"] == "computed" and not status["worker_lost"]
