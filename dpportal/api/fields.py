"""Serializer fields shared by the apps' APIs: exact decimals, user references, failure
reasons, owner text in both languages."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Context, Decimal
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from dpportal import messages
from dpportal.bilingual import EN, SUFFIX, ZH, Bilingual

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


def _bilingual_schema(max_length: int | None = None) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string"}
    if max_length:
        text["maxLength"] = max_length
    return {"type": "object", "properties": {EN: text, ZH: text}, "additionalProperties": False}


class BilingualTextField(serializers.Field):
    """Owner text in English and Simplified Chinese (dpportal.bilingual): a string (the
    plain text) or {"en": ..., "zh-hans": ...}; either may be empty. Validated as
    {"en", "zh-hans"}."""

    default_error_messages = {
        "invalid": _('Give a string or an object {{"en": ..., "zh-hans": ...}} of strings.'),
        "max_length": _("Each text may be at most {max_length} characters."),
    }

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        self.max_length = max_length
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        if isinstance(data, str):
            data = {EN: data}
        if not isinstance(data, Mapping) or set(data) - {EN, ZH}:
            self.fail("invalid")
        texts = {key: data.get(key) or "" for key in (EN, ZH)}
        if not all(isinstance(t, str) for t in texts.values()):
            self.fail("invalid")
        if any(len(t) > self.max_length for t in texts.values()):
            self.fail("max_length", max_length=self.max_length)
        for text in texts.values():  # as a CharField refuses them (PostgreSQL stores neither)
            ProhibitNullCharactersValidator()(text)
            ProhibitSurrogateCharactersValidator()(text)
        return texts

    def to_representation(self, value: Any) -> dict[str, str]:
        return Bilingual.from_json(value).as_json()


extend_schema_field(
    {"oneOf": [{"type": "string"}, _bilingual_schema()], "description": "A string or both."}
)(BilingualTextField)


@extend_schema_field(_bilingual_schema())
class BilingualOutputField(serializers.Field):
    """An object's (or mapping's) `field` and its `field`_zh twin as
    {"en": ..., "zh-hans": ...}; the plain field stays beside it as it was."""

    def __init__(self, field: str, **kwargs: Any) -> None:
        self.text_field = field
        kwargs.setdefault("help_text", f"The {field} in English and Simplified Chinese.")
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, str]:
        if isinstance(value, Mapping):
            return Bilingual(
                en=str(value.get(self.text_field) or ""),
                zh=str(value.get(self.text_field + SUFFIX) or ""),
            ).as_json()
        return Bilingual.of(value, self.text_field).as_json()
