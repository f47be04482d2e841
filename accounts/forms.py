from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from accounts.throttling import LoginThrottle

THROTTLED = "throttled"


class LoginThrottleMixin:
    """Before a login form tries the password: the limits of accounts.throttling.

    A wrong password is recorded by axes (the `user_login_failed` signal).
    """

    refusal = None

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        self.refusal = LoginThrottle(request=self.request, username=username).refusal()
        if self.refusal is not None:
            raise ValidationError(self.refusal.message, code=THROTTLED)
        return super().clean()

    @property
    def throttled(self) -> bool:
        return any(error.code == THROTTLED for error in self.errors.as_data().get("__all__", []))


class ThrottledAuthenticationForm(LoginThrottleMixin, AuthenticationForm):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(LoginThrottleMixin, AdminAuthenticationForm):
    """The admin's login form: the same limits (the admin is one more way to guess)."""
