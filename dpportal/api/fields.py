"""Serializer fields shared by the apps' APIs: exact decimals, user references."""

from __future__ import annotations

from decimal import Context, Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

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


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField()
