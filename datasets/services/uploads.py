"""Upload and deletion of datasets (the ingest itself: datasets.services.ingesting)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from budgets.models import Project
from datasets import storage
from datasets.ingest import CsvDialect, human_size
from datasets.ingest.formats import file_format, source_name
from datasets.models import Dataset
from datasets.private_files import open_private
from datasets.services.common import dataset_folder, require_owner
from datasets.services.ingest_dispatch import dataset_dispatch_ingest
from datasets.services.reading import detect_read_options, parse_read_options
from dpportal.errors import InvalidTransition, UploadTooLarge, ValidationFailed

logger = logging.getLogger(__name__)


def dataset_create(
    *,
    project: Project,
    name: str,
    uploaded_file: File,
    uploaded_by: AbstractBaseUser,
    dispatch: bool = True,
    sheet: str = "",
    read_options: Mapping | None = None,
    review: bool = False,
) -> Dataset:
    """Store an uploaded file (any format of datasets.ingest.formats) as a new
    dataset and queue its ingest, or leave a CSV awaiting the owner's confirmation
    of how it is read.

    Size checks happen before anything is stored. The encoding, delimiter, quote,
    decimal mark and header are detected on a sample, with `read_options` (any of
    datasets.services.reading.OPTION_NAMES) applied over the detection. The ingest
    is queued at once when the detection is plain or options were given, unless
    `review` asks to see the preview first; otherwise the dataset is `awaiting`
    (datasets.services.reading). Only a CSV or TSV (plain, gzip or zip; a TSV's
    delimiter preset to tab, and plain when UTF-8 with a header) is detected and may
    await: other formats say their own types and text encoding, so they keep no
    read options (giving any is refused) and are queued at once. `sheet` names an
    Excel file's sheet. With `dispatch` the ingest task is sent after the
    commit (the row must exist when the worker looks); seed_demo passes
    dispatch=False and ingests in-process.
    """
    given = {k: v for k, v in (read_options or {}).items() if v not in (None, "", "auto")}
    # a bad option refuses before storing; how they combine is checked after detection
    parse_read_options(given, base=CsvDialect(), combined=False)
    require_owner(project=project, user=uploaded_by)
    name = (name or "").strip() or Path(uploaded_file.name or "dataset").stem.strip()
    if not name:
        raise ValidationFailed(gettext("The dataset needs a name."))
    if len(name) > 200:
        raise ValidationFailed(gettext("The dataset's name must be at most 200 characters."))
    size = uploaded_file.size or 0
    if size == 0:
        raise ValidationFailed(gettext("The file is empty."))
    limit = settings.DPPORTAL_MAX_UPLOAD_BYTES
    if size > limit:
        raise UploadTooLarge(
            gettext("The file is %(size)s; the limit is %(limit)s.")
            % {"size": human_size(size), "limit": human_size(limit)}
        )
    uploaded_file.seek(0)
    stored_name = source_name(uploaded_file.name or "", uploaded_file.read(32))
    uploaded_file.seek(0)
    fmt, wrapper = file_format(stored_name)
    is_csv = fmt in ("csv", "tsv")  # plain, gzip or a single-file zip
    preset = CsvDialect(delimiter="\t" if fmt == "tsv" else ",")  # a .tsv is a CSV with tabs
    if given and not is_csv:
        raise ValidationFailed(
            gettext(
                "The encoding, delimiter, quote, decimal mark and header options apply to "
                "CSV and TSV files only (plain, gzip or zip)."
            )
        )
    sheet = (sheet or "").strip()
    if len(sheet) > 200:
        raise ValidationFailed(gettext("The sheet's name must be at most 200 characters."))
    if sheet and file_format(stored_name)[0] != "xlsx":
        raise ValidationFailed(gettext("A sheet can be chosen for an Excel workbook (.xlsx) only."))
    folder: Path | None = None
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                project=project, name=name, uploaded_by=uploaded_by, sheet=sheet
            )
            folder = dataset_folder(dataset=dataset)
            target = folder / stored_name
            with open_private(target) as out:
                for chunk in uploaded_file.chunks():
                    out.write(chunk)
            dataset.source_file = str(target.relative_to(settings.MEDIA_ROOT))
            if is_csv:
                detected = detect_read_options(
                    path=target, delimiter="\t" if fmt == "tsv" else None
                )
                dialect = parse_read_options(given, base=detected or preset)
                dataset.read_options = dialect.to_dict()
                if detected is not None and (review or not (given or dialect == preset)):
                    dataset.status = Dataset.Status.AWAITING
            dataset.save(update_fields=["source_file", "read_options", "status"])
            if dispatch and dataset.status == Dataset.Status.UPLOADED:
                dataset_id = dataset.pk
                # After commit: the worker must find the row. Robust: the dataset is
                # committed by then, and a failed send must not undo its file or fail
                # the response (the periodic re-dispatch sends it later).
                transaction.on_commit(
                    lambda: dataset_dispatch_ingest(dataset_id=dataset_id), robust=True
                )
    except Exception:
        if folder is not None:  # the row rolled back: its file must go too
            shutil.rmtree(folder, ignore_errors=True)
        raise
    logger.info("dataset %s uploaded to project %s", dataset.pk, project.pk)
    return dataset


def dataset_delete(*, dataset: Dataset, actor: AbstractBaseUser) -> None:
    """Delete a dataset, its columns and its files (refused once a release uses it)."""
    require_owner(project=dataset.project, user=actor)
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            return
        if locked.releases.exists():
            raise InvalidTransition(
                gettext(
                    "This dataset is used by releases, so it is kept: their results refer to it."
                )
            )
        folder = dataset_folder(dataset=locked)
        locked.delete()
        # Files go only once the row is surely gone.
        dataset_id = dataset.pk
        # robust: the row is gone; a file left behind must not turn that into an error
        transaction.on_commit(lambda: _remove_files(folder, dataset_id), robust=True)
    logger.info("dataset %s deleted", dataset.pk)


def _remove_files(folder, dataset_id: int) -> None:
    """The dataset's local folder (source upload) and its stored files (Parquet)."""
    shutil.rmtree(folder, ignore_errors=True)
    storage.delete_dataset_files(dataset_id)


