"""Numbers for people: the one module that turns exact values into text.

Templates (through the `dpformat` template library), API text fields and CSV
downloads call these functions; JSON keeps the exact values. Nothing here
prints a repr, an exponent or a float's binary noise:

- budgets (epsilon, delta) to `BUDGET_DIGITS` significant digits, the exact
  value kept for a title attribute or JSON (`exact`);
- noisy values rounded to a precision that their half-width justifies (two
  significant digits of the half-width fix the last shown decimal place);
  integer results never gain decimals;
- half-widths, noise scales and sigmas to `SCALE_DIGITS` significant digits.

Pure Python (no Django), so the math's neighbours may use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from typing import Any

BUDGET_DIGITS = 4
SCALE_DIGITS = 3
HALFWIDTH_DIGITS = 2
# a value with at least this many integer digits is grouped in thousands ("12,345")
GROUP_FROM = Decimal(10000)
_CONTEXT = Context(prec=80)

Number = Decimal | int | float | str | Fraction


@dataclass(frozen=True)
class NumberStyle:
    """How a language writes numbers: its thousands separator and its decimal mark.

    Every function here writes the plain style (',' and '.'); a page in another
    language passes the text through `restyle` with that language's style (the
    Django side reads it from the active locale's formats: dpportal.words).
    """

    group: str = ","
    decimal: str = "."


PLAIN_STYLE = NumberStyle()


def restyle(text: str, style: NumberStyle) -> str:
    """A number text written by this module, in `style` ('12,345.6' -> '12.345,6')."""
    if style == PLAIN_STYLE or not text:
        return text
    return text.replace(",", "\0").replace(".", style.decimal).replace("\0", style.group)


def to_decimal(value: Number) -> Decimal:
    """An exact Decimal for any number we store (floats through their shortest repr)."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, Fraction):
        return _CONTEXT.divide(Decimal(value.numerator), Decimal(value.denominator))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return Decimal(repr(value))
    text = str(value).strip()
    if "/" in text:  # an exact ratio "p/q" (dpportal.privacy.params.exact_str)
        try:
            return to_decimal(Fraction(text))
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError("not a number") from exc
    try:
        number = Decimal(text)
    except InvalidOperation as exc:
        raise ValueError("not a number") from exc
    if not number.is_finite():
        raise ValueError("not a finite number")
    return number


def _plain(number: Decimal, *, group: bool, strip: bool = True) -> str:
    """Fixed-point text without exponent (and without trailing zeros when `strip`)."""
    if number == 0 and strip:
        return "0"
    text = format(number, "f")
    if strip and "." in text:
        text = text.rstrip("0").rstrip(".")
    if text.startswith("-") and text.strip("-0.") == "":
        text = text[1:]
    if group and abs(number) >= GROUP_FROM:
        sign = "-" if text.startswith("-") else ""
        digits = text.lstrip("-")
        whole, _, frac = digits.partition(".")
        whole = f"{int(whole):,}"
        text = sign + whole + (f".{frac}" if frac else "")
    return text


def round_significant(value: Number, digits: int) -> Decimal:
    """`value` rounded half-even to `digits` significant digits (exact Decimal)."""
    number = to_decimal(value)
    if number == 0:
        return Decimal(0)
    exponent = number.adjusted() - digits + 1
    return number.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_EVEN, context=_CONTEXT)


def exact(value: Number | None) -> str:
    """The exact value as plain text: '0.250' -> '0.25', '1E-7' -> '0.0000001', '1E+1' -> '10'."""
    if value is None:
        return ""
    return _plain(to_decimal(value), group=False)


def significant(value: Number | None, digits: int = SCALE_DIGITS, *, group: bool = True) -> str:
    """`value` to `digits` significant digits, no exponent: 44161725.0674 -> '44,200,000'."""
    if value is None:
        return ""
    return _plain(round_significant(value, digits), group=group)


def budget(value: Number | None, *, group: bool = True) -> str:
    """An epsilon or delta for people: 4 significant digits, '1E-7' -> '0.0000001'."""
    return significant(value, BUDGET_DIGITS, group=group)


def scale(value: Number | None, *, group: bool = True) -> str:
    """A noise scale, sigma or sensitivity: 3 significant digits."""
    return significant(value, SCALE_DIGITS, group=group)


@lru_cache(maxsize=4096)
def halfwidth(value: Number | None, *, group: bool = True) -> str:
    """A half-width of an interval: 2 significant digits ('7144.0356' -> '7,100').
    Memoised: the cells of a statistic share few half-widths."""
    if value is None:
        return ""
    return significant(value, HALFWIDTH_DIGITS, group=group)


def precision_step(halfwidth_value: Number) -> Decimal:
    """The last decimal place a value with this half-width deserves (a power of ten).

    Two significant digits of the half-width: a half-width of 7,144 gives 100,
    2.99 gives 0.1, 0.0042 gives 0.0001.
    """
    hw = to_decimal(halfwidth_value)
    if hw <= 0:
        return Decimal(0)
    return Decimal(1).scaleb(hw.adjusted() - HALFWIDTH_DIGITS + 1)


@lru_cache(maxsize=4096)
def _step_of(halfwidth_value: Number) -> Decimal | None:
    """precision_step of a positive half-width, None for one that is not positive.

    Memoised: the cells of a statistic share few half-widths (one for a histogram), and
    a download formats every cell with them."""
    if to_decimal(halfwidth_value) <= 0:
        return None
    return precision_step(halfwidth_value)


def noisy(
    value: Number | None, halfwidth_value: Number | None = None, *, group: bool = True
) -> str:
    """A noisy value rounded to the precision its half-width justifies.

    Integer values (noisy counts) never gain decimals. Without a half-width the
    value is shown to `SCALE_DIGITS` + 1 significant digits.
    """
    if value is None:
        return ""
    number = to_decimal(value)
    is_integer = number == number.to_integral_value()
    step = None if halfwidth_value is None else _step_of(halfwidth_value)
    if step is None:
        if is_integer:
            return _plain(number.quantize(Decimal(1)), group=group)
        return significant(number, SCALE_DIGITS + 1, group=group)
    if is_integer and step < 1:
        step = Decimal(1)
    if step >= 1:
        units = (number / step).quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=_CONTEXT)
        rounded = units * step
    else:
        rounded = number.quantize(step, rounding=ROUND_HALF_EVEN, context=_CONTEXT)
    # trailing zeros are significant here: 0.000040 at a step of 0.000001
    return _plain(rounded, group=group, strip=False)


def integer(value: Number | None, *, group: bool = True) -> str:
    """A whole number: '119968.000' -> '119,968'."""
    if value is None:
        return ""
    number = to_decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    return _plain(number, group=group)


def percent(fraction: Number | None, digits: int = 3) -> str:
    """A fraction as a percentage: 0.95 -> '95 %'."""
    if fraction is None:
        return ""
    return f"{significant(to_decimal(fraction) * 100, digits, group=False)} %"


def any_number(value: Any) -> str:
    """Best-effort text for a number of unknown role (never a repr)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    try:
        return significant(value, SCALE_DIGITS + 1)
    except (TypeError, ValueError):
        return str(value)
