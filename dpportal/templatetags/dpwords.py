"""Fixed sentences and codes of JSON-ready documents, in the reader's language.

Documents shared with an API (the epsilon registry, a release's public data) keep
English sentences marked with gettext_noop where they are written; a page translates
them when it renders, so the API stays English and each page is in its reader's.
"""

from __future__ import annotations

from django import template
from django.utils.translation import gettext

from dpportal import words

register = template.Library()


@register.simple_tag
def translated(msgid: str) -> str:
    """A message marked with gettext_noop where it was defined, translated now."""
    return gettext(msgid) if msgid else ""


@register.filter
def mechanism_label(code: str) -> str:
    return words.mechanism_label(code)
