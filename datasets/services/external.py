"""Registering Parquet in place, and its profile by the workers.

dataset_register_external checks the owner, the admin-granted permission
(datasets.register_external) and the location's syntax and allow-list
(datasets.locations.parse_location) at once; on any refusal nothing is created.
Nothing is listed or read in the request: the dataset is `uploaded` and the ingest
task lists the location (within DPPORTAL_EXTERNAL_MAX_FILES), checks its schema and
profiles it (datasets.external.profile, called by datasets.services.ingesting),
failing the dataset with the reason when the location is unusable. No Parquet copy
is written, and the data's own files are never written or deleted by dpportal
(deleting the dataset leaves them).
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from budgets.models import Project
from datasets import locations
from datasets.models import Dataset
from datasets.services.common import require_owner
from datasets.services.ingest_dispatch import dataset_dispatch_ingest
from dpportal.errors import PermissionDenied, ValidationFailed

logger = logging.getLogger(__name__)

PERMISSION = "datasets.register_external"


def user_may_register_external(*, user: AbstractBaseUser) -> bool:
    return bool(user.is_authenticated and user.has_perm(PERMISSION))


def dataset_register_external(
    *, project: Project, name: str, location: str, registered_by: AbstractBaseUser
) -> Dataset:
    """Register the Parquet at `location` as a new dataset of `project` and queue its profile."""
    require_owner(project=project, user=registered_by)
    if not user_may_register_external(user=registered_by):
        raise PermissionDenied(
            gettext("Registering data in place needs a permission an administrator grants.")
        )
    name = (name or "").strip()
    if not name:
        raise ValidationFailed(gettext("The dataset needs a name."))
    if len(name) > 200:
        raise ValidationFailed(gettext("The dataset's name must be at most 200 characters."))
    # IngestRejected is a ValidationFailed: the owner reads why, and nothing is created
    where = locations.parse_location(location)
    with transaction.atomic():
        dataset = Dataset.objects.create(
            project=project,
            name=name,
            uploaded_by=registered_by,
            external_kind=where.kind,
            external_location=where.path,
        )
        dataset_id = dataset.pk
        # robust: the dataset is committed by then; a failed send must not fail the
        # response (the periodic re-dispatch sends it later)
        transaction.on_commit(lambda: dataset_dispatch_ingest(dataset_id=dataset_id), robust=True)
    logger.info("dataset %s registered in place in project %s", dataset.pk, project.pk)
    return dataset
