"""Drafts: create or replace a draft release from the builder's input; the input of a saved one."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from budgets.amounts import fmt
from budgets.models import Membership, Project
from budgets.selectors import project_roles
from dpportal.errors import InvalidTransition, NotFound, PermissionDenied
from releases import kinds
from releases.models import Release, Statistic
from releases.services.plan import release_plan_parse
from releases.services.plan_bounds import bounds_input
from releases.services.plan_crosstab import crosstab_input, crosstab_stored
from releases.services.plan_keys import keys_input, keys_stored
from releases.services.preview import _check_fits

logger = logging.getLogger(__name__)


def _require_owner(*, project: Project, user: AbstractBaseUser) -> None:
    roles = project_roles(project=project, user=user)
    if not roles:
        raise NotFound(gettext("No such project."))
    if Membership.Role.OWNER not in roles:
        raise PermissionDenied(gettext("Only an owner of the project may build releases."))


def release_save_draft(
    *, project: Project, actor: AbstractBaseUser, data: dict, release: Release | None = None
) -> Release:
    """Create (or replace the contents of) a draft release from the builder's input.

    Validates everything first (including that the cost fits the remaining
    budget); on any error nothing is written.
    """
    _require_owner(project=project, user=actor)
    plan = release_plan_parse(project=project, data=data)
    _check_fits(plan=plan)
    with transaction.atomic():
        if release is None:
            release = Release(project=project, created_by=actor)
        else:
            release = Release.objects.select_for_update().get(pk=release.pk)
            if release.project_id != project.pk:
                raise NotFound(gettext("No such release."))
            if release.status != Release.Status.DRAFT:
                raise InvalidTransition(
                    gettext("This release was submitted: its statistics and parameters are frozen.")
                )
        release.dataset = plan.dataset
        release.title, release.title_zh = plan.title, plan.title_zh
        release.description, release.description_zh = plan.description, plan.description_zh
        release.mechanism = plan.mechanism
        release.confidence = plan.confidence
        release.epsilon = plan.cost_epsilon
        release.delta = plan.cost_delta
        release.save()
        release.statistics.all().delete()
        Statistic.objects.bulk_create(
            [
                Statistic(
                    release=release,
                    position=s.position,
                    kind=s.kind,
                    label=s.label,
                    label_zh=s.label_zh,
                    description=s.description,
                    description_zh=s.description_zh,
                    column=s.column,
                    column2=s.column2,
                    category=s.category,
                    lower=s.lower if kinds.get(s.kind).bounded else None,
                    upper=s.upper if kinds.get(s.kind).bounded else None,
                    group_column=s.group_column,
                    group_column2=s.group_column2,
                    quantiles=list(s.quantiles),
                    step=s.step,
                    crosstab=crosstab_stored(s) if s.axes else {},
                    search=dict(s.search),
                    keys=keys_stored(s) if kinds.get(s.kind).fields == "keys" else {},
                    weight=s.weight,
                    hold=s.hold,
                    target_halfwidth=s.target_halfwidth,
                    n_guess=s.n_guess,
                    epsilon=s.epsilon,
                    delta=s.delta,
                )
                for i, s in enumerate(plan.statistics)
            ]
        )
    logger.info("release %s draft saved", release.pk)
    return release


def release_form_data(*, release: Release) -> dict[str, Any]:
    """A saved release as the builder's input (to edit a draft or re-preview it)."""
    return {
        "dataset": release.dataset_id,
        "title": release.title,
        "title_zh": release.title_zh,
        "description": release.description,
        "description_zh": release.description_zh,
        "mechanism": release.mechanism,
        "confidence": fmt(Decimal(release.confidence)),
        "epsilon": fmt(release.epsilon),
        "delta": fmt(release.delta),
        "statistics": [
            {
                "kind": s.kind,
                "label": s.label,
                "label_zh": s.label_zh,
                "description": s.description,
                "description_zh": s.description_zh,
                "column": s.column.name if s.column else "",
                "column2": s.column2.name if s.column2 else "",
                "category": s.category,
                "lower": fmt(s.lower) if s.lower is not None else "",
                "upper": fmt(s.upper) if s.upper is not None else "",
                "weight": fmt(s.weight),
                "hold": s.hold,
                "epsilon": fmt(s.epsilon) if s.hold and s.epsilon is not None else "",
                "target_halfwidth": s.target_halfwidth if s.target_halfwidth else "",
                "n_guess": s.n_guess or "",
                "group_by": s.group_column.name if s.group_column else "",
                "group_by2": s.group_column2.name if s.group_column2 else "",
                "quantiles": list(s.quantiles or []),
                "step": fmt(s.step) if s.step is not None else "",
                **(crosstab_input(s.crosstab) if s.crosstab else {}),
                **(bounds_input(s.search) if s.search else {}),
                **(keys_input(s.keys) if s.keys else {}),
            }
            for s in release.statistics.select_related(
                "column", "column2", "group_column", "group_column2"
            )
        ],
    }
