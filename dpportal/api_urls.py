"""The REST API under /api/v1/, its OpenAPI schema (/api/schema/) and Swagger UI (/api/docs/).

One APIView per operation (see STYLE.md); reads are GET, every action is a POST
(the update of a draft a PUT) on its own address.
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.api import TokenObtainApi, TokenRevokeApi
from budgets import api as budgets_api
from datasets import api as datasets_api
from releases import api as releases_api

v1 = [
    path("auth/token/", TokenObtainApi.as_view(), name="auth-token"),
    path("auth/token/revoke/", TokenRevokeApi.as_view(), name="auth-token-revoke"),
    # projects, memberships, the ledger
    path("projects/", budgets_api.ProjectCollectionApi.as_view(), name="projects"),
    path("projects/<uslug:slug>/", budgets_api.ProjectDetailApi.as_view(), name="projects-detail"),
    path(
        "projects/<uslug:slug>/caps/",
        budgets_api.ProjectCapsUpdateApi.as_view(),
        name="projects-caps",
    ),
    path(
        "projects/<uslug:slug>/members/",
        budgets_api.ProjectMemberListApi.as_view(),
        name="projects-members",
    ),
    path(
        "projects/<uslug:slug>/members/add/",
        budgets_api.ProjectMemberAddApi.as_view(),
        name="projects-members-add",
    ),
    path(
        "projects/<uslug:slug>/ledger/", budgets_api.LedgerListApi.as_view(), name="projects-ledger"
    ),
    # datasets
    path(
        "projects/<uslug:slug>/datasets/",
        datasets_api.DatasetListApi.as_view(),
        name="datasets-list",
    ),
    path(
        "projects/<uslug:slug>/datasets/upload/",
        datasets_api.DatasetUploadApi.as_view(),
        name="datasets-upload",
    ),
    path(
        "projects/<uslug:slug>/datasets/register/",
        datasets_api.DatasetRegisterApi.as_view(),
        name="datasets-register",
    ),
    path(
        "datasets/<int:dataset_id>/",
        datasets_api.DatasetDetailApi.as_view(),
        name="datasets-detail",
    ),
    path(
        "datasets/<int:dataset_id>/status/",
        datasets_api.DatasetStatusApi.as_view(),
        name="datasets-status",
    ),
    path(
        "datasets/<int:dataset_id>/reading/",
        datasets_api.DatasetReadingApi.as_view(),
        name="datasets-reading",
    ),
    path(
        "datasets/<int:dataset_id>/profile/",
        datasets_api.DatasetProfileApi.as_view(),
        name="datasets-profile",
    ),
    path(
        "datasets/<int:dataset_id>/declare/",
        datasets_api.DatasetDeclareApi.as_view(),
        name="datasets-declare",
    ),
    path(
        "datasets/<int:dataset_id>/codebook/",
        datasets_api.DatasetCodebookApi.as_view(),
        name="datasets-codebook",
    ),
    path(
        "datasets/<int:dataset_id>/confirm-unit/",
        datasets_api.DatasetConfirmUnitApi.as_view(),
        name="datasets-confirm-unit",
    ),
    path(
        "datasets/<int:dataset_id>/delete/",
        datasets_api.DatasetDeleteApi.as_view(),
        name="datasets-delete",
    ),
    # releases
    path(
        "projects/<uslug:slug>/releases/",
        releases_api.ReleaseListApi.as_view(),
        name="releases-list",
    ),
    path(
        "projects/<uslug:slug>/releases/create/",
        releases_api.ReleaseCreateApi.as_view(),
        name="releases-create",
    ),
    path(
        "projects/<uslug:slug>/releases/preview/",
        releases_api.ReleasePreviewApi.as_view(),
        name="releases-preview",
    ),
    path(
        "releases/<int:release_id>/",
        releases_api.ReleaseDetailApi.as_view(),
        name="releases-detail",
    ),
    path(
        "releases/<int:release_id>/update/",
        releases_api.ReleaseUpdateApi.as_view(),
        name="releases-update",
    ),
    path(
        "releases/<int:release_id>/preview/",
        releases_api.ReleaseSavedPreviewApi.as_view(),
        name="releases-saved-preview",
    ),
    path(
        "releases/<int:release_id>/status/",
        releases_api.ReleaseStatusApi.as_view(),
        name="releases-status",
    ),
    path(
        "releases/<int:release_id>/results/",
        releases_api.ReleaseResultsApi.as_view(),
        name="releases-results",
    ),
    path(
        "releases/<int:release_id>/submit/",
        releases_api.ReleaseSubmitApi.as_view(),
        name="releases-submit",
    ),
    path(
        "releases/<int:release_id>/withdraw/",
        releases_api.ReleaseWithdrawApi.as_view(),
        name="releases-withdraw",
    ),
    path(
        "releases/<int:release_id>/publish/",
        releases_api.ReleasePublishApi.as_view(),
        name="releases-publish",
    ),
    path(
        "releases/<int:release_id>/clone/",
        releases_api.ReleaseCloneApi.as_view(),
        name="releases-clone",
    ),
    path(
        "releases/<int:release_id>/approve/",
        releases_api.ReleaseApproveApi.as_view(),
        name="releases-approve",
    ),
    path(
        "releases/<int:release_id>/reject/",
        releases_api.ReleaseRejectApi.as_view(),
        name="releases-reject",
    ),
    # budget requests
    path(
        "budget-requests/", budgets_api.BudgetRequestListApi.as_view(), name="budget-requests-list"
    ),
    path(
        "budget-requests/<int:budget_request_id>/",
        releases_api.BudgetRequestDetailApi.as_view(),
        name="budget-requests-detail",
    ),
    path(
        "budget-requests/<int:budget_request_id>/approve/",
        releases_api.BudgetRequestApproveApi.as_view(),
        name="budget-requests-approve",
    ),
    path(
        "budget-requests/<int:budget_request_id>/reject/",
        releases_api.BudgetRequestRejectApi.as_view(),
        name="budget-requests-reject",
    ),
    # public, anonymous (throttled)
    path("public/projects/", releases_api.PublicProjectListApi.as_view(), name="public-projects"),
    path(
        "public/projects/<uslug:slug>/registry/",
        budgets_api.RegistryApi.as_view(),
        name="public-registry",
    ),
    path(
        "public/projects/<uslug:slug>/releases/",
        releases_api.PublicReleaseListApi.as_view(),
        name="public-releases",
    ),
    path(
        "public/projects/<uslug:slug>/releases/<int:release_id>/",
        releases_api.PublicReleaseDetailApi.as_view(),
        name="public-release",
    ),
]

urlpatterns = [
    path("v1/", include((v1, "api"), namespace="api")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its init script as a file (?script): no inline <script>, so
    # Swagger UI works under the site-wide Content-Security-Policy.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
