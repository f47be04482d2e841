"""The accuracy preview and the budget check of a plan (public parameters only; no data)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from budgets.amounts import fmt, text
from budgets.models import Project
from budgets.selectors import budget_summary
from dpportal.errors import BudgetExceeded
from releases import dp
from releases.services.plan import ReleasePlan, release_plan_parse


def release_preview(*, project: Project, data: dict) -> dict[str, Any]:
    """The accuracy preview of a builder form: half-widths, cost and the remaining budget.

    Computed from public parameters only. Raises ValidationFailed for bad input.
    """
    plan = release_plan_parse(project=project, data=data)
    return plan_preview(plan=plan)


def plan_preview(*, plan: ReleasePlan) -> dict[str, Any]:
    summary = budget_summary(project=plan.project)
    cost_eps, cost_delta = dp.release_cost(plan=plan)
    statistics = []
    for s in plan.statistics:
        accuracy = dp.statistic_accuracy(plan=plan, stat=s)
        statistics.append(
            {
                "position": s.position,
                "kind": s.kind,
                "label": s.label,
                "columns": [c.name for c in s.columns],
                "category": s.category or None,
                "epsilon": fmt(s.epsilon),
                "delta": fmt(s.delta),
                "hold": s.hold,
                "target_halfwidth": s.target_halfwidth,
                **accuracy,
            }
        )
    fits_eps = cost_eps <= summary.epsilon_remaining
    fits_delta = cost_delta <= summary.delta_remaining
    return {
        "dataset": plan.dataset.pk,
        "mechanism": plan.mechanism,
        "confidence": fmt(plan.confidence),
        "epsilon": fmt(plan.epsilon),
        "delta": fmt(plan.delta),
        "privacy_unit": {
            "id_column": plan.dataset.id_column or None,
            "contribution_bound": plan.dataset.contribution_bound,
        },
        "statistics": statistics,
        "cost": {"epsilon": fmt(cost_eps), "delta": fmt(cost_delta)},
        "budget": {
            "epsilon_remaining": fmt(summary.epsilon_remaining),
            "delta_remaining": fmt(summary.delta_remaining),
            "epsilon_remaining_after": fmt(summary.epsilon_remaining - cost_eps),
            "delta_remaining_after": fmt(summary.delta_remaining - cost_delta),
        },
        "fits": fits_eps and fits_delta,
    }


def _check_fits(*, plan: ReleasePlan) -> tuple[Decimal, Decimal]:
    cost_eps, cost_delta = dp.release_cost(plan=plan)
    summary = budget_summary(project=plan.project)
    if cost_eps > summary.epsilon_remaining:
        raise BudgetExceeded(
            f"This release costs epsilon {text(cost_eps)} but only "
            f"{text(summary.epsilon_remaining)} remains in the project's budget."
        )
    if cost_delta > summary.delta_remaining:
        raise BudgetExceeded(
            f"This release costs delta {text(cost_delta)} but only "
            f"{text(summary.delta_remaining)} remains in the project's budget."
        )
    return cost_eps, cost_delta
