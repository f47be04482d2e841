"""Words, numbers and days as the reader's language writes them, for every page.

dpportal.formatting writes numbers one plain way (no Django); here they meet the active
language: its separators (dpportal/formats/<lang>/formats.py) and its words for codes
several parts of the product show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any

from django.utils.formats import date_format, get_format
from django.utils.translation import gettext

from dpportal import formatting


def mechanism_label(code: str) -> str:
    """A release's mechanism family ("laplace", "gaussian") in words."""
    return {
        "laplace": gettext("Laplace mechanism (pure epsilon-differential privacy)"),
        "gaussian": gettext("Gaussian mechanism ((epsilon, delta)-differential privacy)"),
        "above_threshold": gettext("AboveThreshold search (pure epsilon-differential privacy)"),
    }.get(code, code)


def number_style() -> formatting.NumberStyle:
    """The active language's thousands separator and decimal mark (dpportal/formats)."""
    return formatting.NumberStyle(
        group=get_format("THOUSAND_SEPARATOR"), decimal=get_format("DECIMAL_SEPARATOR")
    )


def number_text(text: str) -> str:
    """A number text of dpportal.formatting in the active language's style."""
    return formatting.restyle(text, number_style())


def day(value: str | date | None) -> str:
    """A calendar day ('2026-11-25' or a date) in the active language's DATE_FORMAT."""
    if not value:
        return ""
    if isinstance(value, str):
        try:
            value = date.fromisoformat(value)
        except ValueError:
            return value
    return date_format(value, "DATE_FORMAT")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _interval_planning_text(
    accuracy: Mapping[str, Any], fills: dict[str, str], reach: float
) -> str:
    """The planning text of quantiles released with confidence intervals: how far the
    interval's ends are planned to reach, in the data's units when a guess of n and a
    bounded grid allow it, and the released value's rank error."""
    fills = {**fills, "reach": formatting.rank(reach)}
    units = _number(accuracy.get("interval_value_reach"))
    n = _number(accuracy.get("n_guess"))
    first, last = _number(accuracy.get("grid_first")), _number(accuracy.get("grid_last"))
    if units is None or n is None or first is None or last is None:
        return (
            gettext(
                "interval about ± %(reach)s values around the quantile; rank ± %(ranks)s values"
            )
            % fills
        )
    return gettext(
        "interval about ± %(width)s in the data's units (planning figure: if about %(n)s "
        "values were spread evenly from %(first)s to %(last)s); rank ± %(ranks)s values"
    ) % {
        **fills,
        "width": formatting.halfwidth(units),
        "n": formatting.integer(n),
        "first": formatting.significant(first, 15),
        "last": formatting.significant(last, 15),
    }


def quantile_planning_text(accuracy: Mapping[str, Any], *, simultaneous: bool = False) -> str:
    """A quantile preview's accuracy before the release, in words: the planning figure in
    the data's units with its assumption, the rank error (the guarantee) beside it.

    `accuracy`: the preview's numbers as releases.kinds.quantiles states them (also as
    frozen in a budget request): rank_error, value_error (None without a guess of n),
    their _simultaneous twins, n_guess, grid_first, grid_last. '' when they are missing.
    """
    suffix = "_simultaneous" if simultaneous else ""
    ranks = _number(accuracy.get("rank_error" + suffix))
    if ranks is None:
        return ""
    fills = {"ranks": formatting.rank(ranks)}
    reach = _number(accuracy.get("interval_rank_reach"))
    if reach is not None:
        return _interval_planning_text(accuracy, fills, reach)
    units = _number(accuracy.get("value_error" + suffix))
    n = _number(accuracy.get("n_guess"))
    first, last = _number(accuracy.get("grid_first")), _number(accuracy.get("grid_last"))
    if units is None or n is None or first is None or last is None:
        return (
            gettext("rank ± %(ranks)s values (give a guess of n to see this in the data's units)")
            % fills
        )
    return gettext(
        "about ± %(width)s in the data's units (planning figure: if about %(n)s values were "
        "spread evenly from %(first)s to %(last)s); rank ± %(ranks)s values"
    ) % {
        **fills,
        "width": formatting.halfwidth(units),
        "n": formatting.integer(n),
        "first": formatting.significant(first, 15),
        "last": formatting.significant(last, 15),
    }
