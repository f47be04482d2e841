"""Limits on logging in, shared by the login page, the admin's login and the API token.

Failed logins are rows in the database (django-axes' AccessAttempt, written by its
`user_login_failed` receiver on every failed `authenticate`), so the limits hold
while Redis is down and survive its restart. Before a password is tried:

* the pair locked: DPPORTAL_LOGIN_FAILURE_LIMIT failures for one username from one
  client address refuse that pair (even the right password) for
  DPPORTAL_LOGIN_LOCKOUT_MINUTES after its last failure; axes decides it
  (AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]).
* the username slowed: once one username has DPPORTAL_LOGIN_SLOW_AFTER failures
  from any addresses in that window, each next attempt for it waits
  DPPORTAL_LOGIN_SLOW_FIRST_SECONDS after its last failure, doubling with each
  further failure up to DPPORTAL_LOGIN_SLOW_MAX_SECONDS. Many machines cannot try
  passwords for one account quickly, and nobody can lock another person out: from
  their own address they wait seconds, not an hour.
* the address slowed: the same rule for one address's failures over all usernames,
  from DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER on (one machine trying many accounts).
* every attempt from one address (rate 'login_address', a DRF throttle in the
  cache): a fast extra check while Redis is up, off while it is down.

Refusing before the password is tried means a refused attempt never tells whether
its password was right. The client address is the connection's, or the one the
trusted proxies (DPPORTAL_TRUSTED_PROXIES) put in X-Forwarded-For
(`client_address`): a client cannot choose it by sending that header.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, Q, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

#: exponents past this make no difference (the delay is capped) and keep numbers small
_MAX_DOUBLINGS = 30


def client_address(request: HttpRequest) -> str | None:
    """The client's address as the throttles see it (AXES_CLIENT_IP_CALLABLE).

    DRF's rule (NUM_PROXIES = DPPORTAL_TRUSTED_PROXIES): X-Forwarded-For is read only
    through trusted proxies, the N-th entry from the right. Anything that is not an
    IP address falls back to the connection's address, so nothing a client writes
    reaches the database's address column.
    """
    for candidate in (BaseThrottle().get_ident(request), request.META.get("REMOTE_ADDR")):
        try:
            return str(ipaddress.ip_address((candidate or "").strip()))
        except ValueError:
            continue
    return None


class LoginAddressThrottle(SimpleRateThrottle):
    """Every login attempt from one client address counts (the cache; best effort)."""

    scope = "login_address"

    def __init__(self, ident: str) -> None:
        self.ident = ident
        super().__init__()

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.ident}


@dataclass(frozen=True)
class LoginRefusal:
    """Why a login attempt is refused before its password is tried, and for how long."""

    seconds: int
    message: str


@dataclass(frozen=True)
class _Failures:
    count: int
    last: datetime | None


def _failures(*, since: datetime, **match: str) -> _Failures:
    """Failed logins recorded since `since` for the rows matching `match`."""
    row = AccessAttempt.objects.filter(Q(attempt_time__gte=since), **match).aggregate(
        count=Sum("failures_since_start"), last=Max("attempt_time")
    )
    return _Failures(count=row["count"] or 0, last=row["last"])


def slow_down_seconds(*, failures: int, slow_after: int) -> float:
    """How long after the last failure the next attempt waits (0: not slowed)."""
    if failures < slow_after:
        return 0.0
    doublings = min(failures - slow_after, _MAX_DOUBLINGS)
    return float(
        min(
            settings.DPPORTAL_LOGIN_SLOW_FIRST_SECONDS * 2**doublings,
            settings.DPPORTAL_LOGIN_SLOW_MAX_SECONDS,
        )
    )


def _remaining(*, last: datetime | None, after: timedelta, now: datetime) -> int:
    if last is None:
        return 0
    seconds = (last + after - now).total_seconds()
    return max(0, math.ceil(seconds))


class LoginThrottle:
    """Check before trying a password (`refusal()`); failures are recorded by axes.

    `refusal()` answers None when the attempt may go ahead, else how long to wait
    and a message that names the limit.
    """

    def __init__(self, *, request: HttpRequest, username: str) -> None:
        self.request = request
        self.username = username
        self.address = client_address(request)
        self.address_rate = LoginAddressThrottle(ident=self.address or "")

    def refusal(self) -> LoginRefusal | None:
        # AXES_ENABLED = False (a test's setting) turns the database limits off
        enabled = getattr(settings, "AXES_ENABLED", True)
        refusals = self._database_refusals() if enabled else []
        if not refusals and not self.address_rate.allow_request(self.request, None):
            rate_wait = self.address_rate.wait()
            wait = max(1, math.ceil(rate_wait)) if rate_wait else 1
            refusals.append(
                LoginRefusal(
                    seconds=wait,
                    message=ngettext(
                        "Too many login attempts from your address (at most %(rate)s). "
                        "Try again in %(wait)d second.",
                        "Too many login attempts from your address (at most %(rate)s). "
                        "Try again in %(wait)d seconds.",
                        wait,
                    )
                    % {"rate": self.address_rate.rate, "wait": wait},
                )
            )
        if not refusals:
            return None
        return max(refusals, key=lambda refusal: refusal.seconds)

    def _database_refusals(self) -> list[LoginRefusal]:
        now = timezone.now()
        window = timedelta(minutes=settings.DPPORTAL_LOGIN_LOCKOUT_MINUTES)
        since = now - window
        refusals: list[LoginRefusal] = []

        credentials = {"username": self.username}
        if self.address and not AxesProxyHandler.is_allowed(self.request, credentials):
            pair = _failures(since=since, username=self.username, ip_address=self.address)
            wait = max(1, _remaining(last=pair.last, after=window, now=now))
            minutes = math.ceil(wait / 60)
            refusals.append(
                LoginRefusal(
                    seconds=wait,
                    message=ngettext(
                        "Too many login attempts: %(limit)d failed logins for this username "
                        "from your address (the limit is %(limit)d). Logging in as this user "
                        "from this address is refused for %(minutes)d more minute.",
                        "Too many login attempts: %(limit)d failed logins for this username "
                        "from your address (the limit is %(limit)d). Logging in as this user "
                        "from this address is refused for %(minutes)d more minutes.",
                        minutes,
                    )
                    % {"limit": settings.DPPORTAL_LOGIN_FAILURE_LIMIT, "minutes": minutes},
                )
            )

        # slowed, never locked: one username's failures from any address, and one
        # address's failures over any usernames
        counted = [
            (
                gettext("for this username"),
                _failures(since=since, username=self.username),
                settings.DPPORTAL_LOGIN_SLOW_AFTER,
            )
        ]
        if self.address:
            counted.append(
                (
                    gettext("from your address"),
                    _failures(since=since, ip_address=self.address),
                    settings.DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER,
                )
            )
        for whose, seen, slow_after in counted:
            delay = slow_down_seconds(failures=seen.count, slow_after=slow_after)
            wait = _remaining(last=seen.last, after=timedelta(seconds=delay), now=now)
            if wait:
                message = _slowed_message(
                    whose=whose, failures=seen.count, slow_after=slow_after, wait=wait
                )
                refusals.append(LoginRefusal(seconds=wait, message=message))

        return refusals

    def after_failure(self) -> LoginRefusal | None:
        """After a wrong password: the lock's refusal when this failure locked the pair.

        Axes marks the request (`axes_locked_out`) when the failure it just recorded
        reached DPPORTAL_LOGIN_FAILURE_LIMIT, or when its backend refused a pair
        that got locked meanwhile.
        """
        if not getattr(self.request, "axes_locked_out", False):
            return None
        return self.refusal()

    def succeeded(self) -> None:
        """Clear this pair's failures after a right password where no session starts.

        A session login does it through axes' `user_logged_in` receiver
        (AXES_RESET_ON_SUCCESS); the API token endpoint logs nobody in. Other
        addresses' failures for the username stay.
        """
        if self.address:
            AxesProxyHandler.reset_attempts(ip_address=self.address, username=self.username)


def _slowed_message(*, whose: str, failures: int, slow_after: int, wait: int) -> str:
    return ngettext(
        "Too many login attempts: %(failures)d failed logins %(whose)s in the last "
        "%(window)d minutes. From %(slow_after)d on, each attempt waits longer "
        "(at most %(max)d seconds). Try again in %(wait)d second.",
        "Too many login attempts: %(failures)d failed logins %(whose)s in the last "
        "%(window)d minutes. From %(slow_after)d on, each attempt waits longer "
        "(at most %(max)d seconds). Try again in %(wait)d seconds.",
        wait,
    ) % {
        "failures": failures,
        "whose": whose,
        "window": settings.DPPORTAL_LOGIN_LOCKOUT_MINUTES,
        "slow_after": slow_after,
        "max": settings.DPPORTAL_LOGIN_SLOW_MAX_SECONDS,
        "wait": wait,
    }


def refusal_body(refusal: LoginRefusal) -> dict:
    """The API's error shape for a refused login (dpportal.api.errors)."""
    return {
        "error": {
            "code": "throttled",
            "message": refusal.message,
            "details": {"retry_after": refusal.seconds},
        }
    }


def lockout_response(
    request: HttpRequest, response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the answer to a request axes marked as locked out.

    The login page and the token endpoint have answered 429 with the lock's message
    already: that answer stays. Any other path (the admin's login page shows the
    message in its form) gets status 429 and Retry-After; a path with no page of
    its own gets the message as JSON under /api/, else as plain text.
    """
    if response is not None and response.status_code == 429:
        return response
    refusal = getattr(request, "login_refusal", None)
    if refusal is None:
        username = str((credentials or {}).get("username") or "")
        refusal = LoginThrottle(request=request, username=username).refusal()
    if refusal is None:  # unlocked meanwhile (its failures expired or were reset)
        return response if response is not None else HttpResponse(status=429)
    headers = {"Retry-After": str(refusal.seconds)}
    if request.path.startswith("/api/"):
        return JsonResponse(refusal_body(refusal), status=429, headers=headers)
    if response is not None and response.get("Content-Type", "").startswith("text/html"):
        response.status_code = 429
        response["Retry-After"] = headers["Retry-After"]
        return response
    return HttpResponse(
        refusal.message, status=429, headers=headers, content_type="text/plain; charset=utf-8"
    )
