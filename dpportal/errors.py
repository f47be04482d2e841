"""The one family of application errors, mapped to HTTP in one place.

Services raise these; views turn them into messages, the API into JSON
({"error": {"code": ..., "message": ...}}) with the status below.
"""

from __future__ import annotations


class ApplicationError(Exception):
    """An expected failure with a message fit to show the user."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class ValidationFailed(ApplicationError):
    status_code = 400
    code = "invalid"


class PermissionDenied(ApplicationError):
    status_code = 403
    code = "forbidden"


class NotFound(ApplicationError):
    status_code = 404
    code = "not_found"


class InvalidTransition(ApplicationError):
    status_code = 409
    code = "conflict"


class BudgetExceeded(ApplicationError):
    status_code = 409
    code = "budget_exceeded"


class SelfApproval(PermissionDenied):
    code = "self_approval"


class UploadTooLarge(ApplicationError):
    status_code = 413
    code = "too_large"
