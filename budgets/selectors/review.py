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

from budgets.models import BudgetRequest
from budgets.selectors.budget import (
    BudgetStanding,
    budget_request_list_pending_for_reviewer,
    budget_standing,
    budget_summaries,
)
from budgets.selectors.spend import spend_standings_pending, standing_with_spend
from dpportal import formatting

KIND_TEXT = {
    "count": "Count",
    "histogram": "Histogram",
    "sum": "Clipped sum",
    "mean": "Mean",
    "argmax": "Most common category",
}


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


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool | dict | list):
        return None
    try:
        return formatting.to_decimal(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


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
                label=_text(entry.get("label")) or KIND_TEXT.get(kind, "Statistic"),
                kind=kind,
                kind_text=KIND_TEXT.get(kind, kind or "unknown"),
                columns=tuple(c for c in columns if isinstance(c, str)),
                epsilon=_decimal(entry.get("epsilon")),
                delta=_decimal(entry.get("delta")),
                halfwidth=_decimal(entry.get("halfwidth")),
                halfwidth_simultaneous=_decimal(entry.get("halfwidth_simultaneous")),
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
