"""Maps the application's access errors to the standard 404 and 403 pages.

HTML views may simply let NotFound / PermissionDenied from selectors propagate;
other ApplicationErrors are for the view to show as a message next to the form.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from dpportal.errors import NotFound, PermissionDenied


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
