"""API tokens: issued on a username and password, expiring, revocable by their holder."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token

from dpportal.tokens import token_is_expired


def token_issue(*, user: AbstractBaseUser) -> Token:
    """The user's token: the current one while it is valid, else a new one.

    One token per user (DRF's model); an expired one is replaced, never extended.
    """
    token = Token.objects.filter(user=user).first()
    if token is not None and token_is_expired(token):
        Token.objects.filter(pk=token.pk).delete()
        token = None
    if token is None:
        # get_or_create: two logins at once end with the same new token, not an error
        token, _ = Token.objects.get_or_create(user=user)
    return token


def token_revoke(*, user: AbstractBaseUser) -> bool:
    """Delete the user's token (every client using it gets 401); False when there was none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0
