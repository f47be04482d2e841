"""The moves of a release's state machine, one small APIView each (releases.lifecycle).

Every move answers the release's detail (or, should reading it fail after the move
committed, the release's id and new status: a committed move never answers an error).
Owners' moves (submit, withdraw, publish) take no body; reviewers' decisions (approve,
reject) take a comment.
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from dpportal.api import MEMBER_ERRORS, ApiView, error_responses, validated_input
from releases import lifecycle, selectors
from releases.api.common import ReleaseDetailOutputSerializer, release_detail
from releases.models import Release

logger = logging.getLogger(__name__)


class CommentInputSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


def _detail_after_commit(moved: Release) -> dict:
    """The release's detail after a move has committed; never an error from here on.

    If the detail cannot be read, the answer is the release's id and new status
    (what the move did), and the failure is logged.
    """
    try:
        return release_detail(moved)
    except Exception:
        logger.exception("release %s moved to %s; its detail failed", moved.pk, moved.status)
        return {"id": moved.pk, "status": moved.status, "detail": None}


def _release_move_api(
    name: str, *, move: str, operation_id: str, summary: str, decision: bool = False
) -> type[ApiView]:
    """An APIView whose POST applies releases.lifecycle.`move` and answers the detail.

    `move` is looked up when a request comes, so the lifecycle module stays the one
    place a move is defined. A `decision` (approve, reject) is a reviewer's and
    carries a comment; the other moves are the actor's own.
    """

    @extend_schema(
        operation_id=operation_id,
        summary=summary,
        request=CommentInputSerializer if decision else None,
        responses={200: ReleaseDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self: ApiView, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(release_id=release_id, user=request.user)
        if decision:
            comment = validated_input(CommentInputSerializer, request)["comment"]
            moved = getattr(lifecycle, move)(
                release=release, reviewer=request.user, comment=comment
            )
        else:
            moved = getattr(lifecycle, move)(release=release, actor=request.user)
        return Response(_detail_after_commit(moved))

    return type(name, (ApiView,), {"post": post, "__module__": __name__, "__doc__": summary})


ReleaseSubmitApi = _release_move_api(
    "ReleaseSubmitApi",
    move="release_submit",
    operation_id="releases_submit",
    summary="Submit a draft: freeze it and file its budget request (owners)",
)
ReleaseWithdrawApi = _release_move_api(
    "ReleaseWithdrawApi",
    move="release_withdraw",
    operation_id="releases_withdraw",
    summary="Withdraw (before computing starts); a reservation is returned (owners)",
)
ReleasePublishApi = _release_move_api(
    "ReleasePublishApi",
    move="release_publish",
    operation_id="releases_publish",
    summary="Publish a computed release: its results become public (owners)",
)
ReleaseApproveApi = _release_move_api(
    "ReleaseApproveApi",
    move="release_approve",
    operation_id="releases_approve",
    summary="Approve the budget and queue the computation (reviewers; not your own)",
    decision=True,
)
ReleaseRejectApi = _release_move_api(
    "ReleaseRejectApi",
    move="release_reject",
    operation_id="releases_reject",
    summary="Reject with a reason (reviewers; not your own)",
    decision=True,
)
