"""Parsing the builder's input into a validated, allocated ReleasePlan (public parameters only)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.utils.translation import gettext, pgettext

from budgets.models import Project
from budgets.services import parse_delta, parse_epsilon
from datasets.models import Column, Dataset
from datasets.selectors import dataset_usability_problem
from dpportal import formatting
from dpportal.errors import ValidationFailed
from dpportal.statistic_names import UNTITLED_RELEASE, statistic_default_label
from releases import kinds
from releases.kinds.rows_per_person import parse_cap
from releases.models import Release, Statistic
from releases.plans import ReleasePlan, StatisticPlan
from releases.services.allocation import allocate
from releases.services.plan_bounds import parse_bounds
from releases.services.plan_crosstab import parse_crosstab
from releases.services.plan_fields import (
    _bool,
    _check_histogram_column,
    _clip_bounds,
    _column,
    _optional_decimal,
    _texts,
)
from releases.services.plan_keys import parse_keys
from releases.services.plan_stats import parse_statistic_stats

CONFIDENCES = ("0.90", "0.95", "0.99")
MAX_STATISTICS = 50
KINDS = tuple(Statistic.Kind.values)


def _parse_statistic(
    raw: dict, *, position: int, dataset: Dataset, columns: dict[str, Column]
) -> StatisticPlan:
    if not isinstance(raw, dict):
        raise ValidationFailed(gettext("Each statistic must be an object."))
    kind = str(raw.get("kind") or "").strip()
    if kind not in KINDS:
        raise ValidationFailed(
            gettext("Statistic %(number)s: unknown kind '%(kind)s'.")
            % {"number": position + 1, "kind": kind}
        )
    label, label_zh = _texts(raw, "label", field=pgettext("field", "label"), max_length=200)
    description, description_zh = _texts(
        raw, "description", field=pgettext("field", "description"), max_length=5000
    )
    plan = StatisticPlan(
        position=position,
        kind=kind,
        label=label,
        label_zh=label_zh,
        description=description,
        description_zh=description_zh,
    )
    where = gettext("Statistic %(number)s (%(kind)s)") % {
        "number": position + 1,
        "kind": str(Statistic.Kind(kind).label).lower(),
    }
    try:
        if kind == "count":
            if raw.get("column"):
                plan.column = _column(dataset, columns, raw.get("column"), what="count")
                if plan.column.kind != Column.Kind.CATEGORICAL:
                    raise ValidationFailed(
                        gettext("A count of one category needs a categorical column.")
                    )
                plan.category = str(raw.get("category") or "")
                if plan.category not in [str(c) for c in plan.column.categories]:
                    raise ValidationFailed(
                        gettext("'%(category)s' is not a declared category of '%(name)s'.")
                        % {"category": plan.category, "name": plan.column.name}
                    )
        elif kind == "histogram":
            plan.column = _column(dataset, columns, raw.get("column"), what="histogram")
            _check_histogram_column(plan.column)
            if raw.get("column2"):
                plan.column2 = _column(dataset, columns, raw.get("column2"), what="histogram")
                _check_histogram_column(plan.column2)
                if plan.column2.pk == plan.column.pk:
                    raise ValidationFailed(gettext("A 2-D histogram needs two different columns."))
        elif kind in ("sum", "mean"):
            plan.column = _column(dataset, columns, raw.get("column"), what=kind)
            plan.lower = _optional_decimal(raw.get("lower"), field=pgettext("field", "lower bound"))
            plan.upper = _optional_decimal(raw.get("upper"), field=pgettext("field", "upper bound"))
            _clip_bounds(plan, plan.column)
            if kind == "mean":
                n_guess = raw.get("n_guess")
                try:
                    plan.n_guess = int(str(n_guess).strip())
                except (TypeError, ValueError):
                    raise ValidationFailed(
                        gettext(
                            "A mean needs a planning guess of the number of rows (n), "
                            "a whole number: it is used for the preview only."
                        )
                    )
                if not (1 <= plan.n_guess <= 10**12):
                    raise ValidationFailed(
                        gettext("The planning guess of n must be between 1 and 10^12.")
                    )
        elif kinds.get(kind).fields == "grouped":
            parse_statistic_stats(plan, raw, dataset=dataset, columns=columns)
        elif kinds.get(kind).fields == "crosstab":
            parse_crosstab(plan, raw, dataset=dataset, columns=columns)
        elif kinds.get(kind).fields == "bounds":
            parse_bounds(plan, raw, dataset=dataset, columns=columns)
        elif kinds.get(kind).fields == "keys":
            parse_keys(plan, raw, dataset=dataset, columns=columns)
        elif kinds.get(kind).aggregate == "persons":
            if not dataset.id_column:
                raise ValidationFailed(
                    gettext(
                        "Rows per person needs a person column: declare the dataset's ID "
                        "column (its privacy unit) first."
                    )
                )
            # "cap" from the builder and the API; a saved draft gives it back as "upper"
            cap = raw.get("cap")
            plan.upper = Decimal(parse_cap(cap if cap not in (None, "") else raw.get("upper")))
        elif kind == "argmax":
            plan.column = _column(dataset, columns, raw.get("column"), what="argmax")
            if plan.column.kind != Column.Kind.CATEGORICAL or len(plan.column.categories) < 2:
                raise ValidationFailed(
                    gettext(
                        "The most common category needs a categorical column with at least two "
                        "declared categories."
                    )
                )
        weight = _optional_decimal(raw.get("weight"), field=pgettext("field", "weight"))
        plan.weight = Decimal(1) if weight is None else weight
        if plan.weight <= 0:
            raise ValidationFailed(gettext("Weights must be greater than 0."))
        plan.hold = _bool(raw.get("hold"))
        given = raw.get("epsilon")
        if given not in (None, ""):
            plan.epsilon_given = parse_epsilon(given, field=pgettext("field", "epsilon"))
        if plan.hold and plan.epsilon_given is None:
            raise ValidationFailed(gettext("A held statistic needs its epsilon."))
        target = raw.get("target_halfwidth")
        if target not in (None, ""):
            try:
                plan.target_halfwidth = float(target)
            except (TypeError, ValueError):
                raise ValidationFailed(gettext("The target half-width must be a number."))
            if not (0 < plan.target_halfwidth < 1e18):
                raise ValidationFailed(
                    gettext("The target rank error must be greater than 0.")
                    if kind == "quantiles"
                    else gettext("The target half-width must be greater than 0.")
                )
    except ValidationFailed as exc:
        raise ValidationFailed(
            gettext("%(where)s: %(problem)s") % {"where": where, "problem": exc.message}
        )
    if not plan.label and not plan.label_zh:
        plan.label = _default_label(plan)
    return plan


def _default_label(plan: StatisticPlan) -> str:
    """The English name dpportal gives a statistic without a label (pages translate it)."""
    return statistic_default_label(
        kind=plan.kind,
        columns=[c.name for c in plan.columns],
        groups=[c.name for c in plan.group_columns],
        category=plan.category,
        quantiles=plan.quantiles,
    )


def plan_cell_limits() -> dict[str, str]:
    """The cell limits as the builder states them (formatted whole numbers): "statistic"
    and "release" for every kind; "kinds": each lower limit by kind label (for one
    statistic and for all of that kind in a release)."""
    lowered = {
        str(Statistic.Kind(name).label).lower(): formatting.integer(kind.cell_limit())
        for name, kind in kinds.REGISTRY.items()
        if kind.cell_limit() < int(settings.RELEASE_MAX_CELLS_PER_STATISTIC)
    }
    return {
        "statistic": formatting.integer(settings.RELEASE_MAX_CELLS_PER_STATISTIC),
        "release": formatting.integer(settings.RELEASE_MAX_CELLS_PER_RELEASE),
        "kinds": ", ".join(
            gettext("%(limit)s for %(kind)s") % {"limit": limit, "kind": label}
            for label, limit in lowered.items()
        ),
    }


def plan_cells_text(*, statistics: list[StatisticPlan]) -> str:
    """The builder's line on a valid plan's cells: its count beside the release's limit."""
    return gettext("Cells: %(cells)s of at most %(limit)s per release.") % {
        "cells": formatting.integer(plan_check_cells(statistics=statistics)),
        "limit": formatting.integer(settings.RELEASE_MAX_CELLS_PER_RELEASE),
    }


