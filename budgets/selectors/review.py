"""Reads for the reviewer's inbox: pending requests with their budget and statistics.

The inbox is a list page, so it answers in a constant number of queries however
many requests wait: the requests with their project, requester and release in
one query, every project's budget in one more (`budget_summaries`). Each row's
statistics come from the request's frozen preview (`BudgetRequest.summary`),
read as a documented JSON shape; the full review document of one request is
built by releases.review.selectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils.translation import gettext_lazy as _

from budgets.models import BudgetRequest
from budgets.selectors.budget import (
    BudgetStanding,
    budget_request_list_pending_for_reviewer,
    budget_standing,
    budget_summaries,
)
from budgets.selectors.spend import spend_standings_pending, standing_with_spend
from dpportal import formatting, statistic_names

#: each kind's label in the reader's language: the labels of releases.models.Statistic.Kind
#: (budgets may not import releases; a test keeps the two equal)
KIND_TEXT = {
    "count": _("Count"),
    "histogram": _("Histogram"),
    "sum": _("Clipped sum"),
    "mean": _("Mean"),
    "argmax": _("Most common category"),
    "grouped_sum": _("Clipped sum by group"),
    "grouped_mean": _("Mean by group"),
    "quantiles": _("Median and quantiles"),
    "stddev": _("Standard deviation"),
    "variance": _("Variance"),
    "crosstab": _("Cross-tabulation"),
    "keys": _("Categories found in the data"),
    "bounds": _("Private bounds"),
    "rows_per_person": _("Rows per person"),
}

#: a quantile preview's numbers the inbox words (dpportal.words.quantile_planning_text)
QUANTILE_FIELDS = (
    "rank_error",
    "rank_error_simultaneous",
    "value_error",
    "value_error_simultaneous",
    "n_guess",
    "grid_first",
    "grid_last",
    "interval_rank_reach",
    "interval_value_reach",
)


@dataclass(frozen=True)
class StatisticLine:
    """One statistic of a request's frozen preview, as exact values (None: not recorded)."""

    number: int
    label: str
    kind: str
    kind_text: str
    columns: tuple[str, ...]
    epsilon: Decimal | None
    delta: Decimal | None
    halfwidth: Decimal | None
    halfwidth_simultaneous: Decimal | None
    cells: int | None = None
    # quantiles: their preview's numbers (QUANTILE_FIELDS), worded by the template
    quantile: dict[str, float] | None = None


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool | dict | list):
        return None
    try:
        return formatting.to_decimal(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _quantile(entry: dict[str, Any]) -> dict[str, float] | None:
    """A quantile preview's numbers (None when it holds no rank error): numbers only."""
    numbers = {}
    for key in QUANTILE_FIELDS:
        value = _decimal(entry.get(key))
        if value is not None and value.is_finite():
            numbers[key] = float(value)
    return numbers if "rank_error" in numbers else None


def _cells(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _label(entry: dict, *, kind: str, columns: list) -> str:
    """The statistic's name in the reader's language (dpportal.statistic_names), from
    the preview's strings only."""
    if kind not in statistic_names.KINDS:
        return _text(entry.get("label"))
    return statistic_names.label_of(
        {
            "label": _text(entry.get("label")),
            "label_zh": _text(entry.get("label_zh")),
            "kind": kind,
            "columns": _strings(columns),
            "group_columns": _strings(entry.get("group_columns")),
            "category": _text(entry.get("category")),
            "quantiles": _strings(entry.get("quantiles")),
        }
    )


def statistic_lines(*, summary: Any) -> tuple[StatisticLine, ...]:
    """The statistics of a request's preview; anything malformed is left out, never shown raw."""
    statistics = summary.get("statistics") if isinstance(summary, dict) else None
    if not isinstance(statistics, list):
        return ()
    lines = []
    for index, entry in enumerate(statistics):
        if not isinstance(entry, dict):
            continue
        kind = _text(entry.get("kind"))
        columns = entry.get("columns")
        columns = columns if isinstance(columns, list) else []
        lines.append(
            StatisticLine(
                number=index + 1,
                # lazy texts: the page renders them in its reader's language
                label=_label(entry, kind=kind, columns=columns)
                or KIND_TEXT.get(kind, _("Statistic")),
                kind=kind,
                kind_text=KIND_TEXT.get(kind, kind or _("unknown")),
                columns=tuple(c for c in columns if isinstance(c, str)),
                epsilon=_decimal(entry.get("epsilon")),
                delta=_decimal(entry.get("delta")),
                halfwidth=_decimal(entry.get("halfwidth")),
                halfwidth_simultaneous=_decimal(entry.get("halfwidth_simultaneous")),
                cells=_cells(entry.get("cells")),
                quantile=_quantile(entry),
            )
        )
    return tuple(lines)


@dataclass(frozen=True)
class InboxEntry:
    budget_request: BudgetRequest
    release_id: int | None
    budget: BudgetStanding
    statistics: tuple[StatisticLine, ...]


def inbox_list_for_reviewer(*, user: AbstractBaseUser | AnonymousUser) -> list[InboxEntry]:
    """Pending requests `user` may decide, oldest first, each with its budget standing."""
    requests = list(budget_request_list_pending_for_reviewer(user=user))
    summaries = budget_summaries(projects={r.project for r in requests})
    spends = spend_standings_pending(budget_requests=requests)  # a constant number of queries
    return [
        InboxEntry(
            budget_request=r,
            release_id=getattr(getattr(r, "release", None), "pk", None),
            budget=standing_with_spend(
                budget_standing(budget_request=r, summary=summaries[r.project_id]),
                spends[r.pk],
            ),
            statistics=statistic_lines(summary=r.summary),
        )
        for r in requests
    ]
