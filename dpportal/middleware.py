"""Maps the application's errors to the standard 404, 403 and 500 pages.

HTML views may simply let NotFound / PermissionDenied from selectors propagate;
other ApplicationErrors are for the view to show as a message next to the form.
Anything else is unexpected: logged by type and place only (its message might
quote data), answered with the 500 page.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.views import defaults

from dpportal.errors import NotFound, PermissionDenied
from dpportal.logsafe import exception_summary

logger = logging.getLogger(__name__)

#: exceptions Django's handler maps to 4xx pages by itself
_DJANGO_MAPPED = (
    Http404,
    DjangoPermissionDenied,
    BadRequest,
    SuspiciousOperation,
    MultiPartParserError,
)

SESSION_KEY = re.compile(r"[a-z0-9]{8,64}")


class ApplicationErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if request.path.startswith("/api/"):
            return None  # the API's exception handler answers in JSON
        if isinstance(exception, NotFound):
            return defaults.page_not_found(request, exception)
        if isinstance(exception, PermissionDenied):
            return defaults.permission_denied(request, exception)
        if isinstance(exception, _DJANGO_MAPPED) or settings.DEBUG:
            # Django answers these 404/403/400 itself; in DEBUG, its technical page.
            return None
        match = request.resolver_match
        logger.error(
            "unexpected error in %s: %s",
            match.view_name if match else request.path,
            exception_summary(exception),
        )
        return defaults.server_error(request)


class MalformedSessionCookieMiddleware:
    """Drops a session cookie that cannot be a session key before anything looks it up.

    Django's keys are 32 characters of [a-z0-9]; a cookie carrying a NUL byte would
    otherwise reach PostgreSQL (which refuses NUL in text) and turn into a 500.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = settings.SESSION_COOKIE_NAME
        value = request.COOKIES.get(name)
        if value is not None and not SESSION_KEY.fullmatch(value):
            del request.COOKIES[name]
        return self.get_response(request)
