"""Parsing the grouped kinds: grouped sum and mean, quantiles, standard deviation and variance.

Every domain is declared by the owner, never read from data: grouping columns
must be declared categorical (with categories) or numeric with bin edges (as a
histogram's); clipping bounds and the quantiles' candidate grid (a step within
declared bounds, or the column's declared bin edges) are public parameters.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, pgettext

from datasets.models import Column, Dataset
from dpportal import formatting, messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.quantile_grids import candidate_grid, open_grid
from releases import kinds
from releases.plans import StatisticPlan
from releases.services.plan_fields import (
    COLUMN_USES,
    _check_histogram_column,
    _clip_bounds,
    _column,
    _optional_decimal,
)

MAX_QUANTILES = 20
QUANTILE_PLACES = 6
_SPLIT = re.compile(r"[,;\s]+")


def _n_guess(plan: StatisticPlan, raw: dict, *, what: str) -> None:
    try:
        plan.n_guess = int(str(raw.get("n_guess")).strip())
    except (TypeError, ValueError):
        raise ValidationFailed(
            gettext(
                "A %(what)s needs a planning guess of the number of rows (n), a whole number: "
                "it is used for the preview only."
            )
            % {"what": what}
        )
    if not (1 <= plan.n_guess <= 10**12):
        raise ValidationFailed(gettext("The planning guess of n must be between 1 and 10^12."))


def _group_columns(
    plan: StatisticPlan, raw: dict, *, dataset: Dataset, columns: dict[str, Column], required: bool
) -> None:
    first, second = raw.get("group_by"), raw.get("group_by2")
    if not first and second:
        first, second = second, None
    if not first:
        if required:
            raise ValidationFailed(gettext("Choose the column to group by."))
        return
    plan.group_column = _column(dataset, columns, first, what="grouping")
    _check_group_column(plan.group_column)
    if second:
        plan.group_column2 = _column(dataset, columns, second, what="grouping")
        _check_group_column(plan.group_column2)
        if plan.group_column2.pk == plan.group_column.pk:
            raise ValidationFailed(gettext("The two grouping columns must differ."))
    if plan.column is not None and plan.column.pk in {c.pk for c in plan.group_columns}:
        raise ValidationFailed(
            gettext("'%(name)s' cannot be both the value column and a grouping column.")
            % {"name": plan.column.name}
        )


def _check_group_column(column: Column) -> None:
    _check_histogram_column(column, grouping=True)


def parse_quantiles(value: object) -> list[str]:
    """The quantiles as exact decimal strings, ascending: a list or "0.25, 0.5, 75%"."""
    if isinstance(value, str):
        items: list[Any] = [t for t in _SPLIT.split(value.strip()) if t]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        items = []
    if not items:
        raise ValidationFailed(gettext("Name at least one quantile, e.g. 0.5 for the median."))
    if len(items) > MAX_QUANTILES:
        raise ValidationFailed(
            gettext("At most %(limit)s quantiles per statistic.") % {"limit": MAX_QUANTILES}
        )
    out: list[Decimal] = []
    for item in items:
        text = str(item).strip()
        percent = text.endswith("%")
        not_a_quantile = ValidationFailed(
            gettext("'%(text)s' is not a quantile: give a number such as 0.5.") % {"text": text}
        )
        try:
            q = Decimal(text.rstrip("%").strip())
        except InvalidOperation:
            raise not_a_quantile from None
        if not q.is_finite():
            raise not_a_quantile
        if percent:
            q = q / 100
        if not (0 < q < 1):
            raise ValidationFailed(
                gettext(
                    "Quantiles lie strictly between 0 and 1 (or 0 %% and 100 %%); got %(text)s."
                )
                % {"text": text}
            )
        if q != q.quantize(Decimal(1).scaleb(-QUANTILE_PLACES)):
            raise ValidationFailed(
                gettext("Quantiles may have at most %(places)s decimal places.")
                % {"places": QUANTILE_PLACES}
            )
        if q in out:
            raise ValidationFailed(
                gettext("The quantile %(quantile)s is named twice.")
                % {"quantile": formatting.exact(q)}
            )
        out.append(q)
    return [formatting.exact(q.normalize()) for q in sorted(out)]


def _quantile_grid(plan: StatisticPlan, raw: dict) -> None:
    column = plan.column
    if column.kind != Column.Kind.NUMERIC:
        raise ValidationFailed(
            gettext("Quantiles need a numeric column; '%(name)s' is not.") % {"name": column.name}
        )
    plan.step = _optional_decimal(raw.get("step"), field=pgettext("field", "step"))
    if plan.step is None:
        edges = column.bin_edges or []
        if len(edges) < 2:
            raise ValidationFailed(
                gettext(
                    "Quantiles of '%(name)s' need a candidate grid: give a step (with the "
                    "declared bounds), or declare bin edges for the column."
                )
                % {"name": column.name}
            )
        plan.grid = tuple(Fraction(Decimal(str(e))) for e in edges)
        plan.lower = plan.upper = None
        return
    if plan.step <= 0:
        raise ValidationFailed(gettext("The step of the candidate grid must be greater than 0."))
    plan.lower = _optional_decimal(raw.get("lower"), field=pgettext("field", "lower bound"))
    plan.upper = _optional_decimal(raw.get("upper"), field=pgettext("field", "upper bound"))
    if plan.upper is None and column.upper is None:
        # No upper bound declared: the open grid, steps of at most 1 % from the lower bound
        # (or around 0 without one) up to 10**12 steps (dpportal.privacy.quantile_grids).
        lower = plan.lower if plan.lower is not None else column.lower
        plan.lower = None if lower is None else Decimal(lower)
        plan.grid = open_grid(plan.lower, plan.step)
        return
    _clip_bounds(plan, column)
    try:
        plan.grid = candidate_grid(plan.lower, plan.upper, plan.step)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("The candidate grid is too fine: %(problem)s.")
            % {"problem": messages.translated(exc.records)}
        )
    if len(plan.grid) < 2:
        raise ValidationFailed(
            gettext("The step is wider than the range: the grid needs two candidates.")
        )


def parse_statistic_stats(
    plan: StatisticPlan, raw: dict, *, dataset: Dataset, columns: dict[str, Column]
) -> None:
    """Fill `plan` (a StatisticPlan of a NEW kind) from the builder's input, or raise."""
    kind = plan.kind
    plan.column = _column(dataset, columns, raw.get("column"), what=kind)
    if kind == "quantiles":
        plan.quantiles = parse_quantiles(raw.get("quantiles"))
        _quantile_grid(plan, raw)
        if raw.get("n_guess") not in (None, ""):  # optional: the accuracy in data units
            _n_guess(plan, raw, what=pgettext("statistic", "quantile"))
        return
    if plan.column.kind != Column.Kind.NUMERIC:
        name = plan.column.name
        raise ValidationFailed(
            gettext("This statistic needs a numeric column; '%(name)s' is not.") % {"name": name}
        )
    plan.lower = _optional_decimal(raw.get("lower"), field=pgettext("field", "lower bound"))
    plan.upper = _optional_decimal(raw.get("upper"), field=pgettext("field", "upper bound"))
    _clip_bounds(plan, plan.column)
    required = kinds.get(kind).groups_required
    _group_columns(plan, raw, dataset=dataset, columns=columns, required=required)
    if kind == "grouped_mean":
        _n_guess(plan, raw, what=pgettext("statistic", "mean by group"))
    elif kinds.get(kind).aggregate == "spread":
        _n_guess(plan, raw, what=COLUMN_USES[kind])
