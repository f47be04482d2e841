"""Limits on logging in, shared by the login page and the API's token endpoint.

Two counters, both DRF throttles kept in the cache (Redis in production):

* per client address, every attempt (rate 'login_address'): one machine cannot try
  passwords for many accounts quickly. The address is the connection's, or the
  one the trusted proxies (DPPORTAL_TRUSTED_PROXIES) put in X-Forwarded-For; a
  client cannot choose it by sending that header.
* per username, failed attempts (rate 'login_username'): many machines cannot try
  passwords for one account quickly. Once the failures fill the window, even the
  right password waits: otherwise a guess that succeeded would be told apart.

While the cache is down the counters read as empty (dpportal/cache.py): logging in
keeps working, unthrottled, rather than failing.
"""

from __future__ import annotations

import hashlib
import math

from django.http import HttpRequest
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle


class _LoginThrottle(SimpleRateThrottle):
    """A DRF throttle keyed by `ident`, its rate read from settings at each request."""

    def __init__(self, ident: str) -> None:
        self.ident = ident
        super().__init__()

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.ident}


class LoginAddressThrottle(_LoginThrottle):
    """Every login attempt from one client address counts."""

    scope = "login_address"


class LoginUsernameThrottle(_LoginThrottle):
    """Only failed attempts for one username count (`record_failure`)."""

    scope = "login_username"

    def throttle_success(self) -> bool:
        return True  # allowed, not counted: only failures are

    def record_failure(self) -> None:
        if self.rate is None:
            return
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


class LoginThrottle:
    """Check before trying a password; `failed()` after a wrong one.

    `wait()` answers None when the attempt may go ahead, else the seconds to wait.
    """

    def __init__(self, *, request: HttpRequest, username: str) -> None:
        self.request = request
        self.address = LoginAddressThrottle(ident=BaseThrottle().get_ident(request))
        # the username is hashed: keys stay short and carry nothing a person typed
        digest = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
        self.username = LoginUsernameThrottle(ident=digest)

    def wait(self) -> int | None:
        waits = [
            throttle.wait()
            for throttle in (self.address, self.username)
            if not throttle.allow_request(self.request, None)
        ]
        if not waits:
            return None
        return max(math.ceil(w) if w else 1 for w in waits)

    def failed(self) -> None:
        self.username.record_failure()
