"""Throttles: how often a client may call, counted in the cache."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle


class PublicAnonThrottle(AnonRateThrottle):
    """Anonymous clients of the public endpoints, at the rate settings name for 'anon'.

    The rate is read when a request comes (not when DRF was imported), so settings
    overrides take effect.
    """

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
