"""REST API of budget requests: the reviewer's list, and the output every request answers.

A request's own detail (with its release's review document) and the decisions are
releases' (releases/api/review.py): they show the release and move its state machine.
"""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors
from budgets.api.review import BudgetStandingSerializer, StatisticLineSerializer
from budgets.models import BudgetRequest
from dpportal.api import (
    PAGINATION_PARAMETERS,
    AmountField,
    ApiView,
    error_responses,
    paginated,
    paginated_response,
)


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
