"""Counting kinds: a count (all rows, or one category), a 1-D or 2-D histogram, and the
most common category (Report Noisy Max over the declared categories).

Counts are noised in rows: sensitivity L (a person's at most L rows), discrete
Laplace of scale L / epsilon or a discrete Gaussian calibrated to (epsilon, delta)
(dpportal.privacy.noise.count_noise). The most common category is pure epsilon-DP
whatever the release's mechanism (Laplace noise on monotone counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dpportal.privacy import mechanisms, noise
from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Delta, Epsilon
from dpportal.privacy.rng import RandomSource
from releases.kinds import opendp
from releases.kinds.base import Cell, frac, statistic_errors
from releases.kinds.planned import PlannedKind, axis_cells

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

HEATMAP_MAX_CELLS = 150
HEATMAP_MAX_LABELS = 25


def entry_head(entry: dict[str, Any]) -> dict[str, Any]:
    """The public fields every result entry starts with (no value yet)."""
    return {
        "position": entry["position"],
        "kind": entry["kind"],
        "label": entry["label"],
        "columns": [c["name"] for c in entry["columns"]],
        "category": entry.get("category"),
        "cells": [],
        "shape": None,
        "epsilon": entry["epsilon"],
        "delta": entry["delta"],
    }


class SymmetricIntervals:
    """value +- h for every cell, h from the stored explanation (accuracy.result_halfwidth)."""

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        explanation = entry["explanation"]
        h = float(result_halfwidth(explanation, confidence=confidence, simultaneous=simultaneous))
        return [Cell(v, v - h, v + h, h) for v in self.values(entry)]  # type: ignore[attr-defined]


class CountKind(SymmetricIntervals, PlannedKind):
    name = "count"
    clampable = True

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return (
                noise.count_noise(
                    mechanism=plan.mechanism, epsilon=frac(stat.epsilon),
                    delta=frac(stat.delta), contribution_bound=plan.dataset.contribution_bound,
                    cells=self.cells(stat), statistic=stat.kind,
                ),
            )  # fmt: skip

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        result = self._release(entry, aggregate, mechanism, contribution_bound, rng)
        out["cells"] = [entry.get("category") or "All rows"]
        out["values"] = list(result.values)
        out["explanation"] = result.to_dict()
        return out

    def _release(
        self, entry, aggregate, mechanism: str, contribution_bound: int, rng: RandomSource | None
    ):
        return mechanisms.release_counts(
            np.asarray(aggregate, dtype=np.int64) if self.name == "histogram" else int(aggregate),
            mechanism=mechanism, epsilon=Epsilon(entry["epsilon"]), delta=Delta(entry["delta"]),
            contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip

    def value_title(self, columns: list[str]) -> str:
        return "count"

    def opendp_parameters(self, entry: dict[str, Any], *, axes: list) -> dict[str, Any] | None:
        """All rows counted, or the rows of one declared cell, or every cell of a table:
        OpenDP's count / count_by_categories, then its Laplace or Gaussian noise."""
        category = entry.get("category")
        cells = 1
        for axis in axes:
            cells *= len(axis.labels)
        return {
            "program": "counts",
            "axes": opendp.axes_parameters(entry, axes),
            "cells": cells,
            "target": axes[0].labels.index(category) if category else None,
        }


class HistogramKind(CountKind):
    name = "histogram"

    def cells(self, stat: StatisticPlan) -> int:
        out = 1
        for column in stat.columns:
            out *= axis_cells(column)
        return out

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        result = self._release(entry, aggregate, mechanism, contribution_bound, rng)
        if len(axes) == 2:
            rows, cols = axes[0].labels, axes[1].labels
            out["cells"] = [f"{r} / {c}" for r in rows for c in cols]
            out["shape"] = [len(rows), len(cols)]
            out["row_labels"], out["col_labels"] = rows, cols
        else:
            out["cells"] = list(axes[0].labels)
        out["values"] = list(result.values)
        out["explanation"] = result.to_dict()
        return out

    def layout(self, entry: dict[str, Any]) -> str:
        shape = entry.get("shape")
        if not shape:
            return "bars"
        rows, cols = shape
        if rows * cols > HEATMAP_MAX_CELLS or max(rows, cols) > HEATMAP_MAX_LABELS:
            return "crosstab"
        return "heatmap"


class ArgmaxKind(PlannedKind):
    """Report Noisy Max over the declared categories: pure epsilon, Laplace noise of
    scale L / epsilon on each count (monotone counts: Dwork & Roth 2014, Claim 3.9)."""

    name = "argmax"
    pure = True
    clampable = False

    def mechanism(self, release_mechanism: str) -> str:
        return "laplace"

    def cells(self, stat: StatisticPlan) -> int:
        return len(stat.column.categories)  # the declared ones only

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return (
                noise.argmax_noise(
                    epsilon=frac(stat.epsilon),
                    contribution_bound=plan.dataset.contribution_bound,
                    cells=self.cells(stat),
                ),
            )

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        out = entry_head(entry)
        result = mechanisms.release_argmax(
            np.asarray(aggregate, dtype=np.int64), epsilon=Epsilon(entry["epsilon"]),
            contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        labels = axes[0].labels
        out["cells"] = list(labels[: result.spec.cells])
        out["values"] = []
        out["argmax"] = {"index": result.index, "label": labels[result.index]}
        out["explanation"] = result.to_dict()
        return out

    def values(self, entry: dict[str, Any]) -> list[float]:
        return []

    def values_published(self, entry: dict[str, Any]) -> bool:
        return False

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        return []  # a selection: no value is published, so no value interval

    def selection_halfwidth(self, entry: dict[str, Any], *, confidence: object) -> float | None:
        return float(result_halfwidth(entry["explanation"], confidence=confidence))

    def opendp_parameters(self, entry: dict[str, Any], *, axes: list) -> dict[str, Any] | None:
        """Laplace noise of scale L / epsilon on each declared category's count (OpenDP's
        count_by_categories and laplace), then only the largest one's name."""
        return {"program": "argmax", "axes": opendp.axes_parameters(entry, axes)}

    def layout(self, entry: dict[str, Any]) -> str:
        return "statement"


KINDS = (CountKind(), HistogramKind(), ArgmaxKind())
