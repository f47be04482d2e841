"""Reads for datasets (see STYLE.md: selectors read)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow as pa
from botocore.exceptions import BotoCoreError, ClientError
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils.translation import gettext

from budgets.models import Membership, Project
from budgets.selectors import project_roles, role_required
from datasets import storage
from datasets.ingest.profile import rounded_share
from datasets.models import Column, Dataset
from dpportal.errors import NotFound

logger = logging.getLogger(__name__)

# Release statuses in which the dataset's declaration may still change.
EDITABLE_RELEASE_STATUSES = ("draft",)


def dataset_get_for_member(
    *,
    dataset_id: int,
    user: AbstractBaseUser | AnonymousUser,
    roles: set[str] | None = None,
) -> Dataset:
    """The dataset if `user` is a member of its project (with one of `roles`, if given).

    Non-members and anonymous users get NotFound (404) so that datasets' existence
    does not leak; members lacking the role get PermissionDenied (403).
    """
    dataset = Dataset.objects.select_related("project").filter(pk=dataset_id).first()
    held = project_roles(project=dataset.project, user=user) if dataset else set()
    if dataset is None or not held:
        raise NotFound(gettext("No such dataset."))
    if roles is not None and not (held & roles):
        raise role_required(roles)
    return dataset


def dataset_list_for_project(*, project: Project) -> QuerySet[Dataset]:
    """The project's datasets, newest first (the caller checks membership)."""
    return Dataset.objects.filter(project=project).order_by("-uploaded_at", "-id")


def dataset_usability_problem(*, dataset: Dataset) -> str | None:
    """Why releases may not use the dataset yet, in words for its owners; None if they may.

    Usable: ingested, every column declared (excluded counts), and the privacy unit
    explicitly confirmed by an owner (never a default).
    """
    return dataset_usability_problems(datasets=[dataset])[dataset.pk]


def dataset_usability_problems(*, datasets: list[Dataset]) -> dict[int, str | None]:
    """dataset_usability_problem of several datasets, by id, in one query for all of their
    undeclared columns (not one per dataset)."""
    undeclared: dict[int, list[str]] = {d.pk: [] for d in datasets}
    names = (
        Column.objects.filter(dataset__in=list(undeclared), kind=Column.Kind.UNDECLARED)
        .order_by("dataset", "position")
        .values_list("dataset_id", "name")
    )
    for dataset_id, name in names:
        undeclared[dataset_id].append(name)
    return {d.pk: _usability_problem(d, undeclared=undeclared[d.pk][:6]) for d in datasets}


def _usability_problem(dataset: Dataset, *, undeclared: list[str]) -> str | None:
    has_data = dataset.parquet_file or dataset.external_kind
    name = dataset.name
    if dataset.status != Dataset.Status.READY or not has_data:
        return gettext("The dataset “%(name)s” is not ready (it is %(status)s).") % {
            "name": name,
            "status": dataset.get_status_display(),
        }
    if not dataset.declared or undeclared:
        if not undeclared:
            return gettext(
                "The dataset “%(name)s” cannot be used yet: declare every column on its "
                "declaration page (excluding the ones no release needs)."
            ) % {"name": name}
        columns = ", ".join(f"“{n}”" for n in undeclared[:5]) + (
            ", …" if len(undeclared) > 5 else ""
        )
        return gettext(
            "The dataset “%(name)s” cannot be used yet: declare every column (not yet: "
            "%(columns)s) on its declaration page (excluding the ones no release needs)."
        ) % {"name": name, "columns": columns}
    if dataset.unit_confirmed_at is None:
        return gettext(
            "The dataset “%(name)s” cannot be used yet: an owner must confirm its privacy "
            "unit (one row, or one person identified by an ID column with at most L rows) on "
            "the dataset's page."
        ) % {"name": name}
    return None


def dataset_is_usable(*, dataset: Dataset) -> bool:
    """Whether releases may use the dataset (see dataset_usability_problem)."""
    return dataset_usability_problem(dataset=dataset) is None


def dataset_unit_confirmed_for(*, dataset: Dataset, id_column: str, bound: int, at) -> bool:
    """Whether the unit (id_column, bound) was the one an owner had confirmed by `at`."""
    return (
        dataset.unit_confirmed_at is not None
        and dataset.unit_confirmed_at <= at
        and (dataset.id_column or "") == (id_column or "")
        and (not id_column or dataset.contribution_bound == bound)
    )


def dataset_is_frozen(*, dataset: Dataset) -> bool:
    """Whether the declaration is frozen: a release using it has left the draft stage."""
    return dataset.releases.exclude(status__in=EDITABLE_RELEASE_STATUSES).exists()


def dataset_list_usable(*, project: Project) -> QuerySet[Dataset]:
    """The project's datasets that releases may use (see dataset_usability_problem)."""
    return (
        dataset_list_for_project(project=project)
        .filter(status=Dataset.Status.READY, declared=True, unit_confirmed_at__isnull=False)
        .exclude(parquet_file="", external_kind="")
        .exclude(columns__kind=Column.Kind.UNDECLARED)
    )


def dataset_user_is_owner(*, dataset: Dataset, user: AbstractBaseUser | AnonymousUser) -> bool:
    return Membership.Role.OWNER in project_roles(project=dataset.project, user=user)


def dataset_ids_to_redispatch(
    *, now: datetime, uploaded_after: timedelta, stalled_after: timedelta
) -> list[int]:
    """Datasets whose ingest task must be sent again, oldest first.

    Still `uploaded` longer than `uploaded_after` after the upload or the last send
    (the broker was down, or lost the message); or `ingesting` with no heartbeat for
    `stalled_after` and not sent for as long (its worker died and no redelivery came).
    """
    last_sent = Coalesce("dispatched_at", "uploaded_at")
    waiting = Q(status=Dataset.Status.UPLOADED, last_sent__lte=now - uploaded_after)
    stalled = Q(status=Dataset.Status.INGESTING, last_sent__lte=now - stalled_after) & (
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lte=now - stalled_after)
    )
    return list(
        Dataset.objects.annotate(last_sent=last_sent)
        .filter(waiting | stalled)
        .order_by("uploaded_at", "pk")
        .values_list("pk", flat=True)
    )


@dataclass(frozen=True)
class DatasetShape:
    """What the owners are shown of a dataset's size (private, never published): its rows
    and, per column name, the share of its cells that are empty (a whole percent, as text,
    datasets.ingest.profile.rounded_share)."""

    rows: int
    empty_share: dict[str, str] = field(default_factory=dict)


def dataset_get_shape(*, dataset: Dataset) -> DatasetShape | None:
    """The rows and empty shares of an ingested dataset, read from its Parquet file's footer
    (the row groups' statistics: no data is read, nothing is stored); None when there is no
    file of its own (not ingested, or registered in place) or it cannot be read."""
    if dataset.status != Dataset.Status.READY or not dataset.parquet_file:
        return None
    try:
        meta = storage.open_parquet(dataset.parquet_file).metadata
    except (OSError, pa.ArrowException, storage.StorageError, BotoCoreError, ClientError) as exc:
        logger.warning(
            "dataset %s: its file's footer is unreadable (%s)", dataset.pk, type(exc).__name__
        )
        return None
    rows = int(meta.num_rows)
    empty: dict[str, str] = {}
    for position in range(meta.num_columns):
        nulls = 0
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(position).statistics
            if stats is None or not stats.has_null_count:
                nulls = -1
                break
            nulls += stats.null_count
        if nulls >= 0:
            empty[meta.schema.column(position).name] = rounded_share(nulls, rows)
    return DatasetShape(rows=rows, empty_share=empty)
