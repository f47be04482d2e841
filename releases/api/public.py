"""Anonymous reads of published projects and releases (throttled)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from dpportal.api import (
    PAGINATION_PARAMETERS,
    AmountField,
    PublicApiView,
    error_responses,
    paginated,
    paginated_response,
)
from releases.api.common import CONFIDENCE_PARAMETER, ReleaseDataOutputSerializer, release_data
from releases.models import Release
from releases.public import options as public_options
from releases.public import selectors as public


class DayField(serializers.DateField):
    """A moment published as its UTC calendar day: public times are days only.

    Approval and publication are public to the day; a finer time, next to the
    others, could time the computation (PRIVACY-TESTING.md, "Timing").
    """

    def to_representation(self, value: datetime | date | None) -> str | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            value = timezone.localdate(value, timezone=UTC)
        return super().to_representation(value)


class PublicProjectOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    privacy_unit_description = serializers.CharField()
    published_count = serializers.IntegerField()
    last_published_at = DayField(allow_null=True)


class PublicReleaseOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    mechanism = serializers.ChoiceField(choices=Release.Mechanism.choices)
    epsilon = AmountField()
    delta = AmountField()
    statistic_count = serializers.IntegerField()
    published_at = DayField()


class PublicProjectListApi(PublicApiView):
    @extend_schema(
        operation_id="public_projects_list",
        summary="Projects with published releases",
        auth=[],
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(PublicProjectOutputSerializer), **error_responses(404, 429)},
    )
    def get(self, request: Request) -> Response:
        return paginated_response(
            serializer_class=PublicProjectOutputSerializer,
            queryset=public.project_list_published(),
            request=request,
            view=self,
        )


class PublicReleaseListApi(PublicApiView):
    @extend_schema(
        operation_id="public_releases_list",
        summary="A project's published releases",
        auth=[],
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(PublicReleaseOutputSerializer), **error_responses(404, 429)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = public.project_get_published(slug=slug)
        return paginated_response(
            serializer_class=PublicReleaseOutputSerializer,
            queryset=public.release_list_published(project=project),
            request=request,
            view=self,
        )


class PublicReleaseDetailApi(PublicApiView):
    @extend_schema(
        operation_id="public_releases_retrieve",
        summary="A published release: noisy values and their intervals",
        auth=[],
        parameters=[CONFIDENCE_PARAMETER],
        responses={200: ReleaseDataOutputSerializer, **error_responses(400, 404, 429)},
    )
    def get(self, request: Request, slug: str, release_id: int) -> Response:
        release = public.release_get_published(slug=slug, release_id=release_id)
        confidence = public_options.confidence_parse(value=request.query_params.get("confidence"))
        return Response(release_data(release, confidence=confidence))
