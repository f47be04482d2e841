"""How API callers prove who they are: a token (until it expires) or a session.

Malformed keys are refused before they reach the database.
"""

from __future__ import annotations

import re

from django.conf import settings as django_settings
from drf_spectacular.authentication import SessionScheme, TokenScheme
from rest_framework import exceptions as drf_exceptions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.request import Request

from dpportal.tokens import token_is_expired

_TOKEN_KEY = re.compile(r"[0-9a-f]{40}")
_SESSION_KEY = re.compile(r"[0-9a-z]{8,64}")


TOKEN_EXPIRED = "token_expired"  # noqa: S105 - an error code, not a secret


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, with tokens that expire, and malformed keys refused.

    (Malformed keys never reach the database: PostgreSQL rejects text with NUL bytes
    with an error, not a miss.)
    """

    def authenticate_credentials(self, key: str):
        if not _TOKEN_KEY.fullmatch(key):
            raise drf_exceptions.AuthenticationFailed("Invalid token.")
        user, token = super().authenticate_credentials(key)
        if token_is_expired(token):
            raise drf_exceptions.AuthenticationFailed(
                "The token has expired: obtain a new one at /api/v1/auth/token/.",
                code=TOKEN_EXPIRED,
            )
        return user, token


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
