"""When an API token stops being accepted: DPPORTAL_TOKEN_LIFETIME after its issue.

Here, below the apps, because the API's authentication (dpportal.api) refuses an
expired token and the accounts app issues and describes tokens: both read the one rule.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

if TYPE_CHECKING:  # the model needs the app registry; the API's plumbing imports this module
    from rest_framework.authtoken.models import Token


def token_expires_at(token: Token) -> datetime:
    """DPPORTAL_TOKEN_LIFETIME after the token was issued."""
    return token.created + settings.DPPORTAL_TOKEN_LIFETIME


def token_is_expired(token: Token) -> bool:
    return timezone.now() >= token_expires_at(token)
