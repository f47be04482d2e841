"""Fan-out: a large release's row groups aggregated by several workers, noised once.

A Celery chord: the header's part tasks each aggregate a share of the row
groups; the body merges the partial aggregates and runs the same finalize as
the in-process path (one transaction: noise drawn once, results stored,
CHARGE, computed). Only when settings.DPPORTAL_COMPUTE_FANOUT is on (it needs
a result backend: Redis).

Partial aggregates are TRUE values, so they never travel or rest in clear:
each part seals its partials with a fresh per-computation key before returning
them (cryptography's Fernet: AES-128-CBC then HMAC-SHA256, authenticated; the
part's id is sealed inside and checked, so a token cannot stand in for another
part's); only the merge task, which receives the key in its own message, opens
them. The key lives in broker messages only until they are acknowledged, and
the merge forgets the parts' results in the result backend right after merging.

Failure: a part retries (retry.retry_countdown) while the release is still
computing; when its retries are exhausted it fails the release with a reason
and RELEASEs the reservation (lifecycle.release_fail: under the release row
lock, a no-op once results are stored or the release has moved on, so several
failing parts fail it once), then raises, so the chord's merge never runs.
Failures are recorded as retry.AttemptFailed(<type>), never with their text.

Scope: a privacy unit of one row. With an ID column the per-person row
selection needs the whole ID column in one place, so such releases are
computed in one process (releases.compute).
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, NoReturn

import numpy as np
import pyarrow.parquet as pq
from celery import chord, shared_task
from celery.result import AsyncResult
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone

from releases import compute
from releases.lifecycle import release_fail
from releases.models import Release
from releases.retry import MAX_RETRIES, attempt_failed, retry_countdown, retry_scrubbed

logger = logging.getLogger(__name__)

#: fan out only when the file has at least this many row groups
MIN_ROW_GROUPS = 4


def parts_count() -> int:
    return max(2, int(getattr(settings, "DPPORTAL_COMPUTE_FANOUT_PARTS", 4)))


def should_fan_out(*, release_id: int) -> bool:
    release = Release.objects.filter(pk=release_id).only("spec").first()
    if release is None or not release.spec or release.spec["privacy_unit"]["id_column"]:
        return False
    try:
        groups = pq.ParquetFile(compute.dataset_path(release.spec)).num_row_groups
    except OSError:
        return False  # the in-process path reports the failure
    return groups >= MIN_ROW_GROUPS


# --- sealing partial aggregates -----------------------------------------------------


def new_key() -> str:
    """A fresh Fernet key (32 random bytes from os.urandom, url-safe base64) for one computation."""
    return Fernet.generate_key().decode("ascii")


def seal(value: Any, *, key: str, part_id: str) -> str:
    """Encrypt and authenticate a part's partial aggregates (JSON) with Fernet."""
    data = json.dumps({"part": part_id, "aggregates": value}, separators=(",", ":"))
    return Fernet(key.encode("ascii")).encrypt(data.encode()).decode("ascii")


def unseal(token: str, *, key: str, part_id: str) -> Any:
    """Open a sealed part; ValueError if it was altered, sealed with another key or part."""
    try:
        data = json.loads(Fernet(key.encode("ascii")).decrypt(token.encode("ascii")))
    except InvalidToken:
        raise ValueError("a partial aggregate failed its integrity check") from None
    if not isinstance(data, dict) or data.get("part") != part_id:
        raise ValueError("a partial aggregate was sealed for another part")
    return data["aggregates"]


def _plain(aggregates: list[Any]) -> list[Any]:
    return [a.tolist() if isinstance(a, np.ndarray) else a for a in aggregates]


def _restore(aggregates: list[Any], readers: list[compute.StatisticReader]) -> list[Any]:
    out = []
    for value, reader in zip(aggregates, readers, strict=True):
        empty = reader.empty()
        out.append(np.asarray(value, dtype=np.int64) if isinstance(empty, np.ndarray) else value)
    return out


# --- the chord ----------------------------------------------------------------------


def release_compute_fanout(*, release_id: int) -> str:
    """Claim the release and send the chord of parts; the merge finalizes it."""
    release = compute.release_claim(release_id=release_id)
    if release is None:
        return "done"
    groups = pq.ParquetFile(compute.dataset_path(release.spec)).num_row_groups
    shares = [list(map(int, s)) for s in np.array_split(np.arange(groups), parts_count()) if len(s)]
    key = new_key()
    part_ids = [str(uuid.uuid4()) for _ in shares]
    queue = release_compute_part_task.app.conf.task_default_queue
    header = [
        release_compute_part_task.signature(
            args=[release_id, share, key, part_id, groups], task_id=part_id, queue=queue
        )
        for share, part_id in zip(shares, part_ids, strict=True)
    ]
    body = release_compute_merge_task.signature(args=[release_id, key, part_ids], queue=queue)
    chord(header)(body)
    logger.info("release %s fanned out in %s parts", release_id, len(shares))
    return "fanned out"


