"""REST API of the budgets app, by capability: projects (members, caps, ledger),
requests (the reviewer's list of budget requests; serializers of the review document
in review) and registry (the public epsilon registry). Every API view is importable
from here. A request's detail and the decisions on it are releases.api's.
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
from budgets.api.requests import BudgetRequestListApi

__all__ = [
    "BudgetRequestListApi",
    "LedgerListApi",
    "ProjectCapsUpdateApi",
    "ProjectCollectionApi",
    "ProjectDetailApi",
    "ProjectMemberAddApi",
    "ProjectMemberListApi",
    "RegistryApi",
]
