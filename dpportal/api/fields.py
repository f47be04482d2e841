"""Serializer fields shared by the apps' APIs: exact decimals, user references, failure
reasons."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Context, Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dpportal import messages

_EXACT = Context(prec=60)


def decimal_text(value: Decimal | int | str | None) -> str | None:
    """An exact decimal as plain text, no exponent, no trailing zeros ('1E-5' -> '0.00001')."""
    if value is None:
        return None
    number = Decimal(str(value))
    if number == 0:
        return "0"
    return format(number.normalize(_EXACT), "f")


@extend_schema_field(OpenApiTypes.STR)
class AmountField(serializers.Field):
    """A Decimal rendered as an exact string (epsilon, delta, bounds): never a float."""

    def to_representation(self, value: Any) -> str | None:
        return decimal_text(value)


@extend_schema_field(OpenApiTypes.STR)
class FailureReasonField(serializers.Field):
    """Why a dataset or a release failed, in the client's language (English by default):
    the object's (or mapping's) `failure_record` translated now, else its stored English
    `failure_reason`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "Why it failed (empty unless failed), in words.")
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> str:
        if isinstance(value, Mapping):
            record, english = value.get("failure_record"), value.get("failure_reason", "")
        else:
            record, english = value.failure_record, value.failure_reason
        return messages.reader_text(record, fallback=english)


class WarningsField(serializers.ListField):
    """Stored warnings (dpportal.messages records) in the client's language."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.CharField(), read_only=True, **kwargs)

    def to_representation(self, data: Any) -> list[str]:
        return [messages.warning_text(w) for w in data or []]


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField()
