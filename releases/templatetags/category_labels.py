"""Template filter for the owner's category labels frozen with a release."""

from __future__ import annotations

from django import template

from dpportal.bilingual import Bilingual

register = template.Library()


@register.filter
def label_text(label) -> str:
    """A label stored as {"en", "zh-hans"} in the reader's language (else the other one);
    empty for none. Plain text: the template escapes it."""
    return Bilingual.from_json(label).show() if label else ""
