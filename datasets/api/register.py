"""REST API: register existing Parquet in place (owners with datasets.register_external)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.selectors import project_get_for_member
from datasets import services
from datasets.api.common import OWNER, DatasetDetailOutputSerializer, detail
from dpportal.api import MEMBER_ERRORS, ApiView, error_responses, validated_input


class DatasetRegisterApi(ApiView):
    @extend_schema_serializer(component_name="DatasetRegisterInput")
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        location = serializers.CharField(
            max_length=900,
            help_text="s3://bucket/prefix/ (read with the server's S3 settings) or an "
            "absolute path under DPPORTAL_EXTERNAL_ROOTS: one Parquet file or a folder/prefix "
            "of Parquet files with one schema (integer, floating point and text columns).",
        )

    @extend_schema(
        operation_id="datasets_register",
        summary="Register existing Parquet in place; a worker profiles it (owners with the "
        "register_external permission)",
        description="The location's syntax and the server's allow-list are checked at once (a "
        "refusal creates nothing); a worker then lists the location, checks the schema and "
        "profiles the data. Poll the dataset's status until it is 'ready' (or 'failed', with "
        "the reason), then declare and confirm the unit as for an upload. The data is read-only "
        "for dpportal: it is never written or deleted there, and deleting the dataset leaves it.",
        request=InputSerializer,
        responses={201: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user, roles=OWNER)
        data = validated_input(self.InputSerializer, request)
        dataset = services.dataset_register_external(
            project=project,
            name=data["name"],
            location=data["location"],
            registered_by=request.user,
        )
        return Response(detail(dataset), status=status.HTTP_201_CREATED)
