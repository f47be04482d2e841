"""A dataset's name and description for readers, in English and Simplified Chinese."""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from budgets.public_version import project_public_changed
from datasets.models import Dataset
from datasets.services.common import require_owner
from dpportal.bidi import bidi_controls_in
from dpportal.errors import ValidationFailed

logger = logging.getLogger(__name__)

NAME_MAX = Dataset._meta.get_field("name").max_length
DESCRIPTION_MAX = 5000


def _checked(value: str, *, limit: int) -> str:
    text = (value or "").strip()
    if len(text) > limit:
        raise ValidationFailed(
            gettext("A dataset's name or description may be at most %(limit)s characters.")
            % {"limit": limit}
        )
    if "\x00" in text:
        raise ValidationFailed(gettext("The text holds a NUL character: remove it."))
    if bidi_controls_in(text):
        raise ValidationFailed(
            gettext("The text holds an invisible direction control character: remove it.")
        )
    return text


@transaction.atomic
def dataset_texts_update(
    *,
    dataset: Dataset,
    actor: AbstractBaseUser,
    name: str,
    name_zh: str = "",
    description: str = "",
    description_zh: str = "",
) -> Dataset:
    """Set the dataset's name and description in both languages (owners). A name given
    in Chinese only is the plain name; a dataset always has a name."""
    require_owner(project=dataset.project, user=actor)
    name, name_zh = _checked(name, limit=NAME_MAX), _checked(name_zh, limit=NAME_MAX)
    if not name:
        name, name_zh = name_zh, ""
    if not name:
        raise ValidationFailed(gettext("A dataset needs a name."))
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    dataset.name, dataset.name_zh = name, name_zh
    dataset.description = _checked(description, limit=DESCRIPTION_MAX)
    dataset.description_zh = _checked(description_zh, limit=DESCRIPTION_MAX)
    dataset.save(update_fields=["name", "name_zh", "description", "description_zh"])
    project_public_changed(slug=dataset.project.slug)  # the registry names the dataset
    logger.info("dataset %s: texts updated by user %s", dataset.pk, actor.pk)
    return dataset
