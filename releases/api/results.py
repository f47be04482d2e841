"""A release's computation status and, once computed, its noisy results (members)."""

from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from dpportal.api import (
    MEMBER_ERRORS,
    ApiView,
    error_responses,
)
from dpportal.errors import InvalidTransition
from releases import selectors
from releases.api.common import CONFIDENCE_PARAMETER, ReleaseDataOutputSerializer, release_data
from releases.models import Release
from releases.public import options as public_options


class ReleaseStatusOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Release.Status.choices)
    status_label = serializers.CharField()
    worker_lost = serializers.BooleanField(
        help_text="Computing, but its worker stopped responding: another worker resumes it."
    )
    progress = serializers.FloatField(help_text="Fraction of the data's chunks done (0 to 1).")
    failure_reason = serializers.CharField()
    has_results = serializers.BooleanField()


class ReleaseStatusApi(ApiView):
    @extend_schema(
        operation_id="releases_status",
        summary="Status and progress of the computation (members)",
        responses={200: ReleaseStatusOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(release_id=release_id, user=request.user)
        return Response(
            ReleaseStatusOutputSerializer(selectors.release_status(release=release)).data
        )


class ReleaseResultsApi(ApiView):
    @extend_schema(
        operation_id="releases_results",
        summary="The noisy results with intervals, once computed (members)",
        parameters=[CONFIDENCE_PARAMETER],
        responses={200: ReleaseDataOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def get(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(release_id=release_id, user=request.user)
        confidence = public_options.confidence_parse(value=request.query_params.get("confidence"))
        if selectors.release_result_get(release=release) is None:
            raise InvalidTransition(
                gettext("This release is %(status)s: it has no results yet.")
                % {"status": release.get_status_display().lower()}
            )
        return Response(release_data(release, confidence=confidence))
