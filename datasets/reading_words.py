"""The reading page's names of encodings, separators and quotes, in the reader's language.

The codes (codec names, 'semicolon', '"') are what forms and the API send; these are
only what a person reads beside them."""

from __future__ import annotations

from django.utils.translation import gettext, pgettext

from datasets.ingest.decoding import ENCODINGS


def encoding_label(code: str) -> str:
    """'GB18030 / GBK (Simplified Chinese)': the encoding's own name stays as it is."""
    described = {
        "utf-16": gettext("UTF-16 (with byte-order mark)"),
        "utf-16-le": gettext("UTF-16 little-endian"),
        "utf-16-be": gettext("UTF-16 big-endian"),
        "gb18030": gettext("GB18030 / GBK (Simplified Chinese)"),
        "big5": gettext("Big5 (Traditional Chinese)"),
        "big5hkscs": gettext("Big5-HKSCS (Traditional Chinese, Hong Kong)"),
        "shift_jis": gettext("Shift-JIS (Japanese)"),
        "cp932": gettext("Windows-31J / CP932 (Japanese)"),
        "euc_jp": gettext("EUC-JP (Japanese)"),
        "euc_kr": gettext("EUC-KR (Korean)"),
        "cp1252": gettext("Windows-1252 (Western European)"),
        "latin-1": gettext("Latin-1 / ISO-8859-1 (Western European)"),
        "iso8859-15": gettext("ISO-8859-15 (Western European with euro)"),
        "cp1250": gettext("Windows-1250 (Central European)"),
        "cp1251": gettext("Windows-1251 (Cyrillic)"),
    }
    return described.get(code) or ENCODINGS.get(code, code)


def separator_label(name: str) -> str:
    """A delimiter's or thousands separator's name ('semicolon', 'none')."""
    return {
        "comma": pgettext("separator", "comma"),
        "semicolon": pgettext("separator", "semicolon"),
        "tab": pgettext("separator", "tab"),
        "pipe": pgettext("separator", "pipe"),
        "period": pgettext("separator", "period"),
        "space": pgettext("separator", "space"),
        "apostrophe": pgettext("separator", "apostrophe"),
        "none": pgettext("separator", "none"),
    }.get(name, name)


def quote_label(char: str) -> str:
    return {'"': gettext("double quote"), "'": gettext("single quote")}.get(char, char)
