"""The one family of application errors, mapped to HTTP in one place.

Services raise these; views turn them into messages, the API into JSON
({"error": {"code": ..., "message": ...}}) with the status below.
"""

from __future__ import annotations

from typing import Any, Self

from dpportal import messages


class ApplicationError(Exception):
    """An expected failure with a message fit to show the user."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}

    def reader_message(self) -> str:
        """The message for the person reading it now (already in their language)."""
        return self.message


class RecordedError(ApplicationError):
    """An error whose message may be stored and read later, in another language.

    It carries message records (dpportal.messages): `message` is the English, `records`
    what to store beside it, `reader_message()` the active language. Raise it with the
    msgid marked by gettext_noop and its named parameters:
    `IngestRejected(gettext_noop("The file is larger than %(size)s."), size=...)`.
    """

    def __init__(self, msgid: str, /, **params: Any) -> None:
        self._init(records=[messages.record(msgid, **params)])

    @classmethod
    def of(cls, *records: messages.Record) -> Self:
        """The error of prepared records, one per sentence."""
        error = cls.__new__(cls)
        error._init(records=list(records))
        return error

    def _init(self, *, records: messages.Message) -> None:
        self.records = records
        ApplicationError.__init__(self, messages.english(records))

    def reader_message(self) -> str:
        return messages.translated(self.records)


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