def plan_check_cells(*, statistics: list[StatisticPlan]) -> int:
    """The release's cells in all, once each statistic is within its kind's cell limit, the
    cells of each dearer kind within that kind's limit (StatisticKind.cell_limit_setting)
    and the total within RELEASE_MAX_CELLS_PER_RELEASE; ValidationFailed naming the
    limit and the count otherwise. Every surface of a result reads each cell, so these
    bound the cost of its pages and downloads (a cell: StatisticKind.cell_count)."""
    total = 0
    by_setting: dict[str, tuple[int, list[str]]] = {}
    for stat in statistics:
        kind = kinds.get(stat.kind)
        cells, limit = kind.cell_count(stat), kind.cell_limit()
        label = str(Statistic.Kind(stat.kind).label).lower()
        if cells > limit:
            raise ValidationFailed(
                gettext(
                    "Statistic %(number)s (%(kind)s): at most %(limit)s cells per statistic of "
                    "this kind; this one has %(cells)s. Declare fewer categories or bins, or "
                    "group by fewer columns."
                )
                % {
                    "number": stat.position + 1,
                    "kind": label,
                    "limit": formatting.integer(limit),
                    "cells": formatting.integer(cells),
                }
            )
        total += cells
        if kind.cell_limit_setting is not None:
            count, labels = by_setting.get(kind.cell_limit_setting, (0, []))
            by_setting[kind.cell_limit_setting] = (
                count + cells,
                labels if label in labels else [*labels, label],
            )
            if count + cells > limit:
                raise ValidationFailed(
                    gettext(
                        "At most %(limit)s cells per release in statistics of this kind "
                        "(%(kinds)s); this one has %(cells)s."
                    )
                    % {
                        "limit": formatting.integer(limit),
                        "kinds": ", ".join(by_setting[kind.cell_limit_setting][1]),
                        "cells": formatting.integer(count + cells),
                    }
                )
    limit = int(settings.RELEASE_MAX_CELLS_PER_RELEASE)
    if total > limit:
        raise ValidationFailed(
            gettext(
                "At most %(limit)s cells per release; this one has %(cells)s. Split it into "
                "several releases or remove statistics."
            )
            % {"limit": formatting.integer(limit), "cells": formatting.integer(total)}
        )
    return total


