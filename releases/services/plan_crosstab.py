"""Parsing a cross-tabulation: its declared columns and the marginal tables to publish.

The owner names 1 to 10 declared columns (categorical with categories, or numeric
or date with bin edges: whatever a histogram's axis accepts) and either "every
table of up to K of them" (K = 1, 2 or 3) or an explicit list of tables, each a
list of those columns; plus, optionally, the total count. The domains are the
columns' declared ones (never read from data); the workload is checked once by
dpportal.privacy.marginal_workload, whose refusals are worded here.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext

from datasets.models import Column, Dataset
from dpportal import messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.marginal_workload import (
    MAX_ATTRIBUTES,
    MAX_WAY,
    Workload,
    all_marginals,
    canonical,
)
from releases.kinds.planned import axis_cells
from releases.plans import StatisticPlan
from releases.services.plan_fields import _bool, _check_histogram_column, _column

#: between the tables of a typed list ("age × sex; region")
_TABLES = re.compile(r"[;\n]+")
#: between the columns of one typed table
_CROSS = re.compile(r"\s*[×*,]\s*|\s+x\s+")


def _names(value: object) -> list[str]:
    """A list of column names: a JSON list, or typed as "a, b, c"."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _tables(value: object) -> list[list[str]]:
    """The listed tables, each a list of column names: [["age", "sex"], ["region"]], or
    typed as "age × sex; region" (columns joined by ×, * or a comma, tables by ;)."""
    if isinstance(value, str):
        return [
            [name for name in _CROSS.split(table.strip()) if name]
            for table in _TABLES.split(value)
            if table.strip()
        ]
    if isinstance(value, list | tuple):
        return [_names(table) if not isinstance(table, str) else [table] for table in value]
    return []


def _way(value: object) -> int | None:
    if value in (None, ""):
        return None
    try:
        way = int(str(value).strip())
    except ValueError:
        way = 0
    if not 1 <= way <= MAX_WAY:
        raise ValidationFailed(
            gettext("The tables of a cross-tabulation cross 1 to %(limit)s columns.")
            % {"limit": MAX_WAY}
        )
    return way


def parse_crosstab(
    plan: StatisticPlan, raw: dict, *, dataset: Dataset, columns: dict[str, Column]
) -> None:
    """Fill a cross-tabulation's columns, marginals and total from the builder's input."""
    names = _names(raw.get("columns"))
    if not names and raw.get("column"):
        names = [str(raw["column"]).strip()]
    if not names:
        raise ValidationFailed(gettext("Choose the columns of the cross-tabulation."))
    if len(names) > MAX_ATTRIBUTES:
        raise ValidationFailed(
            gettext("A cross-tabulation has at most %(limit)s columns; %(count)s are named.")
            % {"limit": MAX_ATTRIBUTES, "count": len(names)}
        )
    if len(set(names)) != len(names):
        raise ValidationFailed(gettext("Name each column of the cross-tabulation once."))
    axes = []
    for name in names:
        column = _column(dataset, columns, name, what="crosstab")
        _check_histogram_column(column)
        axes.append(column)
    plan.axes = axes
    plan.way = _way(raw.get("way"))
    listed = _tables(raw.get("marginals"))
    total = _bool(raw.get("total"))
    if plan.way is not None and listed:
        raise ValidationFailed(
            gettext("Choose either every table of up to K columns or a list of tables, not both.")
        )
    if plan.way is not None:
        marginals = list(all_marginals(len(axes), plan.way))
    elif listed:
        marginals = [_indices(table, names) for table in listed]
    elif total:
        marginals = []
    else:
        raise ValidationFailed(
            gettext(
                "Choose the tables to publish: every table of up to K columns (K = 1, 2 or 3) "
                "or a list of tables."
            )
        )
    if total or any(not m for m in marginals):
        marginals.append(())
    try:
        workload = Workload.of([axis_cells(c) for c in axes], marginals)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("The cross-tabulation cannot be published: %(problem)s.")
            % {"problem": messages.translated(exc.records)}
        ) from exc
    plan.marginals = canonical(workload.marginals)


def _indices(table: list[str], names: list[str]) -> tuple[int, ...]:
    out = []
    for name in table:
        if name not in names:
            raise ValidationFailed(
                gettext("'%(name)s' is not one of the cross-tabulation's columns.") % {"name": name}
            )
        out.append(names.index(name))
    return tuple(out)


def crosstab_stored(plan: StatisticPlan) -> dict[str, Any]:
    """A parsed cross-tabulation as its Statistic row stores it (releases.models)."""
    return {
        "columns": [c.name for c in plan.axes],
        "way": plan.way,
        "marginals": [list(m) for m in plan.marginals if m],
        "total": plan.total,
    }


def crosstab_input(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored cross-tabulation as the builder's input again (see crosstab_stored)."""
    names = [str(n) for n in stored.get("columns") or []]
    way = stored.get("way")
    return {
        "columns": names,
        "way": way or "",
        "marginals": []
        if way
        else [[names[i] for i in m] for m in stored.get("marginals") or [] if m],
        "total": bool(stored.get("total")),
    }
