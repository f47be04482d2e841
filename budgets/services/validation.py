"""Parsing and checking of the values the budget services accept (exact Decimals, texts)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction

from django.utils.translation import gettext, pgettext

from budgets.amounts import EXACT as _EXACT
from budgets.models import DELTA_FIELD, EPSILON_FIELD
from dpportal import messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.pld import basic_cost

COMMENT_MAX_LENGTH = 2000
TITLE_MAX_LENGTH = 200
NOTE_MAX_LENGTH = 500
# The largest epsilon the ledger's columns can hold (exclusive).
EPSILON_LIMIT = Decimal(10) ** (EPSILON_FIELD["max_digits"] - EPSILON_FIELD["decimal_places"])


def parse_epsilon(value: object, *, field: str | None = None) -> Decimal:
    """An epsilon as an exact Decimal: finite and > 0, else ValidationFailed.

    `field` names the value in the messages, in the active language (default: epsilon).
    """
    field = field or pgettext("field", "epsilon")
    number = _parse_decimal(value, field=field)
    if number <= 0:
        raise ValidationFailed(gettext("%(field)s must be greater than 0.") % {"field": field})
    if number >= EPSILON_LIMIT:
        raise ValidationFailed(
            gettext("%(field)s is too large: it must be below %(limit)s.")
            % {"field": field, "limit": f"{EPSILON_LIMIT:f}"}
        )
    return number


def parse_delta(value: object, *, field: str | None = None) -> Decimal:
    """A delta as an exact Decimal in [0, 1), else ValidationFailed (`field`: as parse_epsilon)."""
    field = field or pgettext("field", "delta")
    number = _parse_decimal(value, field=field)
    if not (0 <= number < 1):
        raise ValidationFailed(
            gettext("%(field)s must be at least 0 and below 1.") % {"field": field}
        )
    return number


def _parse_decimal(value: object, *, field: str) -> Decimal:
    if isinstance(value, float):
        value = repr(value)
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValidationFailed(gettext("%(field)s must be a number.") % {"field": field})
    if not number.is_finite():
        raise ValidationFailed(gettext("%(field)s must be a finite number.") % {"field": field})
    return number


def _check_fits_field(value: Decimal, *, field: str, places: int) -> None:
    try:
        fits = value == value.quantize(Decimal(1).scaleb(-places), context=_EXACT)
    except InvalidOperation:  # too many digits to hold at all
        fits = False
    if not fits:
        raise ValidationFailed(
            gettext("%(field)s may have at most %(places)s decimal places.")
            % {"field": field, "places": places}
        )


def _check_comment(comment: object, *, required: bool = False) -> str:
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise ValidationFailed(gettext("The comment must be text."))
    comment = comment.strip()
    if "\x00" in comment:  # PostgreSQL cannot store it in text
        raise ValidationFailed(gettext("The comment may not contain NUL characters."))
    if len(comment) > COMMENT_MAX_LENGTH:
        raise ValidationFailed(
            gettext("The comment is %(length)s characters long; the limit is %(limit)s.")
            % {"length": len(comment), "limit": COMMENT_MAX_LENGTH}
        )
    if required and not comment:
        raise ValidationFailed(gettext("Please give a reason in the comment."))
    return comment


def _check_note(note: object) -> str:
    note = "" if note is None else str(note)
    if "\x00" in note:
        raise ValidationFailed(gettext("A ledger note may not contain NUL characters."))
    if len(note) > NOTE_MAX_LENGTH:
        raise ValidationFailed(
            gettext("A ledger note may be at most %(limit)s characters.")
            % {"limit": NOTE_MAX_LENGTH}
        )
    return note


def parse_cost(
    epsilon: object,
    delta: object,
    *,
    epsilon_field: str | None = None,
    delta_field: str | None = None,
) -> tuple[Decimal, Decimal]:
    """An (epsilon, delta) pair as exact Decimals that fit the ledger's columns."""
    epsilon_field = epsilon_field or pgettext("field", "epsilon")
    delta_field = delta_field or pgettext("field", "delta")
    eps = parse_epsilon(epsilon, field=epsilon_field)
    dlt = parse_delta(delta, field=delta_field)
    _check_fits_field(eps, field=epsilon_field, places=EPSILON_FIELD["decimal_places"])
    _check_fits_field(dlt, field=delta_field, places=DELTA_FIELD["decimal_places"])
    return eps, dlt


def parse_caps(epsilon_cap: object, delta_cap: object) -> tuple[Decimal, Decimal]:
    """A project's (epsilon cap, delta cap), checked like any cost and against the column's size."""
    eps, dlt = parse_cost(
        epsilon_cap,
        delta_cap,
        epsilon_field=pgettext("field", "epsilon cap"),
        delta_field=pgettext("field", "delta cap"),
    )
    if eps >= Decimal(10) ** (EPSILON_FIELD["max_digits"] - EPSILON_FIELD["decimal_places"]):
        raise ValidationFailed(gettext("The epsilon cap is too large."))
    return eps, dlt


def parse_mechanisms(mechanisms: object, *, epsilon: Decimal, delta: Decimal) -> list[dict]:
    """A release's mechanism records, validated and in canonical form (MechanismRecord.to_dict).

    The records are the mechanisms' exact parameters; their basic-composition cost
    may not exceed the request's (epsilon, delta), or the two would describe
    different releases.
    """
    if not isinstance(mechanisms, list):
        raise ValidationFailed(gettext("The request's mechanisms must be a list."))
    try:
        records = merge_records(MechanismRecord.from_dict(m) for m in mechanisms)
    except (PrivacyParameterError, KeyError, TypeError, ValueError) as exc:
        problem = (
            messages.translated(exc.records) if isinstance(exc, PrivacyParameterError) else exc
        )
        raise ValidationFailed(
            gettext("The request's mechanisms are not valid: %(problem)s") % {"problem": problem}
        )
    cost = basic_cost(records)
    if cost.epsilon > Fraction(epsilon) or cost.delta > Fraction(delta):
        raise ValidationFailed(
            gettext("The request's mechanisms cost more than the request asks for.")
        )
    return [r.to_dict() for r in records]
