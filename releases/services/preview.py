"""The accuracy preview and the budget check of a plan (public parameters only; no data)."""

from __future__ import annotations

import logging
import math
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext

from budgets import amounts
from budgets.amounts import fmt
from budgets.models import Project
from budgets.selectors import (
    BudgetSummary,
    CostFit,
    budget_summary,
    cap_check_cached,
    committed_records_at,
    cost_fits,
    fit_text,
    ledger_state,
    project_spend_figure,
    remaining_after,
)
from dpportal import formatting
from dpportal.errors import BudgetExceeded
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.headroom import compose_history
from dpportal.privacy.pld import CapCheck, Spend
from releases import dp
from releases.kinds import quantile_words
from releases.services.plan import ReleasePlan, release_plan_parse
from releases.services.tradeoff import plan_records, plan_tradeoff

logger = logging.getLogger(__name__)


def release_preview(
    *, project: Project, data: dict, chart: bool = False, accounting: bool = True
) -> dict[str, Any]:
    """The accuracy preview of a builder form: half-widths, cost and the remaining budget.

    Computed from public parameters only. Raises ValidationFailed for bad input.
    `chart`: add the accuracy-versus-epsilon chart's data (`tradeoff`), which takes a
    sweep of the planning functions, so the live preview asks for it separately.
    `accounting=False`: without the tight spend (pages that do not show it).
    """
    plan = release_plan_parse(project=project, data=data)
    return plan_preview(plan=plan, accounting=accounting, chart=chart)


def _epsilon(value: float) -> dict[str, Any]:
    """An accountant's epsilon: exact (None when no finite epsilon reaches the delta) and text."""
    if not math.isfinite(value):
        return {"exact": None, "text": "unbounded"}
    return {"exact": formatting.exact(value), "text": formatting.budget(value)}


def _spend(spend: Spend) -> dict[str, Any]:
    tight, pld = _epsilon(spend.epsilon), _epsilon(spend.pld_epsilon)
    rdp = _epsilon(spend.rdp_epsilon)
    return {
        "epsilon": tight["exact"],
        "epsilon_text": tight["text"],
        "pld_epsilon": pld["exact"],
        "pld_epsilon_text": pld["text"],
        "rdp_epsilon": rdp["exact"],
        "rdp_epsilon_text": rdp["text"],
        "basic_epsilon": formatting.exact(spend.basic.epsilon),
        "basic_epsilon_text": formatting.budget(spend.basic.epsilon),
        "basic_delta": formatting.exact(spend.basic.delta),
        "basic_delta_text": formatting.budget(spend.basic.delta),
    }


def spend_json(*, check: CapCheck, epsilon_cap: Decimal, delta_cap: Decimal) -> dict[str, Any]:
    """A CapCheck for the builder: spend before/after both ways, verdicts and the fit count.

    `epsilon` is the tightest of the bounds (PLD, RDP, basic) at the cap's delta
    (pld.Spend.epsilon);
    `fit`: how many releases like this one, this one included, fit under the cap
    (a lower bound when `fit_at_least`: the search is bounded, pld.MAX_PLD_FIT).
    """
    return {
        "delta": formatting.exact(check.before.delta),
        "epsilon_cap": formatting.exact(epsilon_cap),
        "epsilon_cap_text": formatting.budget(epsilon_cap),
        "delta_cap": formatting.exact(delta_cap),
        "delta_cap_text": formatting.budget(delta_cap),
        "before": _spend(check.before),
        "after": _spend(check.after),
        "within": check.within,
        "within_pld": check.within_pld,
        "within_rdp": check.within_rdp,
        "within_basic": check.within_basic,
        "fit": check.fit,
        "fit_at_least": check.fit_at_least,
        "fit_text": fit_text(fit=check.fit, at_least=check.fit_at_least),
    }


def _accounting(*, plan: ReleasePlan, chart: bool) -> dict[str, Any]:
    """The tight spend and the accuracy-versus-epsilon chart (the project's committed records)."""
    project = plan.project
    try:
        # the check (with its fit count) is kept per project state for page views
        # again; the chart's composed history is compose_history's own cache
        state = ledger_state(project_id=project.pk)
        check = cap_check_cached(
            project_id=project.pk,
            state=state,
            history=lambda: committed_records_at(project_id=project.pk, state=state),
            candidate=plan_records(plan=plan),
            epsilon_cap=project.epsilon_cap,
            delta_cap=project.delta_cap,
        )
        return {
            "_check": check,  # for the budget block; not part of the answer
            "spend": spend_json(
                check=check, epsilon_cap=project.epsilon_cap, delta_cap=project.delta_cap
            ),
            **(
                {
                    "tradeoff": plan_tradeoff(
                        plan=plan,
                        history=compose_history(
                            committed_records_at(project_id=project.pk, state=state)
                        ),
                    )
                }
                if chart
                else {}
            ),
        }
    except PrivacyParameterError:
        logger.exception("tight accounting failed for a preview in project %s", project.pk)
        return {"spend": None, **({"tradeoff": None} if chart else {})}


