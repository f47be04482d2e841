"""Parsing a statistic of the categories found in the data (partition selection).

The owner names one categorical column (its declared categories, if any, are not
used: the keys are the values found), how many distinct keys of one person are
counted (at most the release's contribution bound L with a person column; 1 when
rows are the unit), whether the noisy counts are published with the keys, and the
most keys to publish (at most RELEASE_KEYS_MAX_SHOWN).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext

from datasets.models import Column, Dataset
from dpportal import formatting
from dpportal.errors import ValidationFailed
from releases.plans import StatisticPlan
from releases.services.plan_fields import _bool, _column


def _whole(value: object, *, default: int, message: str) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        raise ValidationFailed(message)


def parse_keys(plan: StatisticPlan, raw: dict, *, dataset: Dataset, columns: dict) -> None:
    """Fill `plan`'s column, keys_per_person, with_counts and max_keys from `raw`."""
    plan.column = _column(dataset, columns, raw.get("column"), what="keys")
    if plan.column.kind != Column.Kind.CATEGORICAL or plan.column.date:
        raise ValidationFailed(
            gettext(
                "Categories found in the data need a column declared categorical (text or "
                "codes); '%(name)s' is not."
            )
            % {"name": plan.column.name}
        )
    bound = int(dataset.contribution_bound or 1) if dataset.id_column else 1
    plan.keys_per_person = _whole(
        raw.get("keys_per_person"),
        default=1,
        message=gettext("The keys per person must be a whole number."),
    )
    if not dataset.id_column and plan.keys_per_person != 1:
        raise ValidationFailed(
            gettext(
                "Without a person column every row is a person holding one key: the keys per "
                "person must be 1."
            )
        )
    if not 1 <= plan.keys_per_person <= bound:
        raise ValidationFailed(
            gettext(
                "The keys per person must be between 1 and the contribution bound L (%(bound)s)."
            )
            % {"bound": formatting.integer(bound)}
        )
    plan.with_counts = True if raw.get("with_counts") in (None, "") else _bool(raw["with_counts"])
    limit = int(settings.RELEASE_KEYS_MAX_SHOWN)
    plan.max_keys = _whole(
        raw.get("max_keys"),
        default=limit,
        message=gettext("The most keys to publish must be a whole number."),
    )
    if not 1 <= plan.max_keys <= limit:
        raise ValidationFailed(
            gettext("The most keys to publish must be between 1 and %(limit)s.")
            % {"limit": formatting.integer(limit)}
        )


def keys_stored(plan: StatisticPlan) -> dict:
    """The statistic's keys fields as Statistic.keys stores them."""
    return {
        "keys_per_person": plan.keys_per_person,
        "with_counts": plan.with_counts,
        "max_keys": plan.max_keys,
    }


def keys_input(stored: dict) -> dict:
    """Statistic.keys as the builder's input."""
    return {
        "keys_per_person": stored.get("keys_per_person", 1),
        "with_counts": bool(stored.get("with_counts", True)),
        "max_keys": stored.get("max_keys", ""),
    }