def failed_upload_retention() -> timedelta:
    """How long a failed upload's row (its reason) is kept before it is removed."""
    return timedelta(days=settings.DPPORTAL_FAILED_UPLOAD_RETENTION_DAYS)


def dataset_cleanup_failed(*, now: datetime | None = None) -> int:
    """Remove failed uploads older than the retention period (row and any file left).

    Run by celery beat. The owners are told the period on the dataset's page; they
    may dismiss a failed upload sooner (dataset_delete). Returns how many went.
    """
    cutoff = (now or timezone.now()) - failed_upload_retention()
    removed = _remove_stale(Dataset.Status.FAILED, failed_at__lte=cutoff)
    if removed:
        logger.info("removed %s failed upload(s) past the retention period", removed)
    return removed


def _remove_stale(status: str, **older: datetime) -> int:
    """Remove unused datasets in `status` matching `older` (a time filter), row and files.

    Each row is re-checked under its lock, so one that moved on meanwhile (a
    confirmation, a retried ingest) is left alone.
    """
    ids = list(
        Dataset.objects.filter(status=status, releases__isnull=True, **older).values_list(
            "pk", flat=True
        )
    )
    removed = 0
    for dataset_id in ids:
        with transaction.atomic():
            dataset = (
                Dataset.objects.select_for_update().filter(pk=dataset_id, status=status, **older)
            ).first()
            if dataset is None:
                continue
            folder = dataset_folder(dataset=dataset)
            dataset.delete()
        _remove_files(folder, dataset_id)
        removed += 1
    return removed


def awaiting_upload_retention() -> timedelta:
    """How long an upload may wait for its reading to be confirmed before it is removed."""
    return timedelta(hours=settings.DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS)


def dataset_cleanup_awaiting(*, now: datetime | None = None) -> int:
    """Remove uploads left `awaiting` confirmation longer than the retention (row and file).

    Run by celery beat: an owner who never confirms how a file is read would
    otherwise leave the private file on disk for ever. A confirmation racing this
    wins or loses on the row lock: a confirmed dataset is never removed here.
    Returns how many went.
    """
    cutoff = (now or timezone.now()) - awaiting_upload_retention()
    removed = _remove_stale(Dataset.Status.AWAITING, uploaded_at__lte=cutoff)
    if removed:
        logger.info("removed %s upload(s) left awaiting confirmation", removed)
    return removed
