"""Kinds whose preview, noise and target come from dpportal.privacy.planning: one noised
value or vector (count, histogram, most common category, clipped sum, mean).

`planning_parameters` passes planning exactly the parameters the mechanism will
get (cells, L, bounds, the mean's split), so a preview and a release cannot
disagree; planning derives the same grid from them (sensitivity.sum_granularity
at the sum's epsilon, for a mean its share).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from dpportal.errors import ValidationFailed
from dpportal.privacy import planning
from releases.kinds.base import StatisticKind, frac, statistic_errors

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan


def axis_cells(column) -> int:
    """Cells of one declared column: categories + Other (+ Missing), or bins (+ Missing).
    The same count as compute's readers produce."""
    missing = 1 if column.missing == "category" else 0
    if column.kind == "categorical":
        return len(column.categories) + 1 + missing
    return len(column.bin_edges or []) - 1 + missing


class PlannedKind(StatisticKind):
    """A kind previewed by planning.statistic_halfwidth from `planning_parameters`."""

    def cells(self, stat: StatisticPlan) -> int:
        """The number of cells the mechanism will noise."""
        return 1

    def value_cells(self, stat: StatisticPlan) -> int:
        return self.cells(stat)

    def planning_parameters(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """The public parameters of `stat` exactly as the mechanism will see them."""
        return {
            "kind": stat.kind,
            "mechanism": self.mechanism(plan.mechanism),
            "delta": 0 if self.pure else stat.delta,
            "confidence": frac(plan.confidence),
            "contribution_bound": plan.dataset.contribution_bound,
            "cells": self.cells(stat),
        }

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """Per-cell half-width and, for several cells, all at once (planning)."""
        params = self.planning_parameters(plan=plan, stat=stat)
        with statistic_errors(stat):
            per_cell = planning.statistic_halfwidth(**params, epsilon=stat.epsilon)
            simultaneous = None
            if params["cells"] > 1:
                simultaneous = planning.statistic_halfwidth(
                    **params, epsilon=stat.epsilon, simultaneous=True
                )
        return {
            "cells": params["cells"],
            "halfwidth": per_cell,
            "halfwidth_simultaneous": simultaneous,
            "n_guess": stat.n_guess,
        }

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        params = self.planning_parameters(plan=plan, stat=stat)
        return (tuple(sorted(params.items())), frac(stat.epsilon))

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """planning.epsilon_for_halfwidth (3 significant digits, rounded up, over
        planning.EPSILON_RANGE) with the parameters the mechanism will use."""
        params = self.planning_parameters(plan=plan, stat=stat)
        target = frac(stat.target_halfwidth)
        with statistic_errors(stat):
            high = planning.EPSILON_RANGE[1]
            if planning.statistic_halfwidth(**params, epsilon=high) > target:
                raise ValidationFailed(
                    gettext(
                        "%(where)s: the target half-width %(target)s would need an epsilon "
                        "above %(high)s; choose a wider target."
                    )
                    % {
                        "where": gettext("Statistic %(number)s") % {"number": stat.position + 1},
                        "target": f"{float(target):g}",
                        "high": high,
                    }
                )
            return planning.epsilon_for_halfwidth(**params, halfwidth=target)
