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
        throttle = LoginThrottle(request=self.request, username=username)
        self.refusal = throttle.refusal()
        if self.refusal is not None:
            raise self._refused()
        try:
            return super().clean()
        except ValidationError:
            # the failure that locks the pair says so at once
            self.refusal = throttle.after_failure()
            if self.refusal is not None:
                raise self._refused()
            raise

    def _refused(self) -> ValidationError:
        # Marked for AxesMiddleware, which hands the response to
        # accounts.throttling.lockout_response: the admin's login page answers 429
        # with Retry-After too (ours sets them itself).
        self.request.axes_locked_out = True
        self.request.login_refusal = self.refusal
        return ValidationError(self.refusal.message, code=THROTTLED)

    @property
    def throttled(self) -> bool:
        return any(error.code == THROTTLED for error in self.errors.as_data().get("__all__", []))


class ThrottledAuthenticationForm(LoginThrottleMixin, AuthenticationForm):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(LoginThrottleMixin, AdminAuthenticationForm):
    """The admin's login form: the same limits (the admin is one more way to guess)."""
