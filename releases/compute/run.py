"""The whole computation: claim, aggregate, finalize (noise drawn once), idempotently."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from budgets import services as budget_services
from datasets.storage import open_release_data
from dpportal.errors import RecordedError
from dpportal.privacy.rng import RandomSource
from releases import dp, kinds
from releases.compute import rows_per_person, spark_engine
from releases.compute.duckdb_engine import duckdb_plan, run_plan
from releases.compute.hooks import _failure_point, _pause_point
from releases.compute.readers import StatisticReader
from releases.compute.reading import aggregate_row_groups, keep_mask
from releases.lifecycle import (
    COMPUTABLE,
    release_data_read_begins,
    release_has_result,
    release_lock,
    release_transition,
)
from releases.models import Release, ReleaseResult
from releases.services import release_spec_build, spec_hash

logger = logging.getLogger(__name__)


class SpecMismatch(RecordedError):
    """The release's specification no longer matches what was approved.

    Raised in the worker and stored as the release's failure reason: its message is kept
    as records (dpportal.messages) and translated when read.
    """

    status_code = 409
    code = "spec_mismatch"


def release_verify_spec(*, release: Release) -> None:
    """Refuse a release whose spec no longer matches its approval or its current rows."""
    approved = release.budget_request.spec_hash if release.budget_request_id else ""
    if not release.spec or not approved:
        raise SpecMismatch(gettext_noop("The release has no frozen specification."))
    if spec_hash(release.spec) != approved or release.spec_hash != approved:
        raise SpecMismatch(
            gettext_noop("The release's stored specification does not match its approval.")
        )
    rebuilt = release_spec_build(release=release)
    if spec_hash(rebuilt) != approved:
        if rebuilt.get("external") != release.spec.get("external"):
            raise SpecMismatch(
                gettext_noop(
                    "A file of the data registered in place was changed, replaced, added or "
                    "removed after approval, or can no longer be read: the release is not "
                    "computed on data other than what was approved."
                )
            )
        raise SpecMismatch(
            gettext_noop(
                "The release's statistics or its columns' declared domains changed after approval."
            )
        )


def release_claim(*, release_id: int) -> Release | None:
    """Lock; skip if done; check the spec; queued -> computing. None: nothing to do."""
    with transaction.atomic():
        release = release_lock(release_id=release_id)
        # idempotency: results exist (or the release moved on): this delivery is a no-op
        if release.status not in COMPUTABLE or release_has_result(release=release):
            return None
        release_verify_spec(release=release)
        release.heartbeat_at = timezone.now()
        if release.status == Release.Status.QUEUED:
            release.progress = 0.0
            release_transition(
                release=release,
                to_status=Release.Status.COMPUTING,
                extra_fields=("heartbeat_at", "progress"),
            )
        else:
            release.save(update_fields=["heartbeat_at"])
    return release


def _progress_reporter(release_id: int, total: int) -> Callable[[int], None]:
    def report(done: int) -> None:
        # a plain autocommit UPDATE: visible at once to the page polling status.json
        Release.objects.filter(pk=release_id, status=Release.Status.COMPUTING).update(
            progress=min(done / max(total, 1), 0.99), heartbeat_at=timezone.now()
        )
        if done == 1:
            _pause_point()

    return report


def release_aggregate(*, release: Release, row_groups: list[int] | None = None) -> list[Any]:
    """The true aggregates of a claimed release (memory only).

    On the aggregation plan (releases.compute.plan, run on Spark or DuckDB as
    `compute_backend` says) when every statistic and column is on it; otherwise
    (quantiles on an uneven grid or on Spark, dates, text codes, numbers in text) through
    the numpy readers.

    The data is opened first (the plan reads the stored schema: a missing or unreachable
    copy fails here, before any row is read); then `_reading` marks the release as read
    (releases.lifecycle.release_data_read_begins), and only then are rows read: from that
    moment a failure charges the reservation (releases.lifecycle.release_fail).
    """
    spec = release.spec
    persons = [kinds.get(s["kind"]).aggregate == "persons" for s in spec["statistics"]]
    if any(persons):
        return _with_persons(release=release, persons=persons, row_groups=row_groups)
    return _aggregate(release=release, spec=spec, row_groups=row_groups)


def _aggregate(
    *, release: Release, spec: dict[str, Any], row_groups: list[int] | None
) -> list[Any]:
    """release_aggregate of `spec` (the release's, or its statistics but rows per person)."""
    if row_groups is None and compute_backend(release) == "spark":
        spark_plan = spark_engine.spark_plan(spec)
        if spark_plan is not None:
            logger.info("release %s: aggregating on spark", release.pk)
            report = _progress_reporter(release.pk, 1)
            _reading(release.pk)
            return spark_engine.run_plan(spec, spark_plan, on_pass=report)
    plan = duckdb_plan(spec) if row_groups is None else None
    if plan is not None:
        passes = 3 if spec["privacy_unit"]["id_column"] else 1
        _reading(release.pk)
        return run_plan(spec, plan, on_pass=_progress_reporter(release.pk, passes))
    return release_aggregate_numpy(spec=spec, release_id=release.pk, row_groups=row_groups)


def _with_persons(
    *, release: Release, persons: list[bool], row_groups: list[int] | None
) -> list[Any]:
    """A release with rows-per-person statistics: each of them by its own query over the
    ID column (releases.compute.rows_per_person), the others as any release's, in order.
    A person's rows may lie in any row group, so those statistics always read the whole
    ID column (`row_groups` applies to the others)."""
    spec = release.spec
    others = [s for s, p in zip(spec["statistics"], persons, strict=True) if not p]
    rest: list[Any] = []
    if others:
        rest = _aggregate(
            release=release, spec={**spec, "statistics": others}, row_groups=row_groups
        )
    else:
        _reading(release.pk)
    spark = row_groups is None and compute_backend(release) == "spark"
    out, taken = [], iter(rest)
    for entry, is_persons in zip(spec["statistics"], persons, strict=True):
        if not is_persons:
            out.append(next(taken))
        elif spark:
            out.append(rows_per_person.persons_spark(spec, entry))
        else:
            out.append(rows_per_person.persons_duckdb(spec, entry))
    return out


def _reading(release_id: int) -> None:
    """The moment before the first row is read (a test failure point, then the mark)."""
    _failure_point("before_read")
    release_data_read_begins(release_id=release_id)


def compute_backend(release: Release) -> str:
    """ "spark" or "local": the dataset's choice; on "auto", Spark only for a large
    dataset (DPPORTAL_SPARK_MIN_ROWS) when a cluster is set up (DPPORTAL_SPARK_MASTER).

    Not frozen in the spec: both engines give the same true aggregates.
    """
    choice = release.dataset.compute_backend
    if choice != "auto":
        return choice
    if not settings.DPPORTAL_SPARK_MASTER:
        return "local"
    rows = open_release_data(release.spec).metadata.num_rows
    return "spark" if rows >= settings.DPPORTAL_SPARK_MIN_ROWS else "local"


def release_aggregate_numpy(
    *, spec: dict[str, Any], release_id: int, row_groups: list[int] | None = None
) -> list[Any]:
    """The numpy readers' path (and the plan's test oracle): row-group chunks, keep_mask."""
    unit = spec["privacy_unit"]
    readers = [
        StatisticReader.from_spec(s, id_column=unit["id_column"]) for s in spec["statistics"]
    ]
    parquet = open_release_data(spec)
    _reading(release_id)
    mask = None
    if unit["id_column"]:
        mask = keep_mask(parquet, id_column=unit["id_column"], bound=unit["contribution_bound"])
    groups = list(range(parquet.num_row_groups)) if row_groups is None else row_groups
    totals = aggregate_row_groups(
        parquet=parquet,
        readers=readers,
        row_groups=groups,
        mask=mask,
        on_chunk=_progress_reporter(release_id, len(groups)),
    )
    # a reader that collects across row groups (the keys found in the data) counts at the end
    return [
        reader.finish(total) if hasattr(reader, "finish") else total
        for reader, total in zip(readers, totals, strict=True)
    ]


def release_finalize(
    *, release_id: int, aggregates: list[Any], rng: RandomSource | None = None
) -> bool:
    """ONE transaction: draw the noise once, store the results, CHARGE, mark computed.

    Returns False when another delivery got there first (nothing drawn). `rng`:
    the OS CSPRNG when None; only tests pass a seeded source.
    """
    with transaction.atomic():
        release = release_lock(release_id=release_id)
        # idempotency under the lock: only the first delivery to get here draws noise
        if release.status != Release.Status.COMPUTING or release_has_result(release=release):
            return False
        release_verify_spec(release=release)
        _failure_point("before_commit")
        spec = release.spec
        payload = {
            "version": 1,
            "confidence": spec["confidence"],
            "mechanism": spec["mechanism"],
            "statistics": [
                dp.noisy_entry(
                    entry=entry,
                    aggregate=aggregate,
                    mechanism=spec["mechanism"],
                    confidence=spec["confidence"],
                    contribution_bound=spec["privacy_unit"]["contribution_bound"],
                    cells=StatisticReader.from_spec(entry).axes,
                    rng=rng,
                )
                for entry, aggregate in zip(spec["statistics"], aggregates, strict=True)
            ],
        }
        ReleaseResult.objects.create(release=release, payload=payload)
        budget_services.budget_charge(
            budget_request=release.budget_request, note=f"release {release.pk} computed"
        )
        release.progress = 1.0
        release.computed_at = timezone.now()
        release_transition(
            release=release,
            to_status=Release.Status.COMPUTED,
            extra_fields=("progress", "computed_at"),
        )
    logger.info("release %s computed", release_id)
    _failure_point("after_commit")
    return True


class Heartbeat:
    """Writes the release's heartbeat_at every few seconds while this process computes it.

    A thread with its own database connection, so the heartbeat keeps coming while
    one chunk (or the privacy unit's pass over the ID column) takes long. The page
    and the periodic re-dispatch read a silent heartbeat as a lost worker (see
    releases.lifecycle): a SIGKILLed worker stops beating at once.
    """

    def __init__(self, release_id: int, interval: float | None = None) -> None:
        self.release_id = release_id
        self.interval = float(
            settings.DPPORTAL_COMPUTE_HEARTBEAT_SECONDS if interval is None else interval
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-release-{release_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def beat(self) -> None:
        Release.objects.filter(pk=self.release_id, status=Release.Status.COMPUTING).update(
            heartbeat_at=timezone.now()
        )

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    self.beat()
                except DatabaseError as exc:  # the database is away: try at the next beat
                    logger.warning(
                        "release %s: heartbeat not written (%s)",
                        self.release_id,
                        type(exc).__name__,
                    )
        finally:
            connection.close()  # this thread's own connection


class _AdvisoryLock:
    """A PostgreSQL session lock so two deliveries do not compute the same release at once.

    Only an optimisation: correctness comes from the locked checks in claim and
    finalize. The lock dies with the connection (a killed worker frees it).
    """

    def __init__(self, release_id: int) -> None:
        self.key = 0x44505052_00000000 + int(release_id)  # "DPPR" + id
        self.held = False

    def acquire(self) -> bool:
        if connection.vendor != "postgresql":
            self.held = True
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [self.key])
            self.held = bool(cursor.fetchone()[0])
        return self.held

    def release(self) -> None:
        if self.held and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [self.key])
        self.held = False


def release_compute(*, release_id: int, rng: RandomSource | None = None) -> str:
    """Compute a release end to end in this process. Idempotent; safe to run twice at once.

    Returns "computed", "done" (nothing to do: results exist or the release moved
    on) or "busy" (another delivery holds the computation). `rng` is for tests
    only (a seeded source); the task never passes it, so noise comes from the OS.
    """
    lock = _AdvisoryLock(release_id)
    if not lock.acquire():
        return "busy"
    try:
        release = release_claim(release_id=release_id)
        if release is None:
            return "done"
        with Heartbeat(release_id):
            aggregates = release_aggregate(release=release)
            _pause_point("aggregated")
            computed = release_finalize(release_id=release_id, aggregates=aggregates, rng=rng)
        return "computed" if computed else "done"
    finally:
        lock.release()
