"""Words, numbers and days as the reader's language writes them, for every page.

dpportal.formatting writes numbers one plain way (no Django); here they meet the active
language: its separators (dpportal/formats/<lang>/formats.py) and its words for codes
several parts of the product show.
"""

from __future__ import annotations

from datetime import date

from django.utils.formats import date_format, get_format
from django.utils.translation import gettext

from dpportal import formatting


def mechanism_label(code: str) -> str:
    """A release's mechanism family ("laplace", "gaussian") in words."""
    return {
        "laplace": gettext("Laplace mechanism (pure epsilon-differential privacy)"),
        "gaussian": gettext("Gaussian mechanism ((epsilon, delta)-differential privacy)"),
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
