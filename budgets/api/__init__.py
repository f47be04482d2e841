"""REST API of the budgets app, by capability: projects (members, caps, ledger),
requests (budget requests and their review document; serializers in review) and
registry (the public epsilon registry). Every API view is importable from here.
"""

from budgets.api.projects import (
    LedgerListApi,
    ProjectCapsUpdateApi,
    ProjectCollectionApi,
    ProjectDetailApi,
    ProjectMemberAddApi,
    ProjectMemberListApi,
)
from budgets.api.registry import RegistryApi
from budgets.api.requests import (
    BudgetRequestApproveApi,
    BudgetRequestDetailApi,
    BudgetRequestListApi,
    BudgetRequestRejectApi,
)

__all__ = [
    "BudgetRequestApproveApi",
    "BudgetRequestDetailApi",
    "BudgetRequestListApi",
    "BudgetRequestRejectApi",
    "LedgerListApi",
    "ProjectCapsUpdateApi",
    "ProjectCollectionApi",
    "ProjectDetailApi",
    "ProjectMemberAddApi",
    "ProjectMemberListApi",
    "RegistryApi",
]
