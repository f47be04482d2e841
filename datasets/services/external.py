"""Registering Parquet in place, and its profile by the workers.

dataset_register_external checks the owner, the admin-granted permission
(datasets.register_external), the location (datasets.external) and the schema
at once; on any refusal nothing is created. The dataset is then `uploaded` and
the ingest task profiles it (dataset_profile_external, called by
datasets.services.ingesting): no Parquet copy is written, and the data's own files
are never written or deleted by dpportal (deleting the dataset leaves them).
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from budgets.models import Project
from datasets import external
from datasets.models import Dataset
from datasets.services.common import require_owner
from datasets.services.ingest_dispatch import dataset_dispatch_ingest
from datasets.services.ingesting import ingest_limits
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
    where = external.parse_location(location)
    files = external.list_files(where)
    external.read_layout(where.kind, files, ingest_limits())
    with transaction.atomic():
        dataset = Dataset.objects.create(
            project=project,
            name=name,
            uploaded_by=registered_by,
            external_kind=where.kind,
            external_location=where.path,
        )
        dataset_id = dataset.pk
        transaction.on_commit(lambda: dataset_dispatch_ingest(dataset_id=dataset_id))
    logger.info("dataset %s registered in place in project %s", dataset.pk, project.pk)
    return dataset
