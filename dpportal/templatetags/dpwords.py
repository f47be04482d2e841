"""Fixed sentences and codes of JSON-ready documents, in the reader's language.

Documents shared with an API (the epsilon registry, a release's public data) keep
English sentences marked with gettext_noop where they are written; a page translates
them when it renders, so the API stays English and each page is in its reader's.
"""

from __future__ import annotations

from django import template
from django.utils.translation import gettext

from dpportal import bilingual, buckets, messages, statistic_names, words

register = template.Library()


@register.simple_tag
def translated(msgid: str) -> str:
    """A message marked with gettext_noop where it was defined, translated now."""
    return gettext(msgid) if msgid else ""


@register.filter
def message_text(record, fallback: str = "") -> str:
    """Stored message records (dpportal.messages) in the reader's language; `fallback`
    (the stored English) for a row kept before records were: plain text, escaped by the
    template."""
    return messages.reader_text(record, fallback=fallback)


@register.filter
def warning_text(warning) -> str:
    """One stored warning (a dpportal.messages record, or an older row's English text) in
    the reader's language."""
    return messages.warning_text(warning)


@register.filter
def mechanism_label(code: str) -> str:
    return words.mechanism_label(code)


@register.filter
def inlang(obj, field: str) -> str:
    """Owner text `obj.field` in the reader's language, falling back to the other one
    (dpportal.bilingual); escaped by the template like any text."""
    return bilingual.show(obj, field)


@register.simple_tag
def category_label(labels, code) -> str:
    """A category code's owner label in the reader's language, else the code."""
    return bilingual.category_label(labels, code)


@register.filter
def quantile_planning(accuracy, which: str = "") -> str:
    """A quantile preview's accuracy in words (dpportal.words.quantile_planning_text) from
    its numbers, a live or a frozen preview entry; which="all": for all quantiles at once."""
    if not hasattr(accuracy, "get"):
        return ""
    return words.quantile_planning_text(accuracy, simultaneous=which == "all")


@register.filter
def statistic_label(stat) -> str:
    """A statistic's name in the reader's language: the owner's label, else the name
    dpportal makes from its kind and columns, translated (dpportal.statistic_names)."""
    return statistic_names.label_of(stat)


@register.filter
def release_title(obj) -> str:
    """A release's (or budget request's) title in the reader's language."""
    return statistic_names.title_of(obj)


@register.filter
def i18n_text(texts) -> str:
    """A {"en": ..., "zh-hans": ...} text (the API's and the registry's form) in the
    reader's language, falling back to the other one."""
    return bilingual.json_text(texts)


@register.filter
def bucket_text(mark: str) -> str:
    """dpportal's own cell ("other", "missing") as pages write it: "(Other)", "(Missing)"."""
    return buckets.bucket_text(mark)


@register.filter
def bucket_note(mark: str) -> str:
    """What dpportal's own cell holds, for its tooltip."""
    return buckets.bucket_note(mark)
