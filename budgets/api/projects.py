"""REST API of projects, memberships and the ledger (members).

Thin: each view parses with its input serializer, calls one service or selector,
and renders with its output serializer. Errors are mapped in dpportal.api.
"""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors, services
from budgets.models import Membership, Project
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    AmountField,
    ApiView,
    BilingualOutputField,
    BilingualTextField,
    error_responses,
    paginated,
    paginated_response,
    validated_input,
)
from dpportal.bilingual import Bilingual


class BudgetSummarySerializer(serializers.Serializer):
    """The ledger's exact basic sums (basic composition); the stated loss is `spend`."""

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


class SpendBasicSerializer(serializers.Serializer):
    spent_epsilon = AmountField(source="basic_spent_epsilon")
    spent_delta = AmountField(source="basic_spent_delta")
    committed_epsilon = AmountField(source="basic_committed_epsilon")
    committed_delta = AmountField(source="basic_committed_delta")


class SpendFigureSerializer(serializers.Serializer):
    """The one spend figure every page states (budgets.selectors.spend_figure)."""

    delta = AmountField(help_text="The cap's delta, at which every epsilon here is read.")
    epsilon_cap = AmountField()
    spent_epsilon = AmountField(
        allow_null=True,
        help_text="The computed releases' privacy loss, tight: the smallest valid epsilon at "
        "the cap's delta (privacy loss distributions, Renyi DP, or the basic sum). null: no "
        "finite epsilon reaches that delta.",
    )
    committed_epsilon = AmountField(
        allow_null=True, help_text="The same, with approved releases not yet computed."
    )
    remaining_epsilon = AmountField(help_text="epsilon_cap - committed_epsilon, at least 0.")
    basic = SpendBasicSerializer(
        source="*", help_text="The plain sums of the same rows (basic composition)."
    )


class ProjectOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    name_i18n = BilingualOutputField("name")
    description = serializers.CharField()
    description_i18n = BilingualOutputField("description")
    privacy_unit_description = serializers.CharField()
    privacy_unit_description_i18n = BilingualOutputField("privacy_unit_description")
    epsilon_cap = AmountField()
    delta_cap = AmountField()
    created_at = serializers.DateTimeField()


class ProjectDetailOutputSerializer(ProjectOutputSerializer):
    roles = serializers.ListField(child=serializers.CharField(), help_text="Your roles.")
    budget = BudgetSummarySerializer(help_text="The basic sums from the ledger, exact.")
    spend = SpendFigureSerializer(
        help_text="The stated spend: tight at the cap's delta, the basic sums beside it."
    )


def _project_detail(*, project: Project, user) -> dict:
    summary = selectors.budget_summary(project=project)
    figure = selectors.project_spend_figure(project=project, summary=summary)
    return {
        **ProjectOutputSerializer(project).data,
        "roles": sorted(selectors.project_roles(project=project, user=user)),
        "budget": BudgetSummarySerializer(summary).data,
        "spend": SpendFigureSerializer(figure).data,
    }


class ProjectCollectionApi(ApiView):
    """GET lists your projects, POST creates one (one address: a project may be called
    anything, so no sub-address like create/ could be told apart from a project)."""

    @extend_schema_serializer(component_name="ProjectCollectionInput")
    class InputSerializer(serializers.Serializer):
        name = BilingualTextField(max_length=200)
        slug = serializers.CharField(max_length=80, required=False, allow_blank=True)
        description = BilingualTextField(max_length=10000, default="")
        privacy_unit_description = BilingualTextField(max_length=10000, default="")
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
        for field in ("name", "description", "privacy_unit_description"):
            texts = Bilingual.from_json(data.get(field))
            data[field], data[field + "_zh"] = texts.en, texts.zh
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
