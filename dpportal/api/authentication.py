"""How API callers prove who they are: a token or a session, malformed keys refused early."""

from __future__ import annotations

import re

from django.conf import settings as django_settings
from drf_spectacular.authentication import SessionScheme, TokenScheme
from rest_framework import exceptions as drf_exceptions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.request import Request

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
