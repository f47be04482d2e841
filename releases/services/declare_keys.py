"""Declaring the keys a release published as the categories of their column.

The categories are the published values only, read from the stored result (never
from the data again), so declaring them spends nothing. The column's declaration
records the release (Column.categories_source), and every later statistic using
the column states it on its review document and public page. Owners only; the
release must be computed or published and hold the statistic; the column's other
releases must not be under review or computing (their frozen specifications name
the column's current domain). Every check runs before anything is written.
"""

from __future__ import annotations

import logging

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from budgets.models import Project
from datasets.models import Column
from datasets.services.declaration_columns import MAX_CATEGORIES, _categorical
from dpportal.errors import ValidationFailed
from releases import kinds
from releases.models import Release
from releases.services.drafts import _require_owner

logger = logging.getLogger(__name__)

#: releases whose frozen specification may still be checked against the current domains
IN_FLIGHT = (
    Release.Status.SUBMITTED,
    Release.Status.APPROVED,
    Release.Status.QUEUED,
    Release.Status.COMPUTING,
)


def _entry(release: Release, position: object) -> dict:
    try:
        wanted = int(str(position).strip())
    except (TypeError, ValueError):
        raise ValidationFailed(gettext("Name the statistic whose keys to declare."))
    result = getattr(release, "result", None)
    payload = result.payload if result is not None else {}
    for entry in payload.get("statistics") or []:
        if int(entry.get("position", -1)) == wanted:
            kind = kinds.REGISTRY.get(str(entry.get("kind")))
            if kind is None or kind.fields != "keys":
                break
            return entry
    raise ValidationFailed(
        gettext("This release has no statistic of categories found in the data at that place.")
    )


def release_declare_found_keys(
    *, project: Project, release: Release, position: object, actor: AbstractBaseUser
) -> Column:
    """Declare the keys published by `release`'s statistic at `position` as the categories
    of its column; ValidationFailed (nothing changed) when it cannot be done."""
    _require_owner(project=project, user=actor)
    with transaction.atomic():
        # the release row first, then the column: the order every writer of both takes
        release = Release.objects.select_for_update().select_related("dataset").get(pk=release.pk)
        if release.project_id != project.pk:
            raise ValidationFailed(gettext("No such release."))
        if release.status not in (Release.Status.COMPUTED, Release.Status.PUBLISHED):
            raise ValidationFailed(
                gettext("Only the keys of a computed or published release can be declared.")
            )
        entry = _entry(release, position)
        keys = [str(k) for k in entry.get("cells") or []]
        if not keys:
            raise ValidationFailed(
                gettext("No key passed the threshold: there is nothing to declare.")
            )
        if len(keys) > MAX_CATEGORIES:
            raise ValidationFailed(
                gettext("At most %(limit)s categories may be declared.") % {"limit": MAX_CATEGORIES}
            )
        if any(k != k.strip() or not k for k in keys):
            raise ValidationFailed(
                gettext(
                    "A published key begins or ends with a space, which a declared category "
                    "cannot: declare the categories by hand instead."
                )
            )
        column = (
            Column.objects.select_for_update()
            .filter(dataset_id=release.dataset_id, name=entry["columns"][0])
            .first()
        )
        if column is None or column.kind != Column.Kind.CATEGORICAL or column.date:
            raise ValidationFailed(gettext("The column is no longer a categorical column."))
        if release.dataset.releases.filter(status__in=IN_FLIGHT).exists():
            raise ValidationFailed(
                gettext(
                    "A release using this dataset is under review or computing: declare the "
                    "categories once it is decided."
                )
            )
        errors: list[str] = []
        _categorical(column, {"categories": keys}, errors)
        if errors:
            raise ValidationFailed(
                gettext("These keys cannot be declared as categories: %(problems)s")
                % {"problems": " ".join(errors)}
            )
        column.categories_source = {
            "release": release.pk,
            "title": release.title or release.title_zh,
            "statistic": int(entry["position"]),
            "epsilon": str(entry["epsilon"]),
            "delta": str(entry["delta"]),
            "mechanism": str((entry.get("explanation") or {}).get("mechanism") or ""),
        }
        column.derived_from_data = [
            p for p in column.derived_from_data or [] if p != Column.Derived.CATEGORIES
        ]
        column.save(update_fields=["categories", "categories_source", "derived_from_data"])
    logger.info("column %s: categories declared from release %s", column.pk, release.pk)
    return column
