"""Owner-written text in English and Simplified Chinese, shown in the reader's language.

Every piece of text an owner writes for readers (a project's name and description, a
dataset's name, a column's label, a category's label, a statistic's label and
description, a release's title and description) is stored as two model fields: the
plain field (`name`, `title`, `label`, ...), which holds the English text or whatever
the owner wrote first, and its `_zh` twin, which holds the Simplified Chinese. A page
shows the text in its reader's language and falls back to the other when that one is
empty; the API returns both (`{"en": ..., "zh-hans": ...}`) and never chooses.

Category labels live in one JSON map per column, code -> {"en": ..., "zh-hans": ...}:
`category_label` reads one in the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.translation import get_language

EN = "en"
ZH = "zh-hans"
SUFFIX = "_zh"
# One label (a column's, a category's, a statistic's) is at most this many characters.
LABEL_MAX_CHARS = 200


def reads_chinese(language: str | None = None) -> bool:
    """True when the reader's language (the active one unless given) is Chinese."""
    return (language or get_language() or EN).lower().startswith("zh")


@dataclass(frozen=True)
class Bilingual:
    """One piece of owner text in both languages; either may be empty."""

    en: str = ""
    zh: str = ""

    @classmethod
    def of(cls, obj: object, field: str) -> Bilingual:
        """The text of `obj.field` and `obj.field_zh` (a model or any object)."""
        return cls(
            en=str(getattr(obj, field, "") or ""), zh=str(getattr(obj, field + SUFFIX, "") or "")
        )

    @classmethod
    def from_json(cls, value: object) -> Bilingual:
        """From the API's form ({"en", "zh-hans"}) or a plain string (taken as the plain
        field's text)."""
        if isinstance(value, Mapping):
            return cls(en=str(value.get(EN) or ""), zh=str(value.get(ZH) or ""))
        return cls(en=str(value or ""))

    def show(self, language: str | None = None) -> str:
        """The text in the reader's language, else in the other one."""
        if reads_chinese(language):
            return self.zh or self.en
        return self.en or self.zh

    def as_json(self) -> dict[str, str]:
        return {EN: self.en, ZH: self.zh}

    def __bool__(self) -> bool:
        return bool(self.en or self.zh)

    def __str__(self) -> str:
        return self.show()


def show(obj: object, field: str, language: str | None = None) -> str:
    """`obj.field` in the reader's language (its `_zh` twin for a Chinese reader)."""
    return Bilingual.of(obj, field).show(language)


def json_text(value: object, fallback: str = "", language: str | None = None) -> str:
    """A stored text ({"en", "zh-hans"} or a plain string) in the reader's language, else
    the other one; `fallback` when it holds none."""
    return (Bilingual.from_json(value).show(language) if value else "") or fallback


def category_label(labels: Mapping | None, code: str, language: str | None = None) -> str:
    """The owner's label of a category code in the reader's language; the code itself
    when the owner gave none."""
    return json_text((labels or {}).get(str(code)), str(code), language)
