"""Public notes (releases.public.notes message records) in the reader's language."""

from __future__ import annotations

from django import template

from releases.public import notes

register = template.Library()


@register.filter
def note_text(record) -> str:
    """[msgid, params] translated and filled in; plain text (the template escapes it)."""
    return notes.translated(record)
