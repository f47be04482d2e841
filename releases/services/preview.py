"""The accuracy preview and the budget check of a plan (public parameters only; no data)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from budgets.amounts import fmt
from budgets.models import Project
from budgets.selectors import BudgetSummary, CostFit, budget_summary, cost_fits
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
    fits = _fit(plan=plan, summary=summary, cost_eps=cost_eps, cost_delta=cost_delta).within
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
        "fits": fits,
    }


def _fit(
    *, plan: ReleasePlan, summary: BudgetSummary, cost_eps: Decimal, cost_delta: Decimal
) -> CostFit:
    """The approval's verdict on this plan (basic sums, else the tight accountant).

    The release's mechanism records are built only when the sums do not fit.
    """
    fits_basic = cost_eps <= summary.epsilon_remaining and cost_delta <= summary.delta_remaining
    return cost_fits(
        project=plan.project,
        summary=summary,
        epsilon=cost_eps,
        delta=cost_delta,
        mechanisms=None if fits_basic else dp.release_mechanisms(plan=plan),
    )


def _check_fits(*, plan: ReleasePlan) -> tuple[Decimal, Decimal]:
    """The plan's cost, or BudgetExceeded when an approval would refuse it (either bound)."""
    cost_eps, cost_delta = dp.release_cost(plan=plan)
    summary = budget_summary(project=plan.project)
    fit = _fit(plan=plan, summary=summary, cost_eps=cost_eps, cost_delta=cost_delta)
    if not fit.within:
        raise BudgetExceeded(fit.refusal(what="this release"), extra=fit.extra())
    return cost_eps, cost_delta