def plan_preview(
    *, plan: ReleasePlan, accounting: bool = True, chart: bool = False
) -> dict[str, Any]:
    """The preview of `plan`: half-widths and cost, and with `accounting` the remaining
    budget now and after (`budget`, the one spend figure: see _budget), the tight spend
    before/after and the fit count (`spend`), with `chart` too the accuracy-versus-epsilon
    chart's data (`tradeoff`). All depend on the live budget: the frozen summary has none."""
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
                "label_zh": s.label_zh,
                "columns": [c.name for c in s.columns],
                "group_columns": [c.name for c in s.group_columns],
                "quantiles": list(s.quantiles),
                "category": s.category or None,
                "epsilon": fmt(s.epsilon),
                "delta": fmt(s.delta),
                "epsilon_text": formatting.epsilon(s.epsilon),
                "delta_text": formatting.delta(s.delta),
                "hold": s.hold,
                "target_halfwidth": s.target_halfwidth,
                **accuracy,
                "cells_text": formatting.integer(accuracy.get("cells")),
                "halfwidth_text": formatting.halfwidth(accuracy["halfwidth"]),
                "halfwidth_simultaneous_text": formatting.halfwidth(
                    accuracy["halfwidth_simultaneous"]
                ),
                **_rank_texts(accuracy),
            }
        )
    tight = _accounting(plan=plan, chart=chart) if accounting else {}
    cost = (cost_eps, cost_delta)
    if cost_eps <= summary.epsilon_remaining and cost_delta <= summary.delta_remaining:
        fits = True
    elif tight.get("spend") is not None:  # the tight check already made: either valid bound
        fits = tight["spend"]["within"]
    else:
        fits = _fit(plan=plan, summary=summary, cost_eps=cost_eps, cost_delta=cost_delta).within
    preview = {
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
        **(
            {"budget": _budget(plan=plan, summary=summary, tight=tight, fits=fits, cost=cost)}
            if accounting
            else {}
        ),
        "fits": fits,
        **{k: v for k, v in tight.items() if not k.startswith("_")},
    }
    # the same amounts as people read them (dpportal.formatting: a delta in powers of ten)
    preview["cost"]["epsilon_text"] = formatting.epsilon(cost_eps)
    preview["cost"]["delta_text"] = formatting.delta(cost_delta)
    return preview


def _budget(
    *,
    plan: ReleasePlan,
    summary: BudgetSummary,
    tight: dict[str, Any],
    fits: bool,
    cost: tuple[Decimal, Decimal],
) -> dict[str, Any]:
    """What remains of the cap now and after this release, by the one spend figure.

    epsilon_*: the headline (budgets.selectors.spend_figure): cap - the tight loss
    at the cap's delta, now and with this release; never negative when the
    release fits. delta_*: the basic sums of deltas, at least zero when the
    release fits (the tight accountant reads every epsilon at the cap's delta, so
    a release that fits stays within it). basic: the plain sums, exact and signed,
    the explanation beside the headline.
    """
    cost_eps, cost_delta = cost
    figure = project_spend_figure(project=plan.project, summary=summary)
    check = tight.get("_check")
    basic_eps_after = amounts.sub(summary.epsilon_remaining, cost_eps)
    basic_delta_after = amounts.sub(summary.delta_remaining, cost_delta)
    eps_after = remaining_after(
        epsilon_cap=plan.project.epsilon_cap,
        after=check.after if check is not None else None,
        fits=fits,
        fallback=basic_eps_after,
    )

    def at_least_zero(value: Decimal) -> Decimal:
        return max(amounts.ZERO, value) if fits else value

    return {
        "epsilon_remaining": fmt(figure.remaining_epsilon),
        "delta_remaining": fmt(at_least_zero(summary.delta_remaining)),
        "epsilon_remaining_after": fmt(eps_after),
        "delta_remaining_after": fmt(at_least_zero(basic_delta_after)),
        "epsilon_remaining_text": formatting.epsilon(figure.remaining_epsilon),
        "delta_remaining_text": formatting.delta(at_least_zero(summary.delta_remaining)),
        "epsilon_remaining_after_text": formatting.epsilon(eps_after),
        "basic": {
            "epsilon_remaining": fmt(summary.epsilon_remaining),
            "delta_remaining": fmt(summary.delta_remaining),
            "epsilon_remaining_after": fmt(basic_eps_after),
            "delta_remaining_after": fmt(basic_delta_after),
            "epsilon_remaining_after_text": formatting.epsilon(basic_eps_after),
        },
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


def _rank_texts(accuracy: dict[str, Any]) -> dict[str, str]:
    """A quantile's rank errors as a person reads them: whole ranks, rounded up; and its
    accuracy in words, the planning figure in data units beside the rank error."""
    out = {
        f"{key}_text": formatting.rank(accuracy[key])
        for key in ("rank_error", "rank_error_simultaneous")
        if accuracy.get(key) is not None
    }
    if accuracy.get("rank_error") is not None:
        out["accuracy_text"] = quantile_words.planning_text(accuracy)
        out["accuracy_simultaneous_text"] = quantile_words.planning_text(
            accuracy, simultaneous=True
        )
    return out


def _check_fits(*, plan: ReleasePlan) -> tuple[Decimal, Decimal]:
    """The plan's cost, or BudgetExceeded when an approval would refuse it (either bound)."""
    cost_eps, cost_delta = dp.release_cost(plan=plan)
    summary = budget_summary(project=plan.project)
    fit = _fit(plan=plan, summary=summary, cost_eps=cost_eps, cost_delta=cost_delta)
    if not fit.within:
        raise BudgetExceeded(fit.refusal(what=gettext("this release")), extra=fit.extra())
    return cost_eps, cost_delta
