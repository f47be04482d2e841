"""Message records: a sentence kept as its English msgid and named parameters.

Text that is stored and read later (a dataset's or a release's failure reason) cannot be
translated where it is made: that is often a Celery worker, and its language is not the
reader's. So it is kept as records, [msgid, {name: value}] (JSON as it is), the msgid
marked with gettext_noop where it is written so that makemessages extracts it, and put
into words when it is read: `english` for logs, the stored text and the API's default,
`translated` in the active language where a page or an API response is rendered.

A message is a list of records, one per sentence; sentences are translated one by one and
joined (never fragments of one sentence). A parameter may itself be a record: a word with
its own translation (an encoding's label), put into words with the sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.utils.translation import gettext

#: [msgid, {placeholder: value}]
Record = list
#: one record per sentence
Message = list[Record]

#: sentence ends after which no space is written (Chinese and Japanese full stops)
_FULL_WIDTH_ENDS = ("。", "！", "？", "）", "”")


def record(msgid: str, **params: Any) -> Record:
    return [msgid, params]


def plural(n: int, one: str, many: str) -> str:
    """The English msgid for `n` (both forms marked with gettext_noop where written), as
    releases.public.notes does: enough for Chinese (one form); a language with other
    plural rules would need records that carry both forms and `n` for ngettext."""
    return one if n == 1 else many


def _is_record(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], dict)
    )


def _words(record: Record, translate: Callable[[str], str]) -> str:
    msgid, params = record
    text = translate(msgid)
    if not params:
        return text
    return text % {
        name: _words(value, translate) if _is_record(value) else value
        for name, value in params.items()
    }


def _same(msgid: str) -> str:
    return msgid


def _join(sentences: Iterable[str]) -> str:
    text = ""
    for sentence in sentences:
        if text and not text.endswith(_FULL_WIDTH_ENDS):
            text += " "
        text += sentence
    return text


def is_message(value: Any) -> bool:
    """Is `value` (e.g. read from a JSONField) a list of [str, dict] records?"""
    return isinstance(value, list) and bool(value) and all(_is_record(r) for r in value)


def english(message: Message) -> str:
    return _join(_words(r, _same) for r in message)


def translated(message: Message) -> str:
    """The message in the active language (gettext now), filled in."""
    return _join(_words(r, gettext) for r in message)


def warning_text(warning: Any, *, translate: bool = True) -> str:
    """One stored warning: a record (translated, or English with translate=False), or the
    English text an older row kept."""
    if _is_record(warning):
        return _words(warning, gettext if translate else _same)
    return str(warning)


def reader_text(message: Any, *, fallback: str = "") -> str:
    """A stored message in the reader's language; `fallback` (the stored English text)
    when there is no record (rows saved before records were kept)."""
    return translated(message) if is_message(message) else fallback
