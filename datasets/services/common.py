"""What the datasets services share: owner checks, where a dataset's files live."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext

from budgets.models import Membership, Project
from budgets.selectors import project_roles
from datasets.models import Dataset
from dpportal.errors import PermissionDenied

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe_cell(value: str) -> str:
    """A cell safe to write into an exported CSV: formula-like text gets a leading quote.

    Spreadsheets run cells that start with = + - @ (or tab / CR before them) as
    formulas (OWASP "CSV injection"); a leading single quote makes them text.
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def dataset_folder(*, dataset: Dataset) -> Path:
    return Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)


def dataset_parquet_path(*, dataset: Dataset) -> Path:
    """Absolute path of a ready dataset's Parquet file."""
    return Path(settings.MEDIA_ROOT) / dataset.parquet_file


def require_owner(*, project: Project, user: AbstractBaseUser) -> None:
    if Membership.Role.OWNER not in project_roles(project=project, user=user):
        raise PermissionDenied(gettext("Only the project's owners may do this."))
