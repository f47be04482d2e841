"""Reads for projects, memberships and the budget (see STYLE.md: selectors read).

A package by capability; every public name is importable from here:
projects (membership and visibility), budget (totals, requests, the ledger,
a request's budget standing), summary (the BudgetSummary value), accounting (what
fits under the cap), review (the reviewer's inbox), audit (the invariants),
registry (the public epsilon registry), deployment_entry (the project's entry for the
OpenDP Deployments Registry), spend_figure (the one spend figure: the
tight loss at the cap's delta, the basic sum beside it).
"""

from budgets.selectors.accounting import (
    CAP_CHECK_CACHE_SECONDS,
    CostFit,
    cap_check_cached,
    committed_records,
    committed_records_at,
    cost_fits,
    entry_records,
    fit_text,
    ledger_state,
    project_cap_check,
)
from budgets.selectors.audit import (
    RELEASE_CLOSED_STATUSES,
    RELEASE_SPENT_STATUSES,
    ledger_audit,
)
from budgets.selectors.budget import (
    BudgetStanding,
    BudgetSummary,
    budget_request_get_for_member,
    budget_request_list_pending_for_reviewer,
    budget_standing,
    budget_summaries,
    budget_summary,
    ledger_list_for_project,
)
from budgets.selectors.deployment_entry import (
    deployment_entry,
    deployment_entry_available,
    deployment_entry_from_registry,
)
from budgets.selectors.projects import (
    project_get_for_member,
    project_get_public,
    project_has_reviewer,
    project_list_for_user,
    project_roles,
    role_required,
)
from budgets.selectors.registry import (
    ACCOUNTING_RULE,
    BURN_WINDOW_DAYS,
    GROUP_SIZES,
    RATE_PLACES,
    REGISTRY_VERSION,
    project_registry,
    project_registry_cached,
    project_registry_json_cached,
)
from budgets.selectors.registry_accounting import accountant_description, request_mechanisms
from budgets.selectors.review import (
    InboxEntry,
    StatisticLine,
    inbox_list_for_reviewer,
    statistic_lines,
)
from budgets.selectors.spend import SpendStanding, spend_standing, standing_with_spend
from budgets.selectors.spend_figure import (
    SpendFigure,
    project_spend_figure,
    release_spend_figure,
    remaining_after,
)

__all__ = [
    "ACCOUNTING_RULE",
    "BURN_WINDOW_DAYS",
    "GROUP_SIZES",
    "RATE_PLACES",
    "REGISTRY_VERSION",
    "RELEASE_CLOSED_STATUSES",
    "RELEASE_SPENT_STATUSES",
    "BudgetStanding",
    "BudgetSummary",
    "InboxEntry",
    "SpendFigure",
    "SpendStanding",
    "StatisticLine",
    "accountant_description",
    "budget_request_get_for_member",
    "CAP_CHECK_CACHE_SECONDS",
    "CostFit",
    "cap_check_cached",
    "committed_records",
    "committed_records_at",
    "cost_fits",
    "entry_records",
    "fit_text",
    "ledger_state",
    "project_cap_check",
    "budget_request_list_pending_for_reviewer",
    "budget_standing",
    "budget_summaries",
    "budget_summary",
    "deployment_entry",
    "deployment_entry_available",
    "deployment_entry_from_registry",
    "inbox_list_for_reviewer",
    "ledger_audit",
    "ledger_list_for_project",
    "project_get_for_member",
    "project_get_public",
    "project_has_reviewer",
    "project_list_for_user",
    "project_registry",
    "project_registry_cached",
    "project_registry_json_cached",
    "project_roles",
    "role_required",
    "project_spend_figure",
    "release_spend_figure",
    "remaining_after",
    "request_mechanisms",
    "spend_standing",
    "standing_with_spend",
    "statistic_lines",
]
