"""A dataset's person-rows copy (datasets.person_rows): made once its person-level unit
is confirmed, removed when the ID column changes (and with the dataset's files).

`dataset_person_rows_after_unit` is called by the declaration services inside
their transaction; after the commit it removes a copy made for another ID column
and sends the task that makes a fresh one (datasets.dispatch). The task calls
`dataset_person_rows_build`, which is idempotent: a fresh copy is left alone, a
stale one replaced. Without a copy (not made yet, the broker away, storage that
is not the local disk, a dataset on object storage) a release bounds persons
over the dataset itself: slower, the same result. Logs name ids and durations,
never anything of the data.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from django.conf import settings
from django.db import transaction

from datasets import dispatch, external, person_rows, storage
from datasets.models import Dataset

logger = logging.getLogger(__name__)


def dataset_person_rows_after_unit(*, dataset: Dataset, id_column_before: str) -> None:
    """After the unit's transaction commits: drop a copy made for another ID column; ask
    for one when a person-level unit is confirmed and no fresh copy exists."""
    dataset_id = dataset.pk
    if dataset.id_column != id_column_before:
        # after commit: a rolled-back change must not cost the copy
        transaction.on_commit(
            lambda: dataset_person_rows_remove(dataset_id=dataset_id), robust=True
        )
    if dataset.id_column and dataset.unit_confirmed_at is not None:
        # robust: the declaration is committed; the copy is optional (releases read the
        # dataset without it), so asking for it must not fail the request
        transaction.on_commit(lambda: _ask_for_copy(dataset_id), robust=True)


def _ask_for_copy(dataset_id: int) -> None:
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None or not _wanted(dataset) or _local_source(dataset) is None:
        return  # no copy wanted, or none possible (object storage)
    if _fresh(dataset) is None:
        dispatch.dataset_person_rows_send(dataset_id=dataset_id)


def dataset_person_rows_remove(*, dataset_id: int) -> None:
    """Delete the dataset's copy (a missing one is not an error)."""
    storage.delete(person_rows.stored_name(dataset_id))


def dataset_person_rows_build(*, dataset_id: int) -> bool:
    """Make the dataset's copy unless a fresh one exists. Returns whether a fresh copy
    exists afterwards (False: not wanted, or not possible for this dataset)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None or not _wanted(dataset):
        return False
    source = _local_source(dataset)
    target = person_rows.local_path(dataset.pk)
    if source is None or target is None:
        return False
    if _fresh(dataset) is not None:
        return True
    paths, identity = source
    started = time.monotonic()
    made = person_rows.build(
        paths=paths,
        id_column=dataset.id_column,
        identity=identity,
        target=target,
        memory_mb=int(settings.DPPORTAL_COMPUTE_MEMORY_MB),
        threads=int(settings.DPPORTAL_COMPUTE_THREADS or os.cpu_count() or 1),
    )
    logger.info(
        "dataset %s: person-rows copy %s in %.1f s",
        dataset.pk,
        "made" if made else "not made (columns not copied faithfully)",
        time.monotonic() - started,
    )
    return made


def _wanted(dataset: Dataset) -> bool:
    return bool(
        dataset.status == Dataset.Status.READY
        and dataset.id_column
        and dataset.unit_confirmed_at is not None
    )


def _local_source(dataset: Dataset) -> tuple[list[str], dict[str, Any]] | None:
    """The dataset's Parquet files on the local disk and their identity; None when the
    data (or dpportal's own storage) is not on the local disk."""
    if storage.is_remote():
        return None
    if dataset.external_kind:
        if dataset.external_kind != storage.EXTERNAL_LOCAL:
            return None
        spec = external.external_spec(dataset.external_kind, dataset.external_location)
        if not spec["files"]:
            return None
        paths = [f["path"] for f in spec["files"]]
        return paths, person_rows.source_identity(parquet_file="", external=spec)
    if not dataset.parquet_file:
        return None
    _, path = storage.filesystem_and_path(dataset.parquet_file)
    identity = person_rows.source_identity(parquet_file=dataset.parquet_file, external=None)
    return [path], identity


def _fresh(dataset: Dataset) -> str | None:
    source = _local_source(dataset)
    if source is None:
        return None
    return person_rows.fresh_path(
        dataset_id=dataset.pk, id_column=dataset.id_column, identity=source[1]
    )
