"""A compute that fails on the data logs no data: type names and ids only.

The dataset's stored copy holds a cell that cannot be read as its declared
numeric type; pyarrow's error message quotes that cell. Neither our logs,
Celery's own log lines (retry, failure), what the task returns, nor the reason
shown to the owners may carry it.
"""

from __future__ import annotations

import logging
import traceback
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.utils import timezone

from budgets.models import LedgerEntry
from datasets.models import Column, Dataset
from releases import compute, lifecycle
from releases.models import Release, ReleaseEvent
from releases.tasks import release_compute_task
from tests.conftest import wait_for
from tests.releases_support import submitted

CANARY = "CANARY-8675309"
STATISTICS = [{"kind": "count"}, {"kind": "sum", "column": "amount"}]
REASON = (
    "The dataset's stored copy could not be read: a column's values do not match its "
    "declared type, or the file is damaged. It was tried 6 times (ArrowInvalid). The "
    "reserved budget was spent: the computation failed after it had read the dataset."
)


def poisoned_dataset(project, owner) -> Dataset:
    """A declared numeric column whose stored cells are bytes that are not text, one of them
    the canary followed by an invalid UTF-8 byte.

    Declared numeric columns stored as text are read leniently (datasets.domains: an
    unreadable cell is missing), so a cell that cannot even be decoded is what still
    fails: pyarrow raises ArrowInvalid. `strict_cast` below makes that error quote the
    canary, as pyarrow's parse errors do.
    """
    amounts = [b"12", b"7", CANARY.encode() + b"\xff", b"3"] * 50
    relative = f"datasets/poisoned-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"amount": pa.array(amounts, type=pa.binary())}), path)
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pq.read_table(path).column("amount"), pa.string())
    dataset = Dataset.objects.create(
        project=project, name="poisoned", uploaded_by=owner, parquet_file=relative,
        status="ready", declared=True, unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="amount", position=0, suggested_type="integer",
        kind="numeric", lower=Decimal(0), upper=Decimal(100),
    )  # fmt: skip
    return dataset


def approved(project, owner, reviewer) -> Release:
    dataset = poisoned_dataset(project, owner)
    release = submitted(project=project, owner=owner, dataset=dataset, statistics=STATISTICS)
    return lifecycle.release_approve(release=release, reviewer=reviewer)


def assert_failed_cleanly(release: Release) -> None:
    release.refresh_from_db()
    assert release.status == "failed"
    assert release.failure_reason == REASON
    assert list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    ) == ["reserve", "charge"]  # it failed while reading the rows: charged, never refunded
    for event in ReleaseEvent.objects.filter(release=release):
        assert CANARY not in event.comment


def strict_cast(column):
    """A reader whose error quotes the cell (pyarrow's own parse error), the canary among them."""
    text = [v.decode("utf-8", "replace") if v is not None else None for v in column.to_pylist()]
    return pc.cast(pa.array(text, type=pa.string()), pa.float64())


@pytest.mark.django_db
def test_strict_cast_quotes_the_canary(project, owner):
    """The in-process test below can fail: its reader's error carries the canary."""
    dataset = poisoned_dataset(project, owner)
    column = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file).column("amount")
    with pytest.raises(pa.ArrowInvalid, match=CANARY):
        strict_cast(column.combine_chunks())


@pytest.mark.django_db
def test_failing_compute_in_process_logs_types_only(
    project, owner, reviewer, settings, caplog, monkeypatch
):
    settings.DPPORTAL_COMPUTE_RETRY_BASE_SECONDS = 0
    monkeypatch.setattr("datasets.domains.numeric_values", strict_cast)
    release = approved(project, owner, reviewer)
    caplog.set_level(logging.DEBUG)
    result = release_compute_task.apply(args=[release.pk])  # eager: the retries run inline
    assert_failed_cleanly(release)
    records = "\n".join(
        record.getMessage()
        + ("".join(traceback.format_exception(*record.exc_info)) if record.exc_info else "")
        for record in caplog.records
    )
    assert "ArrowInvalid" in records  # the type is what is recorded
    assert CANARY not in records
    assert CANARY not in caplog.text
    assert CANARY not in f"{result.result!r} {result.traceback or ''}"


@pytest.mark.django_db
def test_an_exception_escaping_the_task_reaches_celery_as_its_type_only(
    project, owner, reviewer, monkeypatch
):
    release = approved(project, owner, reviewer)

    def database_down(**kwargs):
        raise RuntimeError(f"lost the connection while writing {CANARY}")

    # a refusal whose recording fails: the error escapes the task
    monkeypatch.setattr("releases.tasks.release_fail", database_down)

    def refused(**kwargs):
        raise compute.SpecMismatch("The release's specification changed.")

    monkeypatch.setattr(compute, "release_compute", refused)
    result = release_compute_task.apply(args=[release.pk])
    assert result.failed()
    assert repr(result.result) == "AttemptFailed('RuntimeError')"
    assert CANARY not in (result.traceback or "")
    assert result.result.__context__ is None and result.result.__cause__ is None


@pytest.mark.worker
def test_failing_compute_in_a_real_worker_logs_types_only(celery_workers, project, owner, reviewer):
    worker = celery_workers.start(DPPORTAL_COMPUTE_RETRY_BASE_SECONDS="0")
    release = approved(project, owner, reviewer)
    wait_for(
        lambda: Release.objects.get(pk=release.pk).status == "failed",
        timeout=180,
        message=f"not failed; log:\n{worker.log()}",
    )
    celery_workers.stop_all()
    assert_failed_cleanly(release)
    log = worker.log()
    assert "AttemptFailed('ArrowInvalid')" in log  # Celery's retry lines: the type only
    assert f"release {release.pk}: compute failed after retries (ArrowInvalid)" in log
    assert CANARY not in log
