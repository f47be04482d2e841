"""Maps the application's access errors to the standard 404 and 403 pages.

HTML views may simply let NotFound / PermissionDenied from selectors propagate;
other ApplicationErrors are for the view to show as a message next to the form.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from dpportal.errors import NotFound, PermissionDenied

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
        return None


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
