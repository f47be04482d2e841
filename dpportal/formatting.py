"""Numbers for people: the one module that turns exact values into text.

Templates (through the `dpformat` template library), API text fields and CSV
downloads call these functions; JSON keeps the exact values. Nothing here
prints a repr, a computer's exponent ("1e-08") or a float's binary noise.

Each QUANTITY a person reads has its digits decided once, in `QUANTITIES`
(`Quantity` -> `Digits`), so one quantity reads the same in every table, page,
text field and download:

- budgets (epsilon, delta) to `BUDGET_DIGITS` significant digits, the exact
  value kept for a title attribute or JSON (`exact`); an amount below
  `SCIENTIFIC_BELOW` (in practice a delta) is written "1.429 × 10⁻⁸" for
  people, in every language;
- noisy values rounded to a precision that their half-width justifies (two
  significant digits of the half-width fix the last shown decimal place);
  integer results never gain decimals;
- half-widths to `HALFWIDTH_DIGITS`, noise scales and sigmas to `SCALE_DIGITS`
  significant digits; a quantile's rank error in whole records, rounded up.

Text for people groups every whole part of 1000 or more in thousands ("8,000",
"12,357"; the reader's separator: dpportal.words). Text for programs (`group=False`,
used by the CSV download) is a plain machine number: no separator, no "× 10ⁿ",
the same rounding.

Pure Python (no Django), so the math's neighbours may use it too.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from typing import Any

BUDGET_DIGITS = 4
SCALE_DIGITS = 3
HALFWIDTH_DIGITS = 2
# a whole part of at least this is grouped in thousands ("8,000", "12,345")
GROUP_FROM = Decimal(1000)
# a budget amount below this (a delta, in practice) is written "1.429 × 10⁻⁸" for people
SCIENTIFIC_BELOW = Decimal("0.001")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_CONTEXT = Context(prec=80)

Number = Decimal | int | float | str | Fraction


class Quantity(enum.Enum):
    """What a number IS, which decides how many digits a person sees (`QUANTITIES`)."""

    EPSILON = "epsilon"  # a privacy loss epsilon (a cap, a cost, a spend, a share)
    DELTA = "delta"  # a privacy loss delta
    VALUE = "value"  # a noisy value: its half-width fixes its last decimal place
    HALFWIDTH = "halfwidth"  # the half-width of an interval (± 110)
    SCALE = "scale"  # a noise scale b, a sigma, a sensitivity, a rho
    COUNT = "count"  # a whole number of things: rows, cells, candidates, pages
    RANK = "rank"  # a quantile's rank error in records: whole, rounded up
    SHARE = "share"  # a fraction of a whole, shown as a percentage
    BOUND = "bound"  # a public bound, bin edge or grid value the owner typed: exact


@dataclass(frozen=True)
class Digits:
    """How one quantity is written.

    significant: significant digits kept (None: not rounded so; for VALUE, the
    digits of the half-width that fix the last decimal place). whole: a rounding
    mode to a whole number (COUNT, RANK). scientific_below: a magnitude below which
    people read "m × 10⁻ⁿ" (programs keep the plain decimal).
    """

    significant: int | None
    whole: str | None = None
    scientific_below: Decimal | None = None


QUANTITIES: dict[Quantity, Digits] = {
    Quantity.EPSILON: Digits(BUDGET_DIGITS, scientific_below=SCIENTIFIC_BELOW),
    Quantity.DELTA: Digits(BUDGET_DIGITS, scientific_below=SCIENTIFIC_BELOW),
    Quantity.VALUE: Digits(HALFWIDTH_DIGITS),
    Quantity.HALFWIDTH: Digits(HALFWIDTH_DIGITS),
    Quantity.SCALE: Digits(SCALE_DIGITS),
    Quantity.COUNT: Digits(None, whole=ROUND_HALF_EVEN),
    Quantity.RANK: Digits(None, whole=ROUND_CEILING),
    Quantity.SHARE: Digits(3),
    Quantity.BOUND: Digits(None),
}

#: between a mantissa and its power of ten; no-break spaces keep "1.4 × 10⁻⁸" on one line
TIMES = "\u00a0×\u00a0"


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


def exact(value: Number | None, *, group: bool = False) -> str:
    """The exact value as plain text: '0.250' -> '0.25', '1E-7' -> '0.0000001', '1E+1' -> '10'.

    Without separators by default (JSON, title attributes); `group=True` for people
    ('250000' -> '250,000': a bound, an edge or a grid value the owner typed)."""
    if value is None:
        return ""
    return _plain(to_decimal(value), group=group)


def exact_fraction(value: Number | None, *, group: bool = True) -> str:
    """An exact parameter for people, however many digits it takes: its finite decimal
    when it has one ('0.0009765625', '1,500'), else its ratio ('10/3'), each part grouped.

    The exact form of what `scale` rounds to 3 significant digits: a noise scale or sigma
    stored as an exact ratio (dpportal.privacy.params.exact_str), for a printed record."""
    if value is None:
        return ""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, float):
        value = to_decimal(value)
    try:
        number = Fraction(value if isinstance(value, int | Fraction | Decimal) else str(value))
    except (ValueError, ZeroDivisionError, InvalidOperation) as exc:
        raise ValueError("not a number") from exc
    rest, places = number.denominator, 0
    for prime in (2, 5):
        count = 0
        while rest % prime == 0:
            rest //= prime
            count += 1
        places = max(places, count)
    if rest == 1:  # a finite decimal: scale to whole units of 10**-places, exactly
        units = number.numerator * (10**places // number.denominator)
        return _plain(Decimal(units).scaleb(-places), group=group)
    numerator, denominator = Decimal(number.numerator), Decimal(number.denominator)
    return f"{_plain(numerator, group=group)}/{_plain(denominator, group=group)}"


def significant(value: Number | None, digits: int = SCALE_DIGITS, *, group: bool = True) -> str:
    """`value` to `digits` significant digits, no exponent: 44161725.0674 -> '44,200,000'."""
    if value is None:
        return ""
    return _plain(round_significant(value, digits), group=group)


def scientific(value: Number, digits: int) -> str:
    """`value` to `digits` significant digits as people write a small number: '1.429 × 10⁻⁸'."""
    rounded = round_significant(value, digits)
    if rounded == 0:
        return "0"
    power = rounded.adjusted()
    mantissa = _plain(rounded.scaleb(-power), group=False)
    return f"{mantissa}{TIMES}10{str(power).translate(_SUPERSCRIPT)}"


def _amount(value: Number | None, quantity: Quantity, *, group: bool) -> str:
    """An epsilon or a delta as its `QUANTITIES` entry says (people: `group`; programs: not)."""
    if value is None:
        return ""
    digits = QUANTITIES[quantity]
    rounded = round_significant(value, digits.significant or BUDGET_DIGITS)
    below = digits.scientific_below
    if group and below is not None and 0 < abs(rounded) < below:
        return scientific(rounded, digits.significant or BUDGET_DIGITS)
    return _plain(rounded, group=group)


def budget(value: Number | None, *, group: bool = True) -> str:
    """An epsilon or delta for people: 4 significant digits, '1E-7' -> '1 × 10⁻⁷'.

    `group=False` (a CSV cell): the plain machine number, '1E-7' -> '0.0000001'."""
    return _amount(value, Quantity.EPSILON, group=group)


def epsilon(value: Number | None, *, group: bool = True) -> str:
    """A privacy loss epsilon (Quantity.EPSILON)."""
    return _amount(value, Quantity.EPSILON, group=group)


def delta(value: Number | None, *, group: bool = True) -> str:
    """A privacy loss delta (Quantity.DELTA): '0.000000014285714' -> '1.429 × 10⁻⁸'."""
    return _amount(value, Quantity.DELTA, group=group)


def scale(value: Number | None, *, group: bool = True) -> str:
    """A noise scale, sigma or sensitivity: 3 significant digits."""
    return significant(value, QUANTITIES[Quantity.SCALE].significant or SCALE_DIGITS, group=group)


@lru_cache(maxsize=4096)
def halfwidth(value: Number | None, *, group: bool = True) -> str:
    """A half-width of an interval: 2 significant digits ('7144.0356' -> '7,100').
    Memoised: the cells of a statistic share few half-widths."""
    if value is None:
        return ""
    digits = QUANTITIES[Quantity.HALFWIDTH].significant or HALFWIDTH_DIGITS
    return significant(value, digits, group=group)


def precision_step(halfwidth_value: Number) -> Decimal:
    """The last decimal place a value with this half-width deserves (a power of ten).

    Two significant digits of the half-width: a half-width of 7,144 gives 100,
    2.99 gives 0.1, 0.0042 gives 0.0001.
    """
    hw = to_decimal(halfwidth_value)
    if hw <= 0:
        return Decimal(0)
    digits = QUANTITIES[Quantity.VALUE].significant or HALFWIDTH_DIGITS
    return Decimal(1).scaleb(hw.adjusted() - digits + 1)


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
    return _whole(value, Quantity.COUNT, group=group)


def rank(value: Number | None, *, group: bool = True) -> str:
    """A quantile's rank error in whole records, rounded up (never below the bound):
    '996.2' -> '997'."""
    return _whole(value, Quantity.RANK, group=group)


def _whole(value: Number | None, quantity: Quantity, *, group: bool) -> str:
    if value is None:
        return ""
    mode = QUANTITIES[quantity].whole or ROUND_HALF_EVEN
    number = to_decimal(value).quantize(Decimal(1), rounding=mode, context=_CONTEXT)
    return _plain(number, group=group)


def percent(fraction: Number | None, digits: int | None = None) -> str:
    """A fraction as a percentage: 0.95 -> '95 %'."""
    if fraction is None:
        return ""
    digits = digits or QUANTITIES[Quantity.SHARE].significant or 3
    return f"{significant(to_decimal(fraction) * 100, digits, group=False)} %"


def text(
    value: Number | None,
    quantity: Quantity,
    *,
    halfwidth_value: Number | None = None,
    group: bool = True,
) -> str:
    """`value` written as the quantity it is (`QUANTITIES`); '' for None.

    For people by default; `group=False` gives the plain machine number a CSV cell
    holds, rounded the same way. A VALUE needs its half-width (`halfwidth_value`)."""
    if value is None:
        return ""
    writers = {
        Quantity.EPSILON: epsilon,
        Quantity.DELTA: delta,
        Quantity.HALFWIDTH: halfwidth,
        Quantity.SCALE: scale,
        Quantity.COUNT: integer,
        Quantity.RANK: rank,
    }
    if quantity is Quantity.VALUE:
        return noisy(value, halfwidth_value, group=group)
    if quantity is Quantity.SHARE:
        return percent(value)
    if quantity is Quantity.BOUND:
        return exact(value, group=group)
    return writers[quantity](value, group=group)


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
