"""Exact arithmetic on budget amounts (Decimal with room to spare, never float).

`fmt` writes an amount exactly (for JSON, the frozen specification and its
hash); `text` writes it for a person, in a message (dpportal.formatting).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Context, Decimal

from dpportal import formatting

# 60 significant digits: sums of NUMERIC(24,12) / NUMERIC(30,24) amounts stay exact.
EXACT = Context(prec=60)
ZERO = Decimal(0)


def add(a: Decimal, b: Decimal) -> Decimal:
    return EXACT.add(a, b)


def sub(a: Decimal, b: Decimal) -> Decimal:
    return EXACT.subtract(a, b)


def total(values: Iterable[Decimal]) -> Decimal:
    result = ZERO
    for value in values:
        result = EXACT.add(result, value)
    return result


def fmt(value: Decimal) -> str:
    """A Decimal without trailing zeros or exponent: '0.250' -> '0.25', '1E-5' -> '0.00001'."""
    if value == 0:
        return "0"
    text = format(value.normalize(EXACT), "f")
    return text


def text(value: Decimal) -> str:
    """An amount for a message: formatting.budget, plus the exact value when rounding hid it.

    '0.5' -> '0.5'; '0.333333333334' -> '0.3333 (exactly 0.333333333334)', so a
    message comparing two amounts never shows two equal-looking numbers.
    """
    readable = formatting.budget(value)
    exact = formatting.exact(value)
    if formatting.round_significant(value, formatting.BUDGET_DIGITS) == formatting.to_decimal(
        value
    ):
        return readable
    return f"{readable} (exactly {exact})"