def _check_mechanism(statistics: list[StatisticPlan], mechanism: str) -> None:
    """Refuse a statistic whose kind cannot be drawn with the release's mechanism."""
    for stat in statistics:
        problem = kinds.get(stat.kind).mechanism_problem(mechanism)
        if problem:
            where = gettext("Statistic %(number)s (%(kind)s)") % {
                "number": stat.position + 1,
                "kind": str(Statistic.Kind(stat.kind).label).lower(),
            }
            raise ValidationFailed(
                gettext("%(where)s: %(problem)s") % {"where": where, "problem": problem}
            )


def _selections_only(raw_statistics: object) -> bool:
    """Every statistic asked for is of a pure epsilon-DP kind (no delta to spend)."""
    if not isinstance(raw_statistics, list) or not raw_statistics:
        return False
    names = [str(r.get("kind") or "") if isinstance(r, dict) else "" for r in raw_statistics]
    return all(name in kinds.REGISTRY and kinds.get(name).pure for name in names)


def release_plan_parse(*, project: Project, data: dict) -> ReleasePlan:
    """The builder's input (form or JSON) as a validated, allocated ReleasePlan.

    Raises ValidationFailed with a message naming the problem; reads no data.
    """
    if not isinstance(data, dict):
        raise ValidationFailed(gettext("The release must be an object."))
    try:
        dataset_id = int(str(data.get("dataset")).strip())
    except (TypeError, ValueError):
        raise ValidationFailed(gettext("Pick a dataset."))
    dataset = Dataset.objects.filter(pk=dataset_id, project=project).first()
    if dataset is None:
        raise ValidationFailed(gettext("The project has no such dataset."))
    # ready, every column declared, privacy unit confirmed by an owner (never a default)
    problem = dataset_usability_problem(dataset=dataset)
    if problem is not None:
        raise ValidationFailed(problem)
    mechanism = str(data.get("mechanism") or "laplace").strip()
    if mechanism not in Release.Mechanism.values:
        raise ValidationFailed(gettext("The mechanism must be Laplace or Gaussian."))
    confidence_text = str(data.get("confidence") or "0.95").strip().rstrip("%").strip()
    if confidence_text in ("90", "95", "99"):
        confidence_text = f"0.{confidence_text}"
    try:
        confidence = Decimal(confidence_text)
    except ArithmeticError:
        confidence = Decimal(0)
    if confidence not in {Decimal(c) for c in CONFIDENCES}:
        raise ValidationFailed(gettext("The confidence level must be 90 %, 95 % or 99 %."))
    epsilon = parse_epsilon(data.get("epsilon"), field=pgettext("field", "total epsilon"))
    raw_statistics = data.get("statistics") or []
    if mechanism == "gaussian" and _selections_only(raw_statistics) and not data.get("delta"):
        delta = Decimal(0)
    elif mechanism == "gaussian":
        delta = parse_delta(data.get("delta"), field=pgettext("field", "delta"))
        # a release of selections only (most common category, quantiles) is pure
        # epsilon-DP whatever its mechanism: it spends no delta and needs none
        if delta <= 0 and not _selections_only(raw_statistics):
            raise ValidationFailed(gettext("The Gaussian mechanism needs a delta above 0."))
    else:
        delta = Decimal(0)
    if not isinstance(raw_statistics, list) or not raw_statistics:
        raise ValidationFailed(gettext("Add at least one statistic."))
    if len(raw_statistics) > MAX_STATISTICS:
        raise ValidationFailed(
            gettext("A release may hold at most %(limit)s statistics.") % {"limit": MAX_STATISTICS}
        )
    columns = {c.name: c for c in dataset.columns.all()}
    statistics = [
        _parse_statistic(raw, position=i, dataset=dataset, columns=columns)
        for i, raw in enumerate(raw_statistics)
    ]
    _check_mechanism(statistics, mechanism)
    plan_check_cells(statistics=statistics)
    title, title_zh = _texts(data, "title", field=pgettext("field", "title"), max_length=200)
    description, description_zh = _texts(
        data, "description", field=pgettext("field", "description"), max_length=5000
    )
    plan = ReleasePlan(
        project=project,
        dataset=dataset,
        title=title or ("" if title_zh else UNTITLED_RELEASE),
        title_zh=title_zh,
        description=description,
        description_zh=description_zh,
        mechanism=mechanism,
        confidence=confidence,
        epsilon=epsilon,
        delta=delta,
        statistics=statistics,
    )
    allocate(plan)
    return plan
