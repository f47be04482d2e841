"""The base API views and what every view shares: input, pagination, parsing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dpportal.api.authentication import ApiSessionAuthentication, ApiTokenAuthentication
from dpportal.api.throttling import PublicAnonThrottle


def validated_input(
    serializer_class: type[serializers.Serializer], request: Request
) -> dict[str, Any]:
    """The request body checked by `serializer_class` (invalid: 400, and nothing changes)."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


# --- pagination -------------------------------------------------------------------------


class ApiPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


PAGINATION_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, description="Page number (from 1)."),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="Items per page (at most 200)."),
]

_paginated_cache: dict[type, serializers.Serializer] = {}


def paginated(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    """The schema of a page of `serializer_class` items (count, next, previous, results)."""
    if serializer_class not in _paginated_cache:
        name = serializer_class.__name__.removesuffix("Serializer")
        _paginated_cache[serializer_class] = inline_serializer(
            name=f"Paginated{name}",
            fields={
                "count": serializers.IntegerField(),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "results": serializer_class(many=True),
            },
        )
    return _paginated_cache[serializer_class]


def paginated_response(
    *,
    serializer_class: type[serializers.Serializer],
    queryset: QuerySet | Iterable,
    request: Request,
    view: APIView,
) -> Response:
    paginator = ApiPagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


class JSONBodyParser(JSONParser):
    """DRF's JSON parser, with nesting too deep for the decoder answered 400, not 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise drf_exceptions.ParseError("JSON parse error: the document is nested too deeply.")


class ApiView(APIView):
    """Every API view: token or session authentication, JSON in, authenticated users only.

    Token comes first so that an anonymous request is answered 401 with a
    WWW-Authenticate header (session authentication alone would make it 403).
    """

    authentication_classes = [ApiTokenAuthentication, ApiSessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONBodyParser]


class PublicApiView(ApiView):
    """Anonymous read-only endpoints: anyone may call them; anonymous callers are throttled."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]
