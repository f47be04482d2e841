"""The cross-tabulation: a workload of marginal tables of declared columns, Gaussian only.

The owner declares 1 to 10 columns (as a histogram's axes: categories + Other
(+ Missing), or bins (+ Missing)) and the tables to publish: every table of up to
K of them, or a list, with the total count if asked. Every table is estimated from
one set of measurements (ResidualPlanner, dpportal.privacy.marginals): each
residual of the workload's closure measured once with discrete Gaussian noise, the
tables reconstructed from them, so their margins agree exactly and the variance of
every cell of a table is known in advance. The strategy is zCDP, so it needs the
Gaussian mechanism; a Laplace release refuses it.

A result entry holds the release as its explanation (MarginalRelease.to_dict: the
strategy, the noisy residual measurements and the tables rebuilt from them, no true
value: anyone can recompute every table exactly from the measurements), and the
tables' values flattened in table order ("values", "cells") for the surfaces that
read any kind's cells; "tables" names each table's columns, shape and axis labels;
"display_values" the whole-number display in the same order (None beyond its bounds),
computed once with the noise so that every surface shows the same numbers.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext

from dpportal.errors import ValidationFailed
from dpportal.privacy.marginal_display import DisplayUnavailable, display_tables
from dpportal.privacy.marginal_release import release_marginals
from dpportal.privacy.marginal_workload import Marginal, Workload, canonical
from dpportal.privacy.marginals import (
    MarginalPlan,
    epsilon_for_halfwidth,
    plan_marginals,
)
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.statistic_names import ALL_ROWS
from releases.kinds.base import Cell, NoisePart, StatisticKind, frac, statistic_errors
from releases.kinds.counting import entry_head
from releases.kinds.planned import axis_cells

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

#: how a strategy is named in the review and the results (words, not a code)
STRATEGY = "ResidualPlanner: each residual measured once with discrete Gaussian noise"


def domain_cells(domain: dict[str, Any]) -> int:
    """Cells of one frozen column domain (releases.kinds.domains.column_domain), as
    axis_cells counts them for a declared column."""
    missing = 1 if domain.get("missing") == "category" else 0
    if domain.get("kind") == "categorical":
        return len(domain.get("categories") or []) + 1 + missing
    return len(domain.get("bin_edges") or []) - 1 + missing


def stat_workload(stat: StatisticPlan) -> Workload:
    """The workload of a parsed cross-tabulation (its columns' declared domains)."""
    return Workload.of([axis_cells(c) for c in stat.axes], stat.marginals)


def entry_workload(entry: dict[str, Any]) -> Workload:
    """The workload of a frozen spec entry (see CrosstabKind.spec_fields)."""
    marginals = [tuple(m) for m in entry.get("marginals") or []]
    if entry.get("total"):
        marginals.append(())
    return Workload.of([domain_cells(d) for d in entry["columns"]], marginals)


def table_name(marginal: Marginal, names: list[str]) -> str:
    """A table as people read it: "age × sex", or "All rows" for the total."""
    return " × ".join(names[i] for i in marginal) if marginal else ALL_ROWS


@lru_cache(maxsize=64)
def _plan_of(text: str) -> MarginalPlan:
    return MarginalPlan.from_dict(json.loads(text))


def stored_plan(entry: dict[str, Any]) -> MarginalPlan:
    """The strategy a stored result was drawn with (its explanation's plan), parsed once
    per plan however many confidences a page reads it at."""
    return _plan_of(json.dumps(entry["explanation"]["plan"], sort_keys=True))


class CrosstabKind(StatisticKind):
    name = "crosstab"
    opendp_missing = (
        "marginals measured with the optimal consistent Gaussian strategy, ResidualPlanner: "
        "OpenDP has no counterpart"
    )
    fields = "crosstab"
    aggregate = "marginals"
    clampable = True

    # --- planning: public parameters only --------------------------------------------

    def mechanism_problem(self, release_mechanism: str) -> str | None:
        if release_mechanism != "gaussian":
            return gettext("A cross-tabulation needs the Gaussian mechanism.")
        return None

    def mechanism(self, release_mechanism: str) -> str:
        return "gaussian"

    def value_cells(self, stat: StatisticPlan) -> int:
        return stat_workload(stat).published_cells

    def marginal_plan(self, *, plan: ReleasePlan, stat: StatisticPlan) -> MarginalPlan:
        """The strategy at the statistic's (epsilon, delta) share."""
        with statistic_errors(stat):
            return plan_marginals(
                stat_workload(stat),
                epsilon=frac(stat.epsilon),
                delta=frac(stat.delta),
                contribution_bound=plan.dataset.contribution_bound,
            )

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """Each table's per-cell standard deviation and half-width at the release's
        confidence, alone and for all published cells at once (Bonferroni); the
        statistic's half-width is the largest of its tables'."""
        strategy = self.marginal_plan(plan=plan, stat=stat)
        workload = strategy.workload
        cells = workload.published_cells
        confidence = frac(plan.confidence)
        names = [c.name for c in stat.axes]
        tables = []
        with statistic_errors(stat):
            for m in workload.marginals:
                tables.append(
                    {
                        "marginal": list(m),
                        "columns": [names[i] for i in m],
                        "name": table_name(m, names),
                        "cells": workload.cells(m),
                        "sd": math.sqrt(strategy.cell_variance(m)),
                        "halfwidth": strategy.halfwidth(m, confidence),
                        "halfwidth_simultaneous": strategy.halfwidth(m, confidence, cells=cells),
                    }
                )
        return {
            "cells": cells,
            "halfwidth": max(t["halfwidth"] for t in tables),
            "halfwidth_simultaneous": (
                max(t["halfwidth_simultaneous"] for t in tables) if cells > 1 else None
            ),
            "n_guess": None,
            "marginals": tables,
            "rho": str(strategy.rho),
        }

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        return ()  # the strategy's residual measurements are not one NoiseSpec each

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        return list(self.marginal_plan(plan=plan, stat=stat).records())

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        strategy = self.marginal_plan(plan=plan, stat=stat)
        return _parts(strategy, [c.name for c in stat.axes])

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        return (
            "crosstab",
            tuple(axis_cells(c) for c in stat.axes),
            tuple(stat.marginals),
            frac(stat.epsilon),
            frac(stat.delta),
            plan.dataset.contribution_bound,
            frac(plan.confidence),
        )

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """The smallest epsilon whose LARGEST per-cell half-width meets the target."""
        with statistic_errors(stat):
            if plan.mechanism != "gaussian":
                raise ValidationFailed(gettext("A cross-tabulation needs the Gaussian mechanism."))
            return epsilon_for_halfwidth(
                stat_workload(stat),
                target=frac(stat.target_halfwidth),
                delta=frac(stat.delta),
                confidence=frac(plan.confidence),
                contribution_bound=plan.dataset.contribution_bound,
            )

    # --- the frozen specification ----------------------------------------------------

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        """The columns' frozen domains (in the owner's order), the published marginals
        (the workload's, canonical: the total [] first when published) and whether the
        total is published."""
        from datasets.models import Column
        from releases.kinds.domains import column_domain

        stored = getattr(stat, "crosstab", None) or {}
        names = [str(n) for n in stored.get("columns") or []]
        if not names:
            return {}
        found = {
            c.name: c
            for c in Column.objects.filter(dataset_id=stat.release.dataset_id, name__in=names)
        }
        total = bool(stored.get("total"))
        listed = [tuple(int(i) for i in m) for m in stored.get("marginals") or []]
        return {
            "columns": [column_domain(found[n]) for n in names],
            "marginals": [list(m) for m in canonical(listed + ([()] if total else []))],
            "total": total,
        }

    # --- drawing noise: the only method that receives a true aggregate ----------------

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        """`aggregate`: one int64 count array per maximal marginal (workload.maximal
        order, each of shape workload.shape(m)); `axes`: one releases.compute.Axis per
        declared column, in order, whose labels name each table's rows and columns."""
        if mechanism != "gaussian":
            raise ValueError("a cross-tabulation is drawn with the Gaussian mechanism only")
        workload = entry_workload(entry)
        strategy = plan_marginals(  # the math parses and checks the exact strings once
            workload,
            epsilon=entry["epsilon"],
            delta=entry["delta"],
            contribution_bound=contribution_bound,
        )
        counts = [np.asarray(a, dtype=np.int64) for a in aggregate]
        release = release_marginals(strategy, counts, rng=rng)
        del counts
        names = [c["name"] for c in entry["columns"]]
        labels = [list(a.labels) for a in axes]
        out = entry_head(entry)
        out["tables"], out["cells"], out["values"] = [], [], []
        for m in workload.marginals:
            values = release.tables[m].values()
            out["tables"].append(
                {
                    "marginal": list(m),
                    "columns": [names[i] for i in m],
                    "shape": list(workload.shape(m)),
                    "labels": [labels[i] for i in m],
                    "start": len(out["values"]),
                }
            )
            out["cells"].extend(_cell_names(m, names, labels))
            out["values"].extend(float(v) for v in np.asarray(values).reshape(-1))
        out["explanation"] = {**release.to_dict(), "mechanism": "gaussian", "columns": names}
        out["display_values"] = _whole_numbers(out, workload)
        return out

    # --- reading a stored result ---------------------------------------------------------

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """value ± h per cell, h the table's per-cell half-width of the unbiased estimate
        (Bonferroni over every published cell when `simultaneous`)."""
        strategy = stored_plan(entry)
        values = self.values(entry)
        cells = len(values) if simultaneous else 1
        out: list[Cell] = []
        for table in entry["tables"]:
            h = strategy.halfwidth(tuple(table["marginal"]), confidence, cells=cells)
            size = math.prod(table["shape"])
            start = table["start"]
            out.extend(Cell(v, v - h, v + h, h) for v in values[start : start + size])
        return out

    def display_values(self, entry: dict[str, Any]) -> list[int] | None:
        """The whole-number display stored with the result (None: not computed within its
        bounds). Computed once when the noise is drawn, since a solve stopped by its time
        limit depends on the machine: every surface then shows the same numbers."""
        shown = entry.get("display_values")
        return [int(v) for v in shown] if shown is not None else None

    def noise_parts(self, explanation: dict[str, Any]) -> list[NoisePart]:
        strategy = stored_plan({"explanation": explanation})
        return _parts(strategy, [str(n) for n in explanation.get("columns") or []])

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        return "gaussian"

    def value_title(self, columns: list[str]) -> str:
        return "count"

    def layout(self, entry: dict[str, Any]) -> str:
        return "crosstabs"


def public_tables(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored result's tables as the public data states them: each table's name,
    columns, shape, axis labels and where its cells start in the flattened "cells"."""
    return [
        {
            "marginal": list(t["marginal"]),
            "name": table_name(tuple(t["marginal"]), [str(c) for c in entry["columns"]]),
            "columns": list(t["columns"]),
            "shape": list(t["shape"]),
            "labels": [list(a) for a in t["labels"]],
            "start": int(t["start"]),
        }
        for t in entry.get("tables") or []
    ]


def _whole_numbers(entry: dict[str, Any], workload: Workload) -> list[int] | None:
    """The tables' whole-number display: non-negative integers that still agree exactly
    (dpportal.privacy.marginal_display, post-processing of the published tables), in
    the entry's cell order; None beyond the display's cell or time limit."""
    values = entry["values"]
    tables = {}
    for table in entry["tables"]:
        m, shape = tuple(table["marginal"]), tuple(table["shape"])
        start = table["start"]
        tables[m] = np.asarray(values[start : start + math.prod(shape)], dtype=np.float64)
        tables[m] = tables[m].reshape(shape)
    try:
        shown = display_tables(workload, tables)
    except DisplayUnavailable:
        return None
    return [int(v) for m in workload.marginals for v in np.asarray(shown[m]).reshape(-1)]


def _parts(strategy: MarginalPlan, names: list[str]) -> list[NoisePart]:
    """Each table's cell noise as a part: its standard deviation in rows (a sum of the
    residuals' independent discrete Gaussians, exact variance; the square root shown to
    float precision)."""
    workload = strategy.workload
    return [
        NoisePart(
            part=table_name(m, names) if names else str(list(m)),
            distribution="discrete_gaussian",
            symbol="sigma",
            value=Fraction(math.sqrt(strategy.cell_variance(m))),
            unit="rows",
            factor=Fraction(1),
        )
        for m in workload.marginals
    ]


def _cell_names(marginal: Marginal, names: list[str], labels: list[list[str]]) -> list[str]:
    """The cells of one table in row-major order: "sex: F / region: N"."""
    if not marginal:
        return [ALL_ROWS]
    out = [""]
    for i in marginal:
        out = [
            f"{prefix} / {names[i]}: {label}" if prefix else f"{names[i]}: {label}"
            for prefix in out
            for label in labels[i]
        ]
    return out


KINDS = (CrosstabKind(),)
