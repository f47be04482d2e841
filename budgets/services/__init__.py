"""Writes for projects, memberships and the budget (see STYLE.md: services write).

A package by capability; every public name is importable from here:
validation (exact amounts and texts), projects (projects, members, caps),
requests (file, approve, reject, withdraw) and ledger (charge or release a reservation).
"""

from budgets.services.ledger import budget_charge, budget_release
from budgets.services.projects import (
    RESERVED_SLUGS,
    membership_add,
    project_caps_update,
    project_create,
    project_member_add,
)
from budgets.services.requests import (
    budget_request_approve,
    budget_request_create,
    budget_request_reject,
    budget_request_withdraw,
)
from budgets.services.validation import (
    COMMENT_MAX_LENGTH,
    NOTE_MAX_LENGTH,
    TITLE_MAX_LENGTH,
    _parse_decimal,
    parse_caps,
    parse_cost,
    parse_delta,
    parse_epsilon,
)

__all__ = [
    "COMMENT_MAX_LENGTH",
    "NOTE_MAX_LENGTH",
    "RESERVED_SLUGS",
    "TITLE_MAX_LENGTH",
    "_parse_decimal",
    "budget_charge",
    "budget_release",
    "budget_request_approve",
    "budget_request_create",
    "budget_request_reject",
    "budget_request_withdraw",
    "membership_add",
    "parse_caps",
    "parse_cost",
    "parse_delta",
    "parse_epsilon",
    "project_caps_update",
    "project_create",
    "project_member_add",
]
