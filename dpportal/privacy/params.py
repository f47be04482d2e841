"""Exact parameter handling: conversion to Fraction, validation, exact strings.

Every privacy parameter enters the math through this module. Numbers are kept as
`fractions.Fraction` so that a noise scale, a cost or a bound is the exact value
that was reviewed: a float never decides a privacy outcome. Accepted inputs are
Fraction, Decimal, int, str (e.g. "0.1", "1/3", "1e-6") and float (converted
exactly, so 0.1 becomes 3602879701896397/2**55; prefer decimal strings).
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Literal, TypeAlias

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop, record

__all__ = [
    "Delta",
    "Epsilon",
    "Exact",
    "Mechanism",
    "to_fraction",
    "check_epsilon",
    "check_delta",
    "check_confidence",
    "check_bounds",
    "check_contribution_bound",
    "check_cells",
    "check_mechanism",
    "check_categories",
    "exact_str",
    "round_up_sig",
    "round_down_sig",
    "decimal_exponent",
]

Exact: TypeAlias = Fraction | Decimal | int | str | float
Mechanism: TypeAlias = Literal["laplace", "gaussian"]


def to_fraction(value: object, name: str) -> Fraction:
    """Convert `value` exactly to a Fraction, refusing NaN, infinities and non-numbers."""
    if isinstance(value, bool):
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be a number, got a boolean %(value)s"),
            name=name,
            value=repr(value),
        )
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise PrivacyParameterError(
                gettext_noop("%(name)s must be finite, got %(value)s"),
                name=name,
                value=repr(value),
            )
        return Fraction(value)
    if isinstance(value, float | numbers.Real) and not isinstance(value, numbers.Rational):
        as_float = float(value)
        if not math.isfinite(as_float):
            raise PrivacyParameterError(
                gettext_noop("%(name)s must be finite, got %(value)s"),
                name=name,
                value=repr(value),
            )
        return Fraction(as_float)
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise PrivacyParameterError(
                gettext_noop("%(name)s must be a finite number, got %(value)s"),
                name=name,
                value=repr(value),
            )
    raise PrivacyParameterError(
        gettext_noop("%(name)s must be a number, got %(type)s"),
        name=name,
        type=type(value).__name__,
    )


class Epsilon(Fraction):
    """A privacy loss epsilon, validated once: exact, finite and > 0.

    Parse an epsilon into an Epsilon where it enters the math (a statistic's kind
    does, from the frozen specification); every `check_epsilon` after that returns
    it as it is instead of converting and checking it again. Arithmetic on it gives
    plain Fractions (a share of epsilon is checked where it is used).
    """

    __slots__ = ()

    def __new__(cls, value: object = 1, name: str = "epsilon") -> Epsilon:
        if type(value) is cls:
            return value  # type: ignore[return-value]
        # a Fraction (a share of an Epsilon) is exact already: only its sign is checked
        eps = value if isinstance(value, Fraction) else to_fraction(value, name)
        if eps <= 0:
            if name == "epsilon":  # the common case, worded so that a translation can say ε
                raise PrivacyParameterError(
                    gettext_noop("epsilon must be > 0, got %(value)s"), value=repr(value)
                )
            raise PrivacyParameterError(
                gettext_noop("%(name)s must be > 0, got %(value)s"), name=name, value=repr(value)
            )
        return super().__new__(cls, eps.numerator, eps.denominator)

    def __reduce__(self):
        return (type(self), (str(self),))

    def __copy__(self) -> Epsilon:
        return self

    def __deepcopy__(self, memo: object) -> Epsilon:
        return self


class Delta(Fraction):
    """A privacy parameter delta, validated once: exact and in [0, 1).

    Whether a mechanism admits it (the Gaussian needs delta > 0, the Laplace delta
    = 0) is checked by `check_delta` each time, against that mechanism.
    """

    __slots__ = ()

    def __new__(cls, value: object = 0) -> Delta:
        if type(value) is cls:
            return value  # type: ignore[return-value]
        d = to_fraction(value, "delta")
        if not 0 <= d < 1:
            raise PrivacyParameterError(
                gettext_noop("delta must be in [0, 1), got %(delta)s"), delta=repr(value)
            )
        return super().__new__(cls, d.numerator, d.denominator)

    def __reduce__(self):
        return (type(self), (str(self),))

    def __copy__(self) -> Delta:
        return self

    def __deepcopy__(self, memo: object) -> Delta:
        return self


def check_epsilon(epsilon: object, name: str = "epsilon") -> Fraction:
    """Return epsilon as an Epsilon (a Fraction); it must be finite and > 0. An Epsilon
    is returned as it is: it was validated when it was made."""
    return Epsilon(epsilon, name)


def check_delta(delta: object, *, mechanism: str | None = None) -> Fraction:
    """Return delta as a Delta (a Fraction) in [0, 1).

    The Gaussian mechanism needs delta > 0 (it is not pure DP); the Laplace
    mechanism is pure epsilon-DP and refuses a nonzero delta, so that no cost is
    charged or stated that the mechanism does not use.
    """
    d = Delta(delta)
    if mechanism == "gaussian" and d == 0:
        raise PrivacyParameterError(gettext_noop("delta must be > 0 for the Gaussian mechanism"))
    if mechanism == "laplace" and d != 0:
        raise PrivacyParameterError(
            gettext_noop(
                "the Laplace mechanism is pure epsilon-DP: delta must be 0, got %(delta)s"
            ),
            delta=repr(delta),
        )
    return d


def check_confidence(confidence: object) -> Fraction:
    """Return the confidence level 1 - beta as a Fraction in (0, 1)."""
    c = to_fraction(confidence, "confidence")
    if not 0 < c < 1:
        raise PrivacyParameterError(
            gettext_noop("confidence must be in (0, 1), got %(confidence)s"),
            confidence=repr(confidence),
        )
    return c


def check_bounds(lower: object, upper: object) -> tuple[Fraction, Fraction]:
    """Return the public clipping bounds (lower, upper) as Fractions, lower <= upper."""
    lo = to_fraction(lower, "lower")
    hi = to_fraction(upper, "upper")
    if lo > hi:
        raise PrivacyParameterError(
            gettext_noop("lower must be <= upper, got lower=%(lower)s upper=%(upper)s"),
            lower=repr(lower),
            upper=repr(upper),
        )
    return lo, hi


def _check_positive_int(value: object, name: str, what: str) -> int:
    """`what` is a msgid (marked where written) naming what the number counts."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, Fraction | Decimal | float | str):
            frac = to_fraction(value, name)
            if frac.denominator == 1 and frac >= 1:
                return int(frac)
        raise PrivacyParameterError(
            gettext_noop("%(name)s (%(what)s) must be an integer >= 1, got %(value)s"),
            name=name,
            what=record(what),
            value=repr(value),
        )
    if int(value) < 1:
        raise PrivacyParameterError(
            gettext_noop("%(name)s (%(what)s) must be >= 1, got %(value)s"),
            name=name,
            what=record(what),
            value=repr(value),
        )
    return int(value)


