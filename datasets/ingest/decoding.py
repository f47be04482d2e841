"""Text encodings: the ones an upload may be in, and the streaming check-and-transcode.

Every byte of the file is decoded in the chosen encoding as it streams through
(`Transcoder`); the output is UTF-8 for pyarrow. A byte that does not decode
refuses the file with the number of the line it is on. UTF-8 passes through
unchanged (checked, not copied), its byte-order mark dropped.
"""

from __future__ import annotations

import codecs

from django.utils.translation import gettext_noop

from datasets.ingest.common import IngestRejected
from dpportal.formatting import integer
from dpportal.messages import record

#: the encodings an owner may choose (codec name -> label); detection maps onto these
ENCODINGS = {
    "utf-8": "UTF-8",
    "utf-16": "UTF-16 (with byte-order mark)",
    "utf-16-le": "UTF-16 little-endian",
    "utf-16-be": "UTF-16 big-endian",
    "gb18030": "GB18030 / GBK (Simplified Chinese)",
    "big5": "Big5 (Traditional Chinese)",
    "big5hkscs": "Big5-HKSCS (Traditional Chinese, Hong Kong)",
    "shift_jis": "Shift-JIS (Japanese)",
    "cp932": "Windows-31J / CP932 (Japanese)",
    "euc_jp": "EUC-JP (Japanese)",
    "euc_kr": "EUC-KR (Korean)",
    "cp1252": "Windows-1252 (Western European)",
    "latin-1": "Latin-1 / ISO-8859-1 (Western European)",
    "iso8859-15": "ISO-8859-15 (Western European with euro)",
    "cp1250": "Windows-1250 (Central European)",
    "cp1251": "Windows-1251 (Cyrillic)",
    "mac-roman": "Mac Roman",
}

#: what a detector may call an encoding -> the choice above that reads it (supersets)
ALIASES = {
    "ascii": "utf-8",
    "utf-8-sig": "utf-8",
    "utf-16-le": "utf-16-le",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "hz": "gb18030",
    "cp936": "gb18030",
    "cp950": "big5",
    "iso8859-1": "latin-1",
    "windows-1252": "cp1252",
}


def normalize_encoding(name: str) -> str | None:
    """The allowed codec name for `name` (any spelling Python knows), or None."""
    try:
        codec = codecs.lookup(name.strip()).name
    except (LookupError, ValueError):
        return None
    codec = codecs.lookup(ALIASES.get(codec, codec)).name
    for allowed in ENCODINGS:
        if codecs.lookup(allowed).name == codec:
            return allowed
    return None


def encoding_label(name: str) -> str:
    return ENCODINGS.get(name, name)


class Transcoder:
    """Decodes chunks strictly, counting lines; returns UTF-8 bytes."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.passthrough = codecs.lookup(encoding).name == "utf-8"
        self._decoder = codecs.getincrementaldecoder(encoding)("strict")
        self._lines = 0  # line breaks decoded so far
        self._first = True

    def feed(self, data: bytes, *, final: bool = False) -> bytes:
        try:
            if self.passthrough:
                if not data.isascii() or self._decoder.getstate()[0] or final:
                    self._decoder.decode(data, final)
                self._lines += data.count(b"\n")
                out = data
                if self._first and out.startswith(codecs.BOM_UTF8):
                    out = out[len(codecs.BOM_UTF8) :]
            else:
                text = self._decoder.decode(data, final)
                self._lines += text.count("\n")
                if self._first and text.startswith("\ufeff"):
                    text = text[1:]
                out = text.encode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._refusal(exc)
        if data:
            self._first = False
        return out

    def _refusal(self, exc: UnicodeDecodeError) -> IngestRejected:
        before = bytes(exc.object[: exc.start]).decode(self.encoding, errors="replace")
        line = self._lines + before.count("\n") + 1
        return IngestRejected(
            gettext_noop(
                "Line %(line)s of the file is not valid %(encoding)s text (a byte there cannot "
                "be decoded); nothing was stored. Upload the file again and choose its "
                "encoding, or save it as UTF-8."
            ),
            line=integer(line),
            # the label is a word of its own, translated with the sentence
            encoding=record(encoding_label(self.encoding)),
        )
