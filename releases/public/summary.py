"""The release at a glance: one line per statistic with its key number, above the charts.

Read from the same per-statistic context the charts and tables use
(releases.public.page.statistic_context), so the summary states exactly the numbers
below it: a single value with its half-width (or its interval), the answer of a
most-common-category statistic, the published quantiles, or for a table of many cells
how many there are and which has the largest published value. Every number is a public,
noisy value already formatted by dpportal.formatting; nothing here computes one.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext, pgettext

from dpportal import formatting, words
from releases.public.page import fill

# Up to this many quantiles are listed in the summary; beyond, it points to the table.
LIST_QUANTILES = 5


def _too_few() -> SafeString:
    return format_html("{}", gettext("too few records to estimate"))


def _single(row: dict[str, Any]) -> SafeString:
    if row.get("halfwidth"):
        return format_html(
            gettext("{value} (± {halfwidth})"),
            value=row["value"],
            halfwidth=fill("halfwidth", row["halfwidth"]),
        )
    return format_html(
        gettext("{value} (between {lower} and {upper})"),
        value=row["value"],
        lower=fill("lower", row["lower"]),
        upper=fill("upper", row["upper"]),
    )


def _quantiles(stat: dict[str, Any]) -> SafeString:
    rows = stat["quantile_rows"]
    if len(rows) > LIST_QUANTILES:
        return format_html(
            gettext("{n} quantiles, in the table of this statistic"),
            n=words.number_text(formatting.integer(len(rows))),
        )
    return format_html_join(
        pgettext("list separator", "; "),
        "{}: {}",
        ((row["cell"], row["value"]) for row in rows),
    )


def _largest(stat: dict[str, Any]) -> SafeString:
    """How many values, and the largest published one among the cells the page shows a
    value for (a cell too uninformative to estimate is never "the largest")."""
    values = stat.get("values") or []
    rows = stat["rows"]
    hidden = stat.get("uninformative_cells") or [False] * len(values)
    shown = [i for i in range(len(values)) if not hidden[i]] if len(hidden) == len(values) else []
    if not shown or len(values) != len(rows):
        return format_html(
            gettext("{n} values"), n=words.number_text(formatting.integer(len(rows)))
        )
    top = max(shown, key=lambda i: values[i])
    row = rows[top]
    cell = f"{row['row_label']} / {row['col_label']}" if "row_label" in row else str(row["cell"])
    return format_html(
        gettext("{n} values; the largest published: {cell}, {value}"),
        n=words.number_text(formatting.integer(len(rows))),
        cell=cell,
        value=row["value"],
    )


def headline(stat: dict[str, Any]) -> SafeString:
    """The key number of one statistic, as the page states it at the reader's options."""
    if stat["kind"] == "argmax":
        return format_html(
            gettext("the most common: {label}"), label=(stat.get("argmax") or {}).get("label", "")
        )
    if stat["layout"] == "quantiles":
        return _quantiles(stat)
    if len(stat["rows"]) == 1:
        if (stat.get("uninformative_cells") or [False])[0]:
            return _too_few()
        return _single(stat["rows"][0])
    return _largest(stat)


def summary_rows(statistics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per statistic of the page, in its order: label, anchor, key number."""
    return [
        {"position": stat["position"], "label": stat["label"], "headline": headline(stat)}
        for stat in statistics
    ]
