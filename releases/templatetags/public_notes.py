"""Public notes (releases.public.notes message records) in the reader's language."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext

register = template.Library()


@register.filter
def note_text(record) -> str:
    """[msgid, params] translated and filled in; plain text (the template escapes it)."""
    msgid, params = record
    text = gettext(msgid)
    return text % params if params else text


@register.simple_tag
def translated(msgid: str) -> str:
    """A message marked with gettext_noop where it was defined, translated now."""
    return gettext(msgid) if msgid else ""
