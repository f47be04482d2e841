"""Cloning: a rejected or withdrawn release becomes a fresh draft with the same statistics."""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from datasets.models import Dataset
from datasets.selectors import dataset_usability_problem
from dpportal.errors import InvalidTransition, ValidationFailed
from releases.models import Release, ReleaseEvent
from releases.services.drafts import release_form_data, release_save_draft

logger = logging.getLogger(__name__)

#: Releases that ended without results: only these may be cloned. A computed or
#: published release is never cloned (asking again means a new release of its own).
CLONABLE = frozenset({Release.Status.REJECTED, Release.Status.WITHDRAWN})
COPY_SUFFIX = " (copy)"
COPY_SUFFIX_ZH = "（副本）"
TITLE_MAX = Release._meta.get_field("title").max_length


def _copy_title(title: str, suffix: str = COPY_SUFFIX) -> str:
    return title[: TITLE_MAX - len(suffix)] + suffix if title else ""


def release_clone(*, release: Release, actor: AbstractBaseUser) -> Release:
    """A new draft with `release`'s parameters and statistics (owners; rejected/withdrawn).

    The copy goes through the builder's validation like any draft
    (release_save_draft): the dataset must still be usable, every column still
    declared as the statistics need, and the cost must fit the remaining budget; on
    any problem nothing is written. The original is left as it is; the copy's
    history starts with an event naming it.
    """
    if release.status not in CLONABLE:
        raise InvalidTransition(
            gettext(
                "A release that is %(status)s cannot be cloned: only rejected or withdrawn "
                "releases can."
            )
            % {"status": release.get_status_display().lower()}
        )
    dataset = Dataset.objects.get(pk=release.dataset_id)  # as it is now, not as cached
    problem = dataset_usability_problem(dataset=dataset)
    if problem is not None:
        raise ValidationFailed(problem)
    data = release_form_data(release=release)
    data["title"] = _copy_title(release.title)
    data["title_zh"] = _copy_title(release.title_zh, COPY_SUFFIX_ZH)
    with transaction.atomic():
        clone = release_save_draft(project=release.project, actor=actor, data=data)
        ReleaseEvent.objects.create(
            release=clone,
            actor=actor,
            from_status="",
            to_status=Release.Status.DRAFT,
            comment=f"Cloned from release {release.pk} ({release.get_status_display().lower()}).",
        )
    logger.info("release %s cloned into draft %s", release.pk, clone.pk)
    return clone
