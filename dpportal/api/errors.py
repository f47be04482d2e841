"""The API's one error shape and the exception handler that maps every failure to it.

Errors always answer::

    {"error": {"code": "...", "message": "...", "details": {...}}}

ApplicationError subclasses carry their own status and code; DRF's exceptions and
Django's Http404 / PermissionDenied / RequestDataTooBig map here, in one place.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from django.utils.translation import gettext, ngettext
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.response import Response

from dpportal.api.authentication import TOKEN_EXPIRED
from dpportal.errors import ApplicationError
from dpportal.logsafe import exception_summary

logger = logging.getLogger(__name__)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. 'conflict'.")
    message = serializers.CharField(help_text="A sentence fit to show a person.")
    details = serializers.DictField(help_text="Field errors or other structured context.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


ERROR_DESCRIPTIONS = {
    400: "Invalid input (nothing was changed).",
    401: (
        "Not authenticated: log in, or send 'Authorization: Token <key>' "
        "(code 'token_expired': obtain a new token)."
    ),
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
            status_code=exc.status_code,
            code=exc.code,
            message=exc.reader_message(),
            details=exc.extra,
        )
    if isinstance(exc, Http404):
        return _error(status_code=404, code="not_found", message=gettext("Not found."))
    if isinstance(exc, DjangoPermissionDenied):
        return _error(status_code=403, code="forbidden", message=gettext("You may not do this."))
    if isinstance(exc, RequestDataTooBig):
        return _error(
            status_code=413, code="too_large", message=gettext("The request body is too large.")
        )
    if isinstance(exc, drf_exceptions.ValidationError):
        message = _first_message(exc.detail) or gettext("Invalid input.")
        return _error(
            status_code=400,
            code="invalid",
            message=gettext("Invalid input: %(problem)s") % {"problem": message},
            details={"fields": exc.detail} if isinstance(exc.detail, dict) else exc.detail,
        )
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return _error(
            status_code=401,
            code=TOKEN_EXPIRED if exc.get_codes() == TOKEN_EXPIRED else "not_authenticated",
            message=str(exc.detail),
            headers={"WWW-Authenticate": 'Token realm="api"'},
        )
    if isinstance(exc, drf_exceptions.Throttled):
        wait = math.ceil(exc.wait) if exc.wait is not None else None
        message = gettext("Too many requests.")
        if wait is not None:
            message = ngettext(
                "Too many requests. Try again in %(count)s second.",
                "Too many requests. Try again in %(count)s seconds.",
                wait,
            ) % {"count": wait}
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
    # Unexpected: log the type and where (never the message or a traceback, which
    # might quote data) and answer in shape.
    view = context.get("view")
    logger.error(
        "unexpected error in %s: %s",
        type(view).__name__ if view else "?",
        exception_summary(exc),
    )
    return _error(
        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR,
        code="server_error",
        message=gettext("Something went wrong on our side; nothing was changed."),
    )