@shared_task(
    bind=True,
    name="releases.compute_part",
    ignore_result=False,  # a chord needs its parts' (sealed) results
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
)
def release_compute_part_task(
    self, release_id: int, row_groups: list[int], key: str, part_id: str, total: int
) -> str:
    """Aggregate some row groups; return them sealed (never in clear)."""
    try:
        aggregates = _part_aggregates(release_id=release_id, row_groups=row_groups, total=total)
    except Exception as exc:
        _part_retry_or_fail(self, release_id=release_id, exc=exc)
    return seal(_plain(aggregates), key=key, part_id=part_id)


def _part_aggregates(*, release_id: int, row_groups: list[int], total: int) -> list[Any]:
    release = Release.objects.get(pk=release_id)
    readers = [compute.StatisticReader.from_spec(s) for s in release.spec["statistics"]]
    parquet = pq.ParquetFile(compute.dataset_path(release.spec))
    state = {"first": True}

    def on_chunk(done: int) -> None:
        Release.objects.filter(pk=release_id, status=Release.Status.COMPUTING).update(
            progress=Least(F("progress") + 1.0 / max(total, 1), 0.99),
            heartbeat_at=timezone.now(),
        )
        if state.pop("first", False):
            compute._pause_point()

    aggregates = compute.aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=row_groups, mask=None, on_chunk=on_chunk
    )
    compute._failure_point("part")
    return aggregates


def _still_computing(release_id: int) -> bool:
    try:
        return Release.objects.filter(pk=release_id, status=Release.Status.COMPUTING).exists()
    except Exception:  # the database is unreachable: keep retrying
        return True


def _part_retry_or_fail(task, *, release_id: int, exc: Exception) -> NoReturn:
    # never log or record the exception's text: it could quote data; its type is enough
    kind = type(exc).__name__
    if task.request.retries < task.max_retries and _still_computing(release_id):
        logger.warning(
            "release %s: part attempt %s failed (%s); retrying",
            release_id,
            task.request.retries + 1,
            kind,
        )
        retry_scrubbed(task, exc=exc, countdown=retry_countdown(task.request.retries))
    logger.error(
        "release %s: a part gave up after %s attempt(s) (%s)",
        release_id,
        task.request.retries + 1,
        kind,
    )
    try:
        release_fail(
            release_id=release_id,
            reason=f"Part of the computation failed {task.request.retries + 1} times ({kind}); "
            "the reserved budget was returned.",
        )
    except Exception as fail_exc:  # the database is down: the stalled re-dispatch sends it again
        logger.error(
            "release %s: could not record the failure (%s)", release_id, type(fail_exc).__name__
        )
    raise attempt_failed(exc) from None  # the chord fails: its merge never runs


@shared_task(
    bind=True,
    name="releases.compute_merge",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=MAX_RETRIES,
    ignore_result=True,
)
def release_compute_merge_task(
    self, sealed: list[str], release_id: int, key: str, part_ids: list[str]
) -> None:
    """Open and merge the parts, forget them in the result backend, finalize once."""
    try:
        release = Release.objects.get(pk=release_id)
        readers = [compute.StatisticReader.from_spec(s) for s in release.spec["statistics"]]
        totals = [r.empty() for r in readers]
        for token, part_id in zip(sealed, part_ids, strict=True):
            part = _restore(unseal(token, key=key, part_id=part_id), readers)
            totals = [compute.merge(a, b) for a, b in zip(totals, part, strict=True)]
        for part_id in part_ids:
            AsyncResult(part_id, app=self.app).forget()
        outcome = compute.release_finalize(release_id=release_id, aggregates=totals)
    except compute.SpecMismatch as exc:
        release_fail(release_id=release_id, reason=exc.message)
        return
    except Exception as exc:
        if self.request.retries < self.max_retries:
            logger.warning(
                "release %s: merge failed (%s); retrying", release_id, type(exc).__name__
            )
            retry_scrubbed(self, exc=exc, countdown=retry_countdown(self.request.retries))
        try:
            release_fail(
                release_id=release_id,
                reason=f"The computation failed ({type(exc).__name__}); the reserved budget "
                "was returned.",
            )
        except Exception as fail_exc:  # never raised with `exc` (its text) as context
            logger.error(
                "release %s: could not record the failure (%s)",
                release_id,
                type(fail_exc).__name__,
            )
        return
    logger.info("release %s merged: %s", release_id, "computed" if outcome else "done")
