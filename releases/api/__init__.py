"""REST API of releases: drafts and their statistics, preview, lifecycle, results, public reads,
and a budget request's detail and decisions (review).

Thin: the builder's validation is releases.services, every move of the state
machine is releases.lifecycle, published data comes from releases.public.selectors
and releases.public.
Errors are mapped in dpportal.api. A package by capability; every public name is
importable from here (dpportal/api_urls.py uses `releases.api.<View>`).
"""

from releases.api.common import (
    CONFIDENCE_PARAMETER,
    OWNER,
    ReleaseDataOutputSerializer,
    ReleaseDetailOutputSerializer,
    ReleaseEventOutputSerializer,
    ReleaseOutputSerializer,
    StatisticOutputSerializer,
    release_data,
    release_detail,
)
from releases.api.drafts import (
    ReleaseCloneApi,
    ReleaseCreateApi,
    ReleaseDetailApi,
    ReleaseInputSerializer,
    ReleaseListApi,
    ReleaseUpdateApi,
    StatisticInputSerializer,
    release_input,
)
from releases.api.lifecycle import (
    CommentInputSerializer,
    ReleaseApproveApi,
    ReleasePublishApi,
    ReleaseRejectApi,
    ReleaseSubmitApi,
    ReleaseWithdrawApi,
)
from releases.api.previews import (
    PreviewOutputSerializer,
    PreviewStatisticSerializer,
    ReleasePreviewApi,
    ReleaseSavedPreviewApi,
)
from releases.api.public import (
    PublicProjectListApi,
    PublicProjectOutputSerializer,
    PublicReleaseDetailApi,
    PublicReleaseListApi,
    PublicReleaseOutputSerializer,
)
from releases.api.results import (
    ReleaseResultsApi,
    ReleaseStatusApi,
    ReleaseStatusOutputSerializer,
)
from releases.api.review import (
    BudgetRequestApproveApi,
    BudgetRequestDetailApi,
    BudgetRequestDetailSerializer,
    BudgetRequestRejectApi,
    DecisionInputSerializer,
)

__all__ = [
    "BudgetRequestApproveApi",
    "BudgetRequestDetailApi",
    "BudgetRequestDetailSerializer",
    "BudgetRequestRejectApi",
    "DecisionInputSerializer",
    "CONFIDENCE_PARAMETER",
    "CommentInputSerializer",
    "OWNER",
    "PreviewOutputSerializer",
    "PreviewStatisticSerializer",
    "PublicProjectListApi",
    "PublicProjectOutputSerializer",
    "PublicReleaseDetailApi",
    "PublicReleaseListApi",
    "PublicReleaseOutputSerializer",
    "ReleaseApproveApi",
    "ReleaseCloneApi",
    "ReleaseCreateApi",
    "ReleaseDataOutputSerializer",
    "ReleaseDetailApi",
    "ReleaseDetailOutputSerializer",
    "ReleaseEventOutputSerializer",
    "ReleaseInputSerializer",
    "ReleaseListApi",
    "ReleaseOutputSerializer",
    "ReleasePreviewApi",
    "ReleasePublishApi",
    "ReleaseRejectApi",
    "ReleaseResultsApi",
    "ReleaseSavedPreviewApi",
    "ReleaseStatusApi",
    "ReleaseStatusOutputSerializer",
    "ReleaseSubmitApi",
    "ReleaseUpdateApi",
    "ReleaseWithdrawApi",
    "StatisticInputSerializer",
    "StatisticOutputSerializer",
    "release_data",
    "release_detail",
    "release_input",
]
