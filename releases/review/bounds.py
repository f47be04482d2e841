"""The review document of a private-bounds statistic: its method, epsilon per end, the
search grid and the accuracy statement, from the frozen specification only (the same
facts the kind states on every other surface: releases.kinds.bounds)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext

from datasets.models import Column
from dpportal import formatting, statistic_names
from dpportal.privacy.tail_bounds import epsilon_parts
from dpportal.privacy.unbounded_bounds import end_epsilon
from releases import dp, kinds
from releases.kinds.bounds import bound_text, search_grid_of
from releases.review.text import missing_text
from releases.review.types import ColumnReview, StatisticReview
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = ["add_plan_fields", "statistic_review"]


def add_plan_fields(
    stat: StatisticPlan, entry: dict[str, Any], make_column: Callable[[dict], Column]
) -> None:
    """Set a frozen private-bounds entry's search parameters on its plan."""
    kind = kinds.REGISTRY.get(str(entry.get("kind")))
    if kind is None or kind.fields != "bounds":
        return
    grid = entry["grid"]
    stat.search = {
        "ends": entry["ends"],
        "outside": int(entry["outside"]),
        **{k: str(grid[k]) for k in ("centre", "unit", "ratio", "limit")},
        **({"tail": entry["tail"]} if entry.get("tail") else {}),
    }


def statistic_review(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    kind = kinds.get(stat.kind)
    accuracy = dp.statistic_accuracy(plan=plan, stat=stat)
    search = stat.search
    ends = {"both": gettext("both bounds"), "upper": gettext("the upper bound"),
            "lower": gettext("the lower bound")}[search["ends"]]  # fmt: skip
    per_end = end_epsilon(stat.epsilon, search["ends"])
    epsilon_row = (gettext("Epsilon per bound"), formatting.epsilon(per_end), "epsilon-per-end")
    method = gettext(
        "AboveThreshold on a geometric search grid (Durfee 2023, unbounded quantile "
        "estimation): from the start point the search walks outward and stops at the first "
        "point beyond which at most %(outside)s values lie by a noisy comparison (discrete "
        "Laplace noise; pure epsilon-differential privacy)"
    ) % {"outside": formatting.integer(search["outside"])}
    if search.get("tail"):
        eps_count, eps_search = epsilon_parts(stat.epsilon)
        method = gettext(
            "A noisy count of the values, then two AboveThreshold searches on a geometric "
            "grid (Durfee 2023) for the points above which about 5 %% and 50 %% of the values "
            "lie; the upper bound is the point above which about %(outside)s values would lie "
            "if the column's upper tail were log-normal, extrapolated from those two points "
            "(a model, with no guarantee; discrete Laplace noise, pure epsilon-differential "
            "privacy)"
        ) % {"outside": formatting.integer(search["outside"])}
        epsilon_row = (
            gettext("Epsilon"),
            gettext("%(count)s for the count, %(search)s for each search")
            % {"count": formatting.epsilon(eps_count), "search": formatting.epsilon(eps_search)},
            "epsilon-per-end",
        )
    growth = formatting.percent(Fraction(str(search["ratio"])) - 1)
    grid = gettext(
        "start point %(centre)s, smallest step %(unit)s, each step %(growth)s longer than "
        "the last, up to %(limit)s away (%(steps)s points on each side)"
    ) % {
        **{k: bound_text(search[k]) for k in ("centre", "unit", "limit")},
        "growth": growth,
        "steps": formatting.integer(search_grid_of(search).steps()),
    }
    details = (
        (gettext("Searched"), ends, "ends"),
        (gettext("Method"), method, "method"),
        epsilon_row,
        (gettext("Search grid"), grid, "grid"),
        (gettext("Accuracy"), str(accuracy["accuracy_text"]), "outside-at-most"),
    )
    return StatisticReview(
        number=stat.position + 1,
        label=statistic_names.label_of(stat),
        kind=stat.kind,
        kind_text=gettext("Private bounds of a numeric column"),
        estimates_text=gettext(
            "A lower and an upper bound of %(column)s with few values beyond them, for an "
            "owner who cannot know its range in advance"
        )
        % {"column": stat.column.name},
        columns=tuple(ColumnReview.of(c) for c in stat.columns),
        category="",
        clip_lower=None,
        clip_upper=None,
        clip_text="",
        cells=int(accuracy["cells"]),
        out_of_range_text="",
        missing_text=missing_text(stat),
        mechanism=kind.mechanism(plan.mechanism),
        mechanism_text=method,
        epsilon=stat.epsilon,
        delta=Decimal(0),
        noise=(),
        unit="",
        n_guess=None,
        halfwidth=None,
        halfwidth_simultaneous=None,
        halfwidth_text=str(accuracy["accuracy_text"]),
        halfwidth_simultaneous_text=str(accuracy["accuracy_text"]),
        details=details,
    )
