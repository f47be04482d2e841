"""How a released quantile's accuracy reads, in one place: its name ("Median", "10th
percentile"), the interval where the true quantile lies, the rank error of the released
value, and for older results (drawn without intervals) the rank error in the data's
units as an estimate under a stated assumption.

Before the release a planning figure, "about +-X if the owner's guess of n values were
spread evenly over the grid"; after it, for older results, "about between A and B",
read through the released quantiles themselves as the shape of the data and n (the
owner's planning guess, frozen with the specification, or a released noisy count).
Both are estimates from public values only; the released interval and the rank error
are guarantees.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext

from dpportal import formatting, words
from releases.kinds.base import Cell, frac


def quantile_label(q: str) -> str:
    """'Median', 'Lower quartile', 'Upper quartile', else '10th percentile' ('2.5 percentile')."""
    value = Decimal(q)
    named = {Decimal("0.5"): "Median", Decimal("0.25"): "Lower quartile",
             Decimal("0.75"): "Upper quartile"}  # fmt: skip
    if value in named:
        return named[value]
    pct = (value * 100).normalize()
    if pct != pct.to_integral_value():
        return f"{format(pct, 'f')} percentile"
    number = int(pct)
    ordinal = {1: "st", 2: "nd", 3: "rd"}
    suffix = "th" if 10 <= number % 100 <= 20 else ordinal.get(number % 10, "th")
    return f"{number}{suffix} percentile"


def value_basis(entry: dict[str, Any]) -> tuple[str, int] | None:
    """The n a result's rank error is read in the data's units with: ("noisy_count", N)
    when the result holds a released noisy count of its rows, else ("n_guess", n), the
    owner's planning guess frozen with the specification; None without either."""
    for source in (entry, entry.get("explanation") or {}):
        count = source.get("noisy_count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
            return ("noisy_count", count)
    guess = entry.get("n_guess")
    if isinstance(guess, int) and not isinstance(guess, bool) and guess >= 1:
        return ("n_guess", guess)
    return None


def result_step(entry: dict[str, Any]) -> Fraction:
    """The largest step of a result's grid (stored; older results: the mean step)."""
    if entry.get("grid_step") is not None:
        return frac(entry["grid_step"])
    explanation = entry["explanation"]
    m = int(explanation["candidates"])
    span = frac(explanation["grid_last"]) - frac(explanation["grid_first"])
    return span / (m - 1) if m > 1 else Fraction(0)


def _ranks_text(rank_error: float) -> str:
    return formatting.rank(rank_error)


def planning_text(accuracy: dict[str, Any], *, simultaneous: bool = False) -> str:
    """A quantile preview's accuracy as a person reads it before the release: the
    planning figure in the data's units with its assumption, the rank error beside it
    (the words: dpportal.words, which pages of frozen previews use too)."""
    return words.quantile_planning_text(accuracy, simultaneous=simultaneous)


def about_range_texts(
    low: float | None, high: float | None, *, group: bool = True
) -> tuple[str, str]:
    """A released quantile's data-unit range as two number texts, to the precision its
    width justifies ('' when there is none)."""
    if low is None or high is None:
        return "", ""
    precision = (high - low) / 2
    if precision <= 0:
        return (formatting.significant(low, group=group),
                formatting.significant(high, group=group))  # fmt: skip
    return (formatting.noisy(low, precision, group=group),
            formatting.noisy(high, precision, group=group))  # fmt: skip


def about_texts(cell: Cell) -> tuple[str, str]:
    """A released quantile's data-unit range as two number texts ('' when none)."""
    return about_range_texts(cell.about_low, cell.about_high)


def basis_text(entry: dict[str, Any]) -> str:
    """What a released quantile's accuracy means, in words: the released intervals'
    guarantee, or for older results the assumption their data-unit range is read under."""
    if entry.get("intervals"):
        return interval_words(entry["interval_confidence"])
    return basis_words(value_basis(entry))


def interval_words(confidence: object) -> str:
    """The guarantee of released quantile intervals at their confidence, in words."""
    return gettext(
        "Each interval holds the true quantile with at least %(level)s confidence, whatever "
        "the data: it was released with the quantiles and paid from the same epsilon. The "
        "rank error says how many values at most lie between a released quantile and the "
        "true one."
    ) % {"level": formatting.percent(frac(confidence))}


def basis_words(basis: Any) -> str:
    """basis_text from a value_basis (also as stored in JSON: a two-item list or None)."""
    if basis is not None:
        basis = tuple(basis)
    if basis is None or len(basis) != 2 or not isinstance(basis[1], int):
        return gettext(
            "No guess of the number of values was given, so the accuracy is stated in ranks only."
        )
    if basis[0] == "noisy_count":
        n = gettext("a released noisy count of %(n)s values") % {"n": formatting.integer(basis[1])}
    else:
        n = gettext("about %(n)s values (the owner's planning guess, not a count of the data)") % {
            "n": formatting.integer(basis[1])
        }
    return gettext(
        "In the data's units, an estimate: it assumes %(n)s, spread between the published "
        "quantiles as they suggest, and adds one grid step; the rank error is the guarantee."
    ) % {"n": n}


def result_text(cell: Cell) -> str:
    """A released quantile's accuracy in one line: the released interval (or, for older
    results, the data-unit estimate) and the rank error."""
    ranks = _ranks_text(cell.rank_error or 0)
    if cell.low is not None and cell.high is not None:
        low, high = about_range_texts(cell.low, cell.high)
        return gettext("true value between %(low)s and %(high)s; rank error ± %(ranks)s values") % {
            "low": low,
            "high": high,
            "ranks": ranks,
        }
    low, high = about_texts(cell)
    if not low:
        return gettext("rank error ± %(ranks)s values") % {"ranks": ranks}
    return gettext("about %(low)s to %(high)s; rank error ± %(ranks)s values") % {
        "low": low,
        "high": high,
        "ranks": ranks,
    }
