"""Invisible direction controls in text that will be published.

Unicode's bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066
to U+2069) change how the characters after them are displayed: "report\u202eslx.exe"
shows as "reportexe.xls". A category, label or title holding one could make a
published figure read as something else, so such text is refused where it enters
(the declaration of a column, the release builder) with a message naming the
character; nothing is changed silently (a category must still equal the data's
values). The implicit marks (U+200E, U+200F, U+061C) are allowed: they only settle
the direction of neighbouring punctuation, and right-to-left text needs them.
"""

from __future__ import annotations

import unicodedata

#: the explicit embeddings, overrides and isolates (and their terminators)
BIDI_CONTROLS = frozenset(
    [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
)


def bidi_controls_in(text: str) -> list[str]:
    """The controls of BIDI_CONTROLS in `text`, each as 'U+202E RIGHT-TO-LEFT OVERRIDE'."""
    found = sorted({c for c in text if c in BIDI_CONTROLS})
    return [f"U+{ord(c):04X} {unicodedata.name(c)}" for c in found]


def shown(text: str) -> str:
    """`text` with each control written as <U+202E>, safe to quote in a message."""
    return "".join(f"<U+{ord(c):04X}>" if c in BIDI_CONTROLS else c for c in text)
