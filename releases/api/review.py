"""REST API of one budget request: its detail with the review document, and the decisions.

Here and not in budgets because the detail shows a release's review document and a
decision moves the release's state machine; the one rule for a decision is
releases.services.review.budget_request_decide, which the reviewer's page calls too.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors as budget_selectors
from budgets.api.requests import BudgetRequestOutputSerializer
from budgets.api.review import ReviewDocumentSerializer
from budgets.models import BudgetRequest
from dpportal.api import MEMBER_ERRORS, ApiView, error_responses, validated_input
from releases.review.selectors import review_document_get
from releases.services.review import budget_request_decide

logger = logging.getLogger(__name__)


class BudgetRequestDetailSerializer(BudgetRequestOutputSerializer):
    """A budget request with its review document."""

    review = ReviewDocumentSerializer(
        allow_null=True, help_text="Null only when a decision's answer could not build it."
    )

    def to_representation(self, instance: BudgetRequest) -> dict:
        document = review_document_get(budget_request=instance)
        return {
            **BudgetRequestOutputSerializer(instance).data,
            "review": ReviewDocumentSerializer(document).data,
        }


def _decided(
    *, budget_request_id: int, user: AbstractBaseUser, approve: bool, comment: str
) -> dict:
    """Decide as `user` (a member's request, else NotFound), then the request's detail.

    The decision commits inside budget_request_decide; nothing after it may turn the
    answer into an error. If the detail with its review document cannot be built,
    the answer is the request itself (its new status) with `review` null, and the
    failure is logged.
    """
    budget_request = budget_selectors.budget_request_get_for_member(
        budget_request_id=budget_request_id, user=user
    )
    budget_request_decide(
        budget_request=budget_request, reviewer=user, approve=approve, comment=comment
    )
    try:
        decided = budget_selectors.budget_request_get_for_member(
            budget_request_id=budget_request.pk, user=user
        )
        return BudgetRequestDetailSerializer(decided).data
    except Exception:
        logger.exception("budget request %s decided; its detail failed", budget_request.pk)
    budget_request.refresh_from_db(fields=["status", "decided_by", "decided_at", "comment"])
    return {**BudgetRequestOutputSerializer(budget_request).data, "review": None}


class BudgetRequestDetailApi(ApiView):
    @extend_schema(
        operation_id="budget_requests_retrieve",
        summary="A budget request with its preview (members)",
        responses={200: BudgetRequestDetailSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, budget_request_id: int) -> Response:
        budget_request = budget_selectors.budget_request_get_for_member(
            budget_request_id=budget_request_id, user=request.user
        )
        return Response(BudgetRequestDetailSerializer(budget_request).data)


class DecisionInputSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=2000, allow_blank=True, default="")


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
        detail = _decided(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=True,
            comment=data["comment"],
        )
        return Response(detail)


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
        detail = _decided(
            budget_request_id=budget_request_id,
            user=request.user,
            approve=False,
            comment=data["comment"],
        )
        return Response(detail)
