"""What every API view shares: the one exception handler, pagination, throttling, base class.

Errors always answer in one JSON shape::

    {"error": {"code": "...", "message": "...", "details": {...}}}

ApplicationError subclasses carry their own status and code; DRF's exceptions and
Django's Http404 / PermissionDenied / RequestDataTooBig map here, in one place.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from decimal import Context, Decimal
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.authentication import SessionScheme, TokenScheme
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from dpportal.errors import ApplicationError

logger = logging.getLogger(__name__)

_EXACT = Context(prec=60)


# --- errors ---------------------------------------------------------------------------


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. 'conflict'.")
    message = serializers.CharField(help_text="A sentence fit to show a person.")
    details = serializers.DictField(help_text="Field errors or other structured context.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


ERROR_DESCRIPTIONS = {
    400: "Invalid input (nothing was changed).",
    401: "Not authenticated: log in, or send 'Authorization: Token <key>'.",
    403: "Authenticated, but lacking the role this needs in the project.",
    404: "No such object, or not visible to you.",
    409: "The object's state does not allow this (e.g. approving twice).",
    413: "The upload is too large.",
    429: "Too many requests: slow down (see the Retry-After header).",
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """The documented error responses of an operation, all in the one error shape."""
    return {
        code: OpenApiResponse(response=ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in codes
    }


#: errors any authenticated endpoint may answer
MEMBER_ERRORS = (400, 401, 403, 404, 429)


def _error(
    *, status_code: int, code: str, message: str, details: Any = None, headers: dict | None = None
) -> Response:
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        details = {"errors": details}
    body = {"error": {"code": code, "message": message, "details": details}}
    return Response(body, status=status_code, headers=headers)


def _first_message(detail: Any) -> str:
    """The first human message inside DRF's nested error detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            text = _first_message(value)
            if text:
                return text if key in ("non_field_errors", "detail") else f"{key}: {text}"
        return ""
    if isinstance(detail, list):
        for value in detail:
            text = _first_message(value)
            if text:
                return text
        return ""
    return str(detail)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Map every failure of an API view to the one error shape (never a bare 500 page)."""
    if isinstance(exc, ApplicationError):
        return _error(
            status_code=exc.status_code, code=exc.code, message=exc.message, details=exc.extra
        )
    if isinstance(exc, Http404):
        return _error(status_code=404, code="not_found", message="Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        return _error(status_code=403, code="forbidden", message="You may not do this.")
    if isinstance(exc, RequestDataTooBig):
        return _error(status_code=413, code="too_large", message="The request body is too large.")
    if isinstance(exc, drf_exceptions.ValidationError):
        message = _first_message(exc.detail) or "Invalid input."
        return _error(
            status_code=400,
            code="invalid",
            message=f"Invalid input: {message}",
            details={"fields": exc.detail} if isinstance(exc.detail, dict) else exc.detail,
        )
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return _error(
            status_code=401,
            code="not_authenticated",
            message=str(exc.detail),
            headers={"WWW-Authenticate": 'Token realm="api"'},
        )
    if isinstance(exc, drf_exceptions.Throttled):
        wait = int(exc.wait) if exc.wait is not None else None
        message = "Too many requests."
        if wait is not None:
            message += f" Try again in {wait} second{'s' if wait != 1 else ''}."
        return _error(
            status_code=429,
            code="throttled",
            message=message,
            details={"retry_after": wait} if wait is not None else {},
            headers={"Retry-After": str(wait)} if wait is not None else None,
        )
    if isinstance(exc, drf_exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        return _error(status_code=exc.status_code, code=code, message=_first_message(exc.detail))
    # Unexpected: log where (not the message, which might quote data) and answer in shape.
    view = context.get("view")
    logger.error(
        "unexpected %s in %s", type(exc).__name__, type(view).__name__ if view else "?",
        exc_info=exc,
    )  # fmt: skip
    return _error(
        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR,
        code="server_error",
        message="Something went wrong on our side; nothing was changed.",
    )


# --- input -----------------------------------------------------------------------------


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


# --- access ------------------------------------------------------------------------------


class PublicAnonThrottle(AnonRateThrottle):
    """Anonymous clients of the public endpoints, at the rate settings name for 'anon'.

    The rate is read when a request comes (not when DRF was imported), so settings
    overrides take effect.
    """

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


_TOKEN_KEY = re.compile(r"[0-9a-f]{40}")
_SESSION_KEY = re.compile(r"[0-9a-z]{8,64}")


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing malformed keys before they reach the database.

    (PostgreSQL rejects text with NUL bytes with an error, not a miss.)
    """

    def authenticate_credentials(self, key: str):
        if not _TOKEN_KEY.fullmatch(key):
            raise drf_exceptions.AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)


