"""REST API of the public epsilon registry (JSON Schema in budgets/schemas/)."""

from __future__ import annotations

import json
from pathlib import Path

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import selectors
from dpportal.api import (
    PublicApiView,
    error_responses,
    openapi_from_json_schema,
)

# --- public ---------------------------------------------------------------------------


REGISTRY_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "registry.schema.json"


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
