"""REST API of projects, memberships, budget requests, the ledger and the public registry.

Thin: each view parses with its input serializer, calls one service or selector,
and renders with its output serializer. Errors are mapped in dpportal.api.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ObjectDoesNotExist
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors, services
from budgets.models import BudgetRequest, Membership, Project
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    AmountField,
    ApiView,
    PublicApiView,
    error_responses,
    openapi_from_json_schema,
    paginated,
    paginated_response,
    validated_input,
)

OWNER = {Membership.Role.OWNER.value}
REVIEWER = {Membership.Role.REVIEWER.value}


class BudgetSummarySerializer(serializers.Serializer):
    epsilon_cap = AmountField()
    delta_cap = AmountField()
    epsilon_spent = AmountField()
    delta_spent = AmountField()
    epsilon_reserved = AmountField()
    delta_reserved = AmountField()
    epsilon_committed = AmountField()
    delta_committed = AmountField()
    epsilon_remaining = AmountField()
    delta_remaining = AmountField()


class ProjectOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    privacy_unit_description = serializers.CharField()
    epsilon_cap = AmountField()
    delta_cap = AmountField()
    created_at = serializers.DateTimeField()


class ProjectDetailOutputSerializer(ProjectOutputSerializer):
    roles = serializers.ListField(child=serializers.CharField(), help_text="Your roles.")
    budget = BudgetSummarySerializer()


def _project_detail(*, project: Project, user) -> dict:
    return {
        **ProjectOutputSerializer(project).data,
        "roles": sorted(selectors.project_roles(project=project, user=user)),
        "budget": BudgetSummarySerializer(selectors.budget_summary(project=project)).data,
    }


class ProjectCollectionApi(ApiView):
    """GET lists your projects, POST creates one (one address: a project may be called
    anything, so no sub-address like create/ could be told apart from a project)."""

    @extend_schema_serializer(component_name="ProjectCollectionInput")
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        slug = serializers.CharField(max_length=80, required=False, allow_blank=True)
        description = serializers.CharField(max_length=10000, allow_blank=True, default="")
        privacy_unit_description = serializers.CharField(
            max_length=10000, allow_blank=True, default=""
        )
        epsilon_cap = serializers.CharField(max_length=64, help_text="Exact decimal, > 0.")
        delta_cap = serializers.CharField(
            max_length=64, default="0", help_text="Exact decimal in [0, 1)."
        )

    @extend_schema(
        operation_id="projects_list",
        summary="Projects you are a member of",
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(ProjectOutputSerializer), **error_responses(401, 404, 429)},
    )
    def get(self, request: Request) -> Response:
        return paginated_response(
            serializer_class=ProjectOutputSerializer,
            queryset=selectors.project_list_for_user(user=request.user),
            request=request,
            view=self,
        )

    @extend_schema(
        operation_id="projects_create",
        summary="Create a project (you become its owner)",
        request=InputSerializer,
        responses={201: ProjectDetailOutputSerializer, **error_responses(400, 401, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(self.InputSerializer, request)
        project = services.project_create(created_by=request.user, **data)
        return Response(
            _project_detail(project=project, user=request.user), status=status.HTTP_201_CREATED
        )


class ProjectDetailApi(ApiView):
    @extend_schema(
        operation_id="projects_retrieve",
        summary="A project with your roles and its budget",
        responses={200: ProjectDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_for_member(slug=slug, user=request.user)
        return Response(_project_detail(project=project, user=request.user))


class ProjectCapsUpdateApi(ApiView):
    @extend_schema_serializer(component_name="ProjectCapsUpdateInput")
    class InputSerializer(serializers.Serializer):
        epsilon_cap = serializers.CharField(max_length=64)
        delta_cap = serializers.CharField(max_length=64)
        note = serializers.CharField(max_length=500, allow_blank=True, default="")

    @extend_schema(
        operation_id="projects_caps_update",
        summary="Change the caps (owners may lower them; raising needs staff)",
        request=InputSerializer,
        responses={200: ProjectDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_for_member(slug=slug, user=request.user)
        data = validated_input(self.InputSerializer, request)
        project = services.project_caps_update(project=project, actor=request.user, **data)
        return Response(_project_detail(project=project, user=request.user))


class MembershipOutputSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class ProjectMemberListApi(ApiView):
    @extend_schema(
        operation_id="projects_members_list",
        summary="The project's members and their roles",
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(MembershipOutputSerializer), **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_for_member(slug=slug, user=request.user)
        memberships = project.memberships.select_related("user").order_by("user__username", "role")
        return paginated_response(
            serializer_class=MembershipOutputSerializer,
            queryset=memberships,
            request=request,
            view=self,
        )


class ProjectMemberAddApi(ApiView):
    @extend_schema_serializer(component_name="ProjectMemberAddInput")
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        role = serializers.ChoiceField(choices=Membership.Role.values)

    @extend_schema(
        operation_id="projects_members_add",
        summary="Give a user a role in the project (owners only)",
        request=InputSerializer,
        responses={201: MembershipOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_for_member(slug=slug, user=request.user)
        data = validated_input(self.InputSerializer, request)
        membership = services.project_member_add(project=project, actor=request.user, **data)
        return Response(MembershipOutputSerializer(membership).data, status=status.HTTP_201_CREATED)


class LedgerEntryOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    epsilon = AmountField()
    delta = AmountField()
    budget_request = serializers.IntegerField(source="request_id")
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    note = serializers.CharField()
    created_at = serializers.DateTimeField()


class LedgerListApi(ApiView):
    @extend_schema(
        operation_id="projects_ledger_list",
        summary="The project's append-only ledger (members)",
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(LedgerEntryOutputSerializer), **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_for_member(slug=slug, user=request.user)
        return paginated_response(
            serializer_class=LedgerEntryOutputSerializer,
            queryset=selectors.ledger_list_for_project(project=project),
            request=request,
            view=self,
        )


# --- budget requests ----------------------------------------------------------------


class BudgetRequestOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    title = serializers.CharField()
    epsilon = AmountField()
    delta = AmountField()
    status = serializers.CharField()
    release = serializers.SerializerMethodField()
    spec_hash = serializers.CharField()
    summary = serializers.JSONField(help_text="The statistics and their accuracy preview.")
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField(allow_null=True)
    comment = serializers.CharField()

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_release(self, obj: BudgetRequest) -> int | None:
        try:
            return obj.release.pk
        except ObjectDoesNotExist:
            return None


class BudgetRequestListApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_list",
        summary="Pending budget requests for you to review",
        parameters=PAGINATION_PARAMETERS,
        responses={
            200: paginated(BudgetRequestOutputSerializer),
            **error_responses(401, 404, 429),
        },
    )
    def get(self, request: Request) -> Response:
        return paginated_response(
            serializer_class=BudgetRequestOutputSerializer,
            queryset=selectors.budget_request_list_pending_for_reviewer(user=request.user),
            request=request,
            view=self,
        )


class BudgetRequestDetailApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_retrieve",
        summary="A budget request with its preview (members)",
        responses={200: BudgetRequestOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, budget_request_id: int) -> Response:
        budget_request = selectors.budget_request_get_for_member(
            budget_request_id=budget_request_id, user=request.user
        )
        return Response(BudgetRequestOutputSerializer(budget_request).data)


class DecisionInputSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=2000, allow_blank=True, default="")


def _decide(*, budget_request_id: int, user, approve: bool, comment: str) -> BudgetRequest:
    """Approve or reject; a release's request moves through the release's state machine."""
    budget_request = selectors.budget_request_get_for_member(
        budget_request_id=budget_request_id, user=user
    )
    try:
        release = budget_request.release
    except ObjectDoesNotExist:
        release = None
    if release is not None:
        from releases import lifecycle  # an interface may call any app's services

        if approve:
            lifecycle.release_approve(release=release, reviewer=user, comment=comment)
        else:
            lifecycle.release_reject(release=release, reviewer=user, comment=comment)
    elif approve:
        services.budget_request_approve(
            budget_request_id=budget_request.pk, reviewer=user, comment=comment
        )
    else:
        services.budget_request_reject(
            budget_request_id=budget_request.pk, reviewer=user, comment=comment
        )
    return selectors.budget_request_get_for_member(budget_request_id=budget_request.pk, user=user)


class BudgetRequestApproveApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_approve",
        summary="Approve: reserve the cost and queue the release (reviewers; not your own)",
        description="Approving twice answers 409 and changes nothing.",
        request=DecisionInputSerializer,
        responses={200: BudgetRequestOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, budget_request_id: int) -> Response:
        data = validated_input(DecisionInputSerializer, request)
        budget_request = _decide(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=True,
            comment=data["comment"],
        )
        return Response(BudgetRequestOutputSerializer(budget_request).data)


class BudgetRequestRejectApi(ApiView):
    @extend_schema_serializer(component_name="BudgetRequestRejectInput")
    class InputSerializer(serializers.Serializer):
        comment = serializers.CharField(max_length=2000, help_text="The reason (required).")

    @extend_schema(
        operation_id="budget_requests_reject",
        summary="Reject with a comment (reviewers; not your own)",
        request=InputSerializer,
        responses={200: BudgetRequestOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, budget_request_id: int) -> Response:
        data = validated_input(self.InputSerializer, request)
        budget_request = _decide(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=False,
            comment=data["comment"],
        )
        return Response(BudgetRequestOutputSerializer(budget_request).data)


# --- public ---------------------------------------------------------------------------


REGISTRY_SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "registry.schema.json"


class RegistryOutputSerializer(serializers.Serializer):
    """The public epsilon registry: documented by budgets/schemas/registry.schema.json.

    Never used to render (the selector builds the document); it names the schema's
    OpenAPI component, which _RegistrySchemaExtension reads from the repository's file.
    """


class _RegistrySchemaExtension(OpenApiSerializerExtension):
    target_class = RegistryOutputSerializer

    def get_name(self, auto_schema, direction) -> str:  # noqa: ANN001 (drf-spectacular's hook)
        return "EpsilonRegistry"

    def map_serializer(self, auto_schema, direction) -> dict:  # noqa: ANN001
        return openapi_from_json_schema(json.loads(REGISTRY_SCHEMA_PATH.read_text()))


class RegistryApi(PublicApiView):
    @extend_schema(
        operation_id="public_registry_retrieve",
        summary="A project's public epsilon registry (JSON)",
        description="The same document as /registry/<slug>.json; its JSON Schema is "
        "budgets/schemas/registry.schema.json.",
        auth=[],
        responses={200: RegistryOutputSerializer, **error_responses(404, 429)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = selectors.project_get_public(slug=slug)
        registry, _ = selectors.project_registry_cached(project=project)
        return Response(registry)