class ApiSessionAuthentication(SessionAuthentication):
    """DRF's session authentication; a malformed session cookie counts as no session."""

    def authenticate(self, request: Request):
        key = request._request.COOKIES.get(django_settings.SESSION_COOKIE_NAME)
        if key is not None and not _SESSION_KEY.fullmatch(key):
            return None
        return super().authenticate(request)


class ApiTokenScheme(TokenScheme):
    target_class = ApiTokenAuthentication


class ApiSessionScheme(SessionScheme):
    target_class = ApiSessionAuthentication


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


# --- fields ------------------------------------------------------------------------------


def decimal_text(value: Decimal | int | str | None) -> str | None:
    """An exact decimal as plain text, no exponent, no trailing zeros ('1E-5' -> '0.00001')."""
    if value is None:
        return None
    number = Decimal(str(value))
    if number == 0:
        return "0"
    return format(number.normalize(_EXACT), "f")


@extend_schema_field(OpenApiTypes.STR)
class AmountField(serializers.Field):
    """A Decimal rendered as an exact string (epsilon, delta, bounds): never a float."""

    def to_representation(self, value: Any) -> str | None:
        return decimal_text(value)


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField()


# --- JSON Schema documents in the OpenAPI schema ---------------------------------------


def openapi_from_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) document rewritten in the OpenAPI 3.0 dialect.

    Local `$ref`s into `$defs` are inlined; `const` becomes a one-value `enum`;
    `[T, "null"]` types and `oneOf [X, null]` become `nullable`; `$schema`, `$id`
    and `$defs` are dropped. Enough for the repository's schemas, not a general converter.
    """
    definitions = schema.get("$defs", {})

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return convert(definitions[node["$ref"].removeprefix("#/$defs/")])
        options = node.get("oneOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (other,) = [option for option in options if option != {"type": "null"}]
            rest = {k: v for k, v in node.items() if k != "oneOf"}
            return {**convert(other), **convert(rest), "nullable": True}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$schema", "$id", "$defs"):
                continue
            if key == "const":
                out["enum"] = [value]
            elif key == "type" and isinstance(value, list):
                types = [t for t in value if t != "null"]
                out["type"] = types[0] if len(types) == 1 else types
                if "null" in value:
                    out["nullable"] = True
            elif key == "properties":
                out[key] = {name: convert(sub) for name, sub in value.items()}
            else:
                out[key] = convert(value)
        if "enum" in out and "type" not in out:
            kinds = {_JSON_TYPES.get(type(value)) for value in out["enum"]}
            if len(kinds) == 1 and None not in kinds:
                out["type"] = kinds.pop()
        return out

    return convert(schema)


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


# --- authentication ----------------------------------------------------------------------


class TokenObtainApi(PublicApiView):
    """Exchange a username and password for the user's API token (created once, then reused)."""

    @extend_schema_serializer(component_name="TokenObtainInput")
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    @extend_schema_serializer(component_name="TokenObtainOutput")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="Send it as 'Authorization: Token <token>'.")
        username = serializers.CharField()

    @extend_schema(
        operation_id="auth_token_create",
        summary="Obtain an API token with a username and password",
        auth=[],
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 429)},
    )
    def post(self, request: Request) -> Response:
        from django.contrib.auth import authenticate
        from rest_framework.authtoken.models import Token

        data = validated_input(self.InputSerializer, request)
        user = authenticate(
            request=request._request,
            username=data["username"],
            password=data["password"],
        )
        if user is None or not user.is_active:
            raise drf_exceptions.AuthenticationFailed(
                "Unable to log in with this username and password."
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})
