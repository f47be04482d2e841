"""Numbers written with a decimal comma and/or a thousands separator, made plain.

'1.234,5' (decimal comma, '.' grouping) and '1,234.5' (',' grouping) become
'1234.5' before the numeric patterns and the cast apply. Grouping is removed only
where it is regular (one to three leading digits, then groups of exactly three);
a cell with the separator anywhere else ('12.34' with '.' grouping) is made
unreadable, so that it counts as missing and in the unreadable share the owner is
shown, never silently read as another number. With a decimal comma, a cell with
a point that is not the chosen grouping ('1.000') is unreadable for the same reason.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

#: the thousands separators an owner may choose (character -> name)
THOUSANDS = {",": "comma", ".": "period", " ": "space", "'": "apostrophe"}
UNREADABLE = "?"


def grouped_pattern(thousands: str, decimal: str) -> str:
    sep, dec = re.escape(thousands), re.escape(decimal)
    return rf"^\s*[+-]?[0-9]{{1,3}}({sep}[0-9]{{3}})+({dec}[0-9]*)?\s*$"


def plain_numbers(array: pa.Array, *, decimal_comma: bool, thousands: str = "") -> pa.Array:
    """Text cells with the grouping removed and the decimal mark made a point."""
    if thousands:
        decimal = "," if decimal_comma else "."
        grouped = pc.match_substring_regex(array, grouped_pattern(thousands, decimal))
        stray = pc.match_substring(array, thousands)
        stripped = pc.replace_substring(array, thousands, "")
        array = pc.if_else(
            grouped, stripped, pc.if_else(stray, pa.scalar(UNREADABLE, pa.string()), array)
        )
    if decimal_comma:
        if thousands != ".":  # '1.000' with a decimal comma is not one: unreadable
            point = pc.match_substring(array, ".")
            array = pc.if_else(point, pa.scalar(UNREADABLE, pa.string()), array)
        array = pc.replace_substring(array, ",", ".")
    return array
