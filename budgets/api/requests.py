"""REST API of budget requests: the reviewer's list, the review document, decisions.

Thin: each view calls one selector or service; a request of a release moves
through the release's state machine (releases.lifecycle), in one transaction.
"""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors, services
from budgets.api.review import (
    BudgetStandingSerializer,
    ReviewDocumentSerializer,
    StatisticLineSerializer,
)
from budgets.models import BudgetRequest
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    AmountField,
    ApiView,
    error_responses,
    paginated,
    paginated_response,
    validated_input,
)
from releases import lifecycle
from releases.review_selectors import review_document_get


class BudgetRequestOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    title = serializers.CharField()
    epsilon = AmountField()
    delta = AmountField()
    status = serializers.CharField()
    release = serializers.SerializerMethodField()
    spec_hash = serializers.CharField()
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField(allow_null=True)
    comment = serializers.CharField()

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_release(self, obj: BudgetRequest) -> int | None:
        release = getattr(obj, "release", None)  # select_related by the selectors
        return release.pk if release is not None else None


class BudgetRequestListItemSerializer(BudgetRequestOutputSerializer):
    """A pending request with its budget now and after approval, and its statistics."""

    budget = BudgetStandingSerializer()
    statistics = StatisticLineSerializer(many=True)

    def to_representation(self, instance: selectors.InboxEntry) -> dict:
        return {
            **BudgetRequestOutputSerializer(instance.budget_request).data,
            "budget": BudgetStandingSerializer(instance.budget).data,
            "statistics": StatisticLineSerializer(instance.statistics, many=True).data,
        }


class BudgetRequestDetailSerializer(BudgetRequestOutputSerializer):
    """A budget request with its review document."""

    review = ReviewDocumentSerializer()

    def to_representation(self, instance: BudgetRequest) -> dict:
        document = review_document_get(budget_request=instance)
        return {
            **BudgetRequestOutputSerializer(instance).data,
            "review": ReviewDocumentSerializer(document).data,
        }


class BudgetRequestListApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_list",
        summary="Pending budget requests for you to review",
        parameters=PAGINATION_PARAMETERS,
        responses={
            200: paginated(BudgetRequestListItemSerializer),
            **error_responses(401, 404, 429),
        },
    )
    def get(self, request: Request) -> Response:
        return paginated_response(
            serializer_class=BudgetRequestListItemSerializer,
            queryset=selectors.inbox_list_for_reviewer(user=request.user),
            request=request,
            view=self,
        )


class BudgetRequestDetailApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_retrieve",
        summary="A budget request with its preview (members)",
        responses={200: BudgetRequestDetailSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, budget_request_id: int) -> Response:
        budget_request = selectors.budget_request_get_for_member(
            budget_request_id=budget_request_id, user=request.user
        )
        return Response(BudgetRequestDetailSerializer(budget_request).data)


class DecisionInputSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=2000, allow_blank=True, default="")


def _decide(*, budget_request_id: int, user, approve: bool, comment: str) -> BudgetRequest:
    """Approve or reject; a release's request moves through the release's state machine."""
    budget_request = selectors.budget_request_get_for_member(
        budget_request_id=budget_request_id, user=user
    )
    release = getattr(budget_request, "release", None)
    if release is not None:
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
        responses={200: BudgetRequestDetailSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, budget_request_id: int) -> Response:
        data = validated_input(DecisionInputSerializer, request)
        budget_request = _decide(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=True,
            comment=data["comment"],
        )
        return Response(BudgetRequestDetailSerializer(budget_request).data)


class BudgetRequestRejectApi(ApiView):
    @extend_schema_serializer(component_name="BudgetRequestRejectInput")
    class InputSerializer(serializers.Serializer):
        comment = serializers.CharField(max_length=2000, help_text="The reason (required).")

    @extend_schema(
        operation_id="budget_requests_reject",
        summary="Reject with a comment (reviewers; not your own)",
        request=InputSerializer,
        responses={200: BudgetRequestDetailSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, budget_request_id: int) -> Response:
        data = validated_input(self.InputSerializer, request)
        budget_request = _decide(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=False,
            comment=data["comment"],
        )
        return Response(BudgetRequestDetailSerializer(budget_request).data)