def check_contribution_bound(contribution_bound: object) -> int:
    """Return L, the maximum number of rows kept per person: an integer >= 1."""
    return _check_positive_int(
        contribution_bound, "contribution_bound", gettext_noop("rows per person L")
    )


def check_cells(k: object, name: str = "k") -> int:
    """Return a number of cells (or of simultaneous intervals): an integer >= 1."""
    return _check_positive_int(k, name, gettext_noop("number of cells"))


def check_mechanism(mechanism: object) -> Mechanism:
    """Return "laplace" or "gaussian"; anything else is refused."""
    if mechanism == "laplace":
        return "laplace"
    if mechanism == "gaussian":
        return "gaussian"
    raise PrivacyParameterError(
        gettext_noop('mechanism must be "laplace" or "gaussian", got %(mechanism)s'),
        mechanism=repr(mechanism),
    )


def check_categories(categories: object) -> int:
    """Return the number of declared categories; an empty list is refused."""
    try:
        n = len(categories)  # type: ignore[arg-type]
    except TypeError:
        raise PrivacyParameterError(
            gettext_noop("categories must be a sequence of declared categories")
        )
    if n < 1:
        raise PrivacyParameterError(gettext_noop("the category list must not be empty"))
    return n


def exact_str(value: Fraction | int) -> str:
    """An exact, parseable string: a finite decimal when one exists, else "p/q".

    `Fraction(exact_str(x)) == x` always holds. Denominators of the form
    2**a * 5**b have a finite decimal expansion (e.g. granularity 2**-10 is
    "0.0009765625"); others (e.g. scale 10/3) are written as a ratio.
    """
    x = Fraction(value)
    if x.denominator == 1:
        return str(x.numerator)
    d = x.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    digits = max(twos, fives)
    scaled = abs(x.numerator) * (10**digits // x.denominator)
    sign = "-" if x < 0 else ""
    whole, frac = divmod(scaled, 10**digits)
    return f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")


def decimal_exponent(x: Fraction) -> int:
    """The integer e with 10**e <= x < 10**(e + 1), for x > 0."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def round_up_sig(x: Fraction, digits: int) -> Fraction:
    """The smallest number >= x with at most `digits` significant decimal digits (x > 0)."""
    unit = Fraction(10) ** (decimal_exponent(x) - digits + 1)
    return -(-x // unit) * unit


def round_down_sig(x: Fraction, digits: int) -> Fraction:
    """The largest number <= x with at most `digits` significant decimal digits (x > 0)."""
    unit = Fraction(10) ** (decimal_exponent(x) - digits + 1)
    return (x // unit) * unit
