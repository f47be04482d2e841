from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from accounts.throttling import LoginThrottle

THROTTLED = "throttled"


class LoginThrottleMixin:
    """Before a login form tries the password: limits per address, failures per username."""

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        throttle = LoginThrottle(request=self.request, username=username)
        wait = throttle.wait()
        if wait is not None:
            raise ValidationError(
                "Too many login attempts. Try again in %(wait)d second(s).",
                code=THROTTLED,
                params={"wait": wait},
            )
        try:
            return super().clean()
        except ValidationError:
            throttle.failed()
            raise

    @property
    def throttled(self) -> bool:
        return any(error.code == THROTTLED for error in self.errors.as_data().get("__all__", []))


class ThrottledAuthenticationForm(LoginThrottleMixin, AuthenticationForm):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(LoginThrottleMixin, AdminAuthenticationForm):
    """The admin's login form: the same limits (the admin is one more way to guess)."""
