"""The review document of a cross-tabulation: its workload, strategy and each table's noise.

The same typed value as the other kinds (StatisticReview), from the frozen
specification only, with `details` rows a reviewer needs here: the tables to
publish (each table's columns and cells), the strategy (ResidualPlanner, its zCDP
rho) and every table's per-cell standard deviation and half-width at the
release's confidence, all read from the kind (releases.kinds.crosstab), as the
preview and the worker read them.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, ngettext, pgettext

from datasets.models import Column
from dpportal import formatting
from dpportal.privacy.marginal_workload import canonical
from dpportal.statistic_names import ALL_ROWS
from releases import dp, kinds
from releases.kinds.crosstab import table_name
from releases.review.text import missing_text, out_of_range_text, sensitivity_text
from releases.review.types import ColumnReview, NoiseReview, StatisticReview
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = ["add_plan_fields", "statistic_review"]


def add_plan_fields(
    stat: StatisticPlan, entry: dict[str, Any], make_column: Callable[[dict], Column]
) -> None:
    """Set a frozen cross-tabulation's columns and marginals on its plan."""
    kind = kinds.REGISTRY.get(str(entry.get("kind")))
    if kind is None or kind.fields != "crosstab":
        return
    stat.axes = [make_column(d) for d in entry.get("columns") or []]
    stat.column2 = None  # the first column stays: the review's sentences name it
    marginals = [tuple(int(i) for i in m) for m in entry.get("marginals") or []]
    stat.marginals = canonical(marginals + ([()] if entry.get("total") else []))


def _table_name(marginal: tuple[int, ...], names: list[str]) -> str:
    return table_name(marginal, names) if marginal else gettext("All rows")


def _tables_text(stat: StatisticPlan, tables: list[dict[str, Any]]) -> str:
    names = [c.name for c in stat.axes]
    return "; ".join(
        ngettext("%(table)s: %(n)s cell", "%(table)s: %(n)s cells", t["cells"])
        % {"table": _table_name(tuple(t["marginal"]), names), "n": formatting.integer(t["cells"])}
        for t in tables
    )


def _noise_text(stat: StatisticPlan, tables: list[dict[str, Any]], confidence: str) -> str:
    names = [c.name for c in stat.axes]
    return "; ".join(
        gettext(
            "%(table)s: standard deviation %(sd)s rows per cell, ±%(width)s rows per cell at "
            "%(confidence)s, ±%(together)s for all cells at once"
        )
        % {
            "table": _table_name(tuple(t["marginal"]), names),
            "sd": formatting.halfwidth(t["sd"]),
            "width": formatting.halfwidth(t["halfwidth"]),
            "confidence": confidence,
            "together": formatting.halfwidth(t["halfwidth_simultaneous"]),
        }
        for t in tables
    )


def _noise(stat: StatisticPlan, plan: ReleasePlan) -> tuple[NoiseReview, ...]:
    """Each table's cell noise as the results state it (the kind's planned parts): a sum
    of the residuals' independent discrete Gaussians, its standard deviation in rows;
    one person moves a table's cells by at most L in all (l1 and l2)."""
    bound = plan.dataset.contribution_bound
    rows = gettext("rows")
    out = []
    for part in kinds.get(stat.kind).planned_parts(plan=plan, stat=stat):
        name = part.part if part.part != ALL_ROWS else gettext("All rows")
        out.append(
            NoiseReview(
                part=name, distribution=gettext("discrete Gaussian"),
                parameter=pgettext("noise", "sigma"), scale=part.value, unit=rows,
                l1_sensitivity=Fraction(bound), l2_sensitivity=Fraction(bound),
                granularity=part.factor, epsilon=Fraction(stat.epsilon),
                delta=Fraction(stat.delta),
                scale_text=gettext(
                    "a sum of the residuals' discrete Gaussian noises, standard deviation "
                    "%(sd)s rows per cell"
                ) % {"sd": formatting.scale(part.value)},
                sensitivity_text=sensitivity_text(
                    l1=Fraction(bound), l2=Fraction(bound), unit=rows, gaussian=True, bound=bound
                ),
            )
        )  # fmt: skip
    return tuple(out)


def _details(
    stat: StatisticPlan, plan: ReleasePlan, preview: dict[str, Any]
) -> list[tuple[str, str, str]]:
    tables = preview["marginals"]
    confidence = formatting.percent(plan.confidence)
    return [
        (gettext("Tables"), _tables_text(stat, tables), "marginals"),
        (
            gettext("Strategy"),
            gettext(
                "ResidualPlanner (Xiao, Wang, Zhang and Kifer, 2023): each residual measured "
                "once with discrete Gaussian noise, every table rebuilt from the same "
                "measurements, so the tables' margins agree exactly; zCDP rho = %(rho)s"
            )
            % {"rho": formatting.scale(Fraction(preview["rho"]))},
            "strategy",
        ),
        (gettext("Noise per table"), _noise_text(stat, tables, confidence), "table-noise"),
    ]


def statistic_review(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    """The review of one cross-tabulation."""
    preview = dp.statistic_accuracy(plan=plan, stat=stat)
    cells = int(preview["cells"])
    unit = gettext("rows")
    one, together = preview["halfwidth"], preview["halfwidth_simultaneous"] or preview["halfwidth"]
    return StatisticReview(
        number=stat.position + 1,
        label=stat.label,
        kind=stat.kind,
        kind_text=gettext("Cross-tabulation: marginal tables of declared columns"),
        estimates_text=gettext(
            "The number of rows in each cell of each table, every table a cross of the "
            "declared columns it names."
        ),
        columns=tuple(ColumnReview.of(c) for c in stat.axes),
        category="",
        clip_lower=None,
        clip_upper=None,
        clip_text=gettext("Not applicable: counts need no clipping."),
        cells=cells,
        out_of_range_text=out_of_range_text(stat),
        missing_text=missing_text(stat)
        + " "
        + gettext(
            "A row dropped for any of the columns is left out of every table, so that the "
            "tables agree."
        ),
        mechanism="gaussian",
        mechanism_text=gettext(
            "Gaussian mechanism: ResidualPlanner's residual measurements with discrete "
            "Gaussian noise, zCDP converted to (epsilon, delta)"
        ),
        epsilon=stat.epsilon,
        delta=stat.delta,
        noise=_noise(stat, plan),
        unit=unit,
        n_guess=None,
        halfwidth=one,
        halfwidth_simultaneous=together,
        halfwidth_text=gettext("±%(width)s rows per cell, the widest table's")
        % {"width": formatting.halfwidth(one)},
        halfwidth_simultaneous_text=gettext("±%(width)s rows for all %(cells)s cells at once")
        % {"width": formatting.halfwidth(together), "cells": formatting.integer(cells)},
        details=tuple(_details(stat, plan, preview)),
    )
