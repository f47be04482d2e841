"""Template filters over dpportal.formatting: `{% load dpformat %}`.

{{ value|budget }}            epsilon / delta, 4 significant digits (below 0.001: 1.429 × 10⁻⁸)
{{ value|epsilon }}           the same, named for the quantity
{{ value|delta }}             the same, named for the quantity
{% budget_exact value %}      the same inside <span title="exact value">
{{ value|noisy:halfwidth }}   a noisy value at the precision its half-width justifies
{{ value|halfwidth }}         2 significant digits
{{ value|scale }}             noise scale / sigma / sensitivity, 3 significant digits
{{ value|exact }}             exact (a bound, an edge), with thousands separators
{{ value|integer }}           whole number with thousands separators
{{ values|exact_list }}       bin edges: each exact and grouped, joined by '; '
{{ value|rank }}              a quantile's rank error: whole records, rounded up
{{ value|percent }}           0.95 -> 95 %
{{ value|day }}               '2026-11-25' -> 2026-11-25 / 2026年11月25日

Numbers come out in the active language's separators (dpportal.words.number_text).
Each filter is one quantity of dpportal.formatting.QUANTITIES.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.translation import pgettext

from dpportal import formatting, words

register = template.Library()


def _safe(func, value: Any, *args: Any) -> str:
    """func's text in the active language's number style; '' for nothing or a non-number."""
    if value is None or value == "":
        return ""
    try:
        return words.number_text(func(value, *args))
    except (TypeError, ValueError):
        return ""


@register.filter
def budget(value: Any) -> str:
    return _safe(formatting.budget, value)


@register.filter
def epsilon(value: Any) -> str:
    return _safe(formatting.epsilon, value)


@register.filter
def delta(value: Any) -> str:
    return _safe(formatting.delta, value)


@register.filter
def noisy(value: Any, halfwidth_value: Any = None) -> str:
    return _safe(formatting.noisy, value, None if halfwidth_value == "" else halfwidth_value)


@register.filter
def halfwidth(value: Any) -> str:
    return _safe(formatting.halfwidth, value)


@register.filter
def scale(value: Any) -> str:
    return _safe(formatting.scale, value)


@register.filter
def exact(value: Any) -> str:
    """A value the owner typed (a bound, an edge), exactly, grouped for people."""
    return _safe(lambda v: formatting.exact(v, group=True), value)


@register.filter
def exact_list(values: Any) -> str:
    """Values the owner typed (bin edges), each exactly and grouped, joined by the
    language's list separator ('0; 20,000; 40,000': a comma would split '20,000'); a value
    that is not a number is shown as it is."""
    return pgettext("list separator", "; ").join(exact(v) or str(v) for v in values or [])


@register.filter
def rank(value: Any) -> str:
    return _safe(formatting.rank, value)


@register.filter
def integer(value: Any) -> str:
    return _safe(formatting.integer, value)


@register.filter
def percent(value: Any) -> str:
    return _safe(formatting.percent, value)


@register.simple_tag
def budget_exact(value: Any) -> str:
    """A budget amount with its exact value in the title attribute."""
    if value is None or value == "":
        return ""
    return format_html(
        '<span class="amount" title="{}">{}</span>',
        formatting.exact(value),
        words.number_text(formatting.budget(value)),
    )


@register.filter
def day(value: Any) -> str:
    """A calendar day ('2026-11-25', a date) as the active language writes it in a sentence."""
    return words.day(value)
