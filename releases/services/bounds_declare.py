"""Declaring a private bounds estimate as its column's public bounds.

The owner of a dataset declares the (lower, upper) a computed private-bounds release
found as the column's bounds, with their provenance (Column.bounds_estimate), which the
frozen specification of every later statistic using the column carries
(releases.kinds.domains.column_domain). Declaring changes later releases only: a
release already computed keeps the bounds frozen in its specification, and one in
flight (submitted to computing) would no longer match its approval, so declaring is
refused while one uses the dataset.
"""

from __future__ import annotations

import logging
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from datasets.models import Column, Dataset
from datasets.services.common import require_owner
from dpportal.errors import ValidationFailed
from releases import kinds
from releases.models import Release

logger = logging.getLogger(__name__)

#: releases whose frozen specification must still match the columns' declared domains
IN_FLIGHT = ("submitted", "approved", "queued", "computing")
#: the declared bounds' decimal places (Column.lower/upper), rounded outward
PLACES = Decimal("1e-10")


@transaction.atomic
def bounds_declare(*, release: Release, position: int, actor: AbstractBaseUser) -> Column:
    """Declare the bounds statistic `position` of `release` as its column's bounds."""
    require_owner(project=release.project, user=actor)
    # lock the dataset so a submission cannot freeze a spec between the check and the write
    dataset = Dataset.objects.select_for_update().get(pk=release.dataset_id)
    if release.status not in (Release.Status.COMPUTED, Release.Status.PUBLISHED):
        raise ValidationFailed(gettext("Only a computed release's bounds can be declared."))
    entries = (release.result.payload if hasattr(release, "result") else {}).get("statistics")
    entry = next((e for e in entries or [] if e.get("position") == position), None)
    if entry is None or kinds.REGISTRY.get(str(entry.get("kind"))) is None:
        raise ValidationFailed(gettext("The release has no such statistic."))
    if kinds.get(entry["kind"]).fields != "bounds":
        raise ValidationFailed(gettext("Only private bounds can be declared as a column's bounds."))
    bounds = entry.get("bounds") or {}
    if any(value is None for value in bounds.values()):
        raise ValidationFailed(
            gettext("A bound was not found within the search's limit: there is nothing to declare.")
        )
    if dataset.releases.filter(status__in=IN_FLIGHT).exists():
        raise ValidationFailed(
            gettext(
                "A release of this dataset is under review or computing: declaring bounds now "
                "would change what it was approved with. Declare them once it is computed."
            )
        )
    column = Column.objects.select_for_update().get(dataset=dataset, name=entry["columns"][0])
    if column.kind != Column.Kind.NUMERIC:
        raise ValidationFailed(gettext("Only a numeric column's bounds can be declared."))
    if "lower" in bounds:
        column.lower = Decimal(bounds["lower"]).quantize(PLACES, rounding=ROUND_FLOOR)
    if "upper" in bounds:
        column.upper = Decimal(bounds["upper"]).quantize(PLACES, rounding=ROUND_CEILING)
    if column.lower is not None and column.upper is not None and column.lower >= column.upper:
        raise ValidationFailed(gettext("The estimated bounds do not make a range."))
    column.bounds_estimate = {
        "release": release.pk,
        "title": release.title,
        "epsilon": str(entry["epsilon"]),
        # only the ends the estimate found (the other stays the owner's knowledge)
        "lower": str(column.lower.normalize()) if "lower" in bounds else None,
        "upper": str(column.upper.normalize()) if "upper" in bounds else None,
        # an upper bound extrapolated under a tail model promises only what the model does
        **({"model": str(entry["tail"])} if entry.get("tail") else {}),
    }
    column.save(update_fields=["lower", "upper", "bounds_estimate"])
    logger.info("column %s: bounds declared from release %s", column.pk, release.pk)
    return column
