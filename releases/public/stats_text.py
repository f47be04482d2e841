"""Plain-language sentences of grouped statistics, quantiles and spread on the public page.

Numbers are the `text` strings releases.public.stats_data formatted with
dpportal.formatting; each is wrapped in a span the page's script refills for
another confidence level (data-fill="cell-lower" etc. with data-index).
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext, pgettext

from releases.kinds import quantile_words
from releases.public import notes, page_words
from releases.public.options import CONFIDENCE_LABELS, ViewOptions
from releases.public.stats_data import handles  # noqa: F401 (the page asks stats_text)


def captions() -> dict[str, str]:
    """Under each chart of a new kind, by layout, in the reader's language."""
    return {
        "grouped_bars": gettext(
            "Grouped bars: one bar per value of the second grouping column within each group of "
            "the first; error bars: the interval of each group at the chosen confidence level."
        ),
        "quantiles": gettext(
            "Each point is a published quantile; its error bar, where drawn, is the confidence "
            "interval released with it (where the true quantile lies); the table gives each "
            "one's rank error."
        ),
    }


def quantile_rows(stat: dict[str, Any], *, options: ViewOptions) -> list[dict[str, Any]]:
    """The quantiles' table: name, value, rank error (and percentile band when known)."""
    if stat["kind"] != "quantiles":
        return []
    band = stat["quantile_chart"]["bands"][options.confidence][options.intervals]
    values = stat["text"][options.confidence]["value"]
    return [
        {"index": i, "cell": cell, "value": values[i], "rank_error": band["ranks_text"][i],
         "band_low": band["low_text"][i], "band_high": band["high_text"][i],
         "about_low": band["about_low_text"][i], "about_high": band["about_high_text"][i],
         "ci_low": band["ci_low_text"][i], "ci_high": band["ci_high_text"][i]}
        for i, cell in enumerate(stat["cells"])
    ]  # fmt: skip


def quantile_basis(stat: dict[str, Any]) -> str:
    """Under the quantiles' table: the assumption their data-unit range is read under."""
    if stat["kind"] != "quantiles":
        return ""
    if stat.get("interval_confidence"):
        return quantile_words.interval_words(stat["interval_confidence"])
    return quantile_words.basis_words(stat.get("about_basis"))


def _fill(name: str, value: str, index: int) -> SafeString:
    return format_html('<span data-fill="{}" data-index="{}">{}</span>', name, index, value)


def _confidence(options: ViewOptions) -> SafeString:
    return format_html(
        '<span data-fill="confidence">{}</span>', CONFIDENCE_LABELS[options.confidence]
    )


# Up to this many groups the sentence lists each group's interval; beyond, the table does.
LIST_GROUPS = 8


def _per_group(stat: dict[str, Any], options: ViewOptions) -> SafeString:
    text = stat["text"][options.confidence]
    if len(stat["cells"]) > LIST_GROUPS:
        return format_html(
            gettext("each of the {n} groups with its interval in the table below"),
            n=len(stat["cells"]),
        )
    hidden = stat.get("uninformative_cells") or [False] * len(stat["cells"])
    return format_html_join(
        pgettext("list separator", "; "),
        "{}",
        (
            (format_html(gettext("{}: {}"), cell, notes.too_few()),) if hidden[i] else
            (format_html(
                gettext("{}: {} (between {} and {})"), cell,
                _fill("cell-value", text["value"][i], i),
                _fill("cell-lower", text["per_cell"]["lower"][i], i),
                _fill("cell-upper", text["per_cell"]["upper"][i], i),
            ),)
            for i, cell in enumerate(stat["cells"])
        ),
    )  # fmt: skip


def _noise_words(stat: dict[str, Any]) -> str:
    noise = stat.get("noise") or {}
    return f"{noise.get('name', '')} ({noise.get('parameter_text', '')})"


def _groups_text(stat: dict[str, Any]) -> str:
    return page_words.names_text(stat.get("group_columns") or [], empty=gettext("group"))


def pairs_text(cells: list[str], values: list[str]) -> str:
    """'North 1,200; South 877' for a chart's text alternative."""
    return pgettext("list separator", "; ").join(
        f"{c} {v}" for c, v in zip(cells, values, strict=True)
    )


def _quantiles(stat: dict[str, Any], options: ViewOptions) -> SafeString:
    q = stat["quantile_chart"]
    band = q["bands"][options.confidence]["per_cell"]
    text = stat["text"][options.confidence]
    lines = []
    for i, name in enumerate(stat["cells"]):
        fills = {"name": name.lower(), "value": text["value"][i]}
        fills["confidence"] = _confidence(options)
        if band["low_text"][i]:
            lines.append(format_html(
                gettext("the {name} is {value}: with {confidence} confidence it lies between "
                        "{low} and {high} of the data"),
                low=_fill("band-low", band["low_text"][i], i),
                high=_fill("band-high", band["high_text"][i], i), **fills,
            ))  # fmt: skip
        elif q.get("released_intervals") and band["ci_low_text"][i]:
            lines.append(format_html(
                gettext("the {name} is {value}: with {confidence} confidence the true {name} "
                        "lies between {low} and {high}, and at most {ranks} values lie between "
                        "it and the published value, beyond the grid's own step"),
                ranks=_fill("rank-error", band["ranks_text"][i], i),
                low=_fill("ci-low", band["ci_low_text"][i], i),
                high=_fill("ci-high", band["ci_high_text"][i], i), **fills,
            ))  # fmt: skip
        elif band["about_low_text"][i]:
            lines.append(format_html(
                gettext("the {name} is {value}: with {confidence} confidence at most {ranks} "
                        "values lie between it and the true {name}, beyond the grid's own step; "
                        "in the data's units that is about {low} to {high} (an estimate)"),
                ranks=_fill("rank-error", band["ranks_text"][i], i),
                low=_fill("about-low", band["about_low_text"][i], i),
                high=_fill("about-high", band["about_high_text"][i], i), **fills,
            ))  # fmt: skip
        else:
            lines.append(format_html(
                gettext("the {name} is {value}: with {confidence} confidence at most {ranks} "
                        "values lie between it and the true {name}, beyond the grid's own step"),
                ranks=_fill("rank-error", band["ranks_text"][i], i), **fills,
            ))  # fmt: skip
    return format_html(
        gettext(
            "Each value was chosen from a public grid of {m} values from {first} to {last} by the "
            "permute-and-flip mechanism, which favours the grid values whose rank is closest to "
            "the target; no value of the data is published. {each}."
        ),
        m=q["candidates_text"], first=q["grid_first"], last=q["grid_last"],
        each=format_html_join(
            pgettext("list separator", "; "), "{}", ((line,) for line in lines)
        ),
    )  # fmt: skip


def explanation(stat: dict[str, Any], *, options: ViewOptions) -> SafeString:
    """The paragraph under a chart of a new kind, at the reader's options."""
    kind = stat["kind"]
    text = stat["text"][options.confidence]
    fills = {
        "columns": page_words.names_text(stat["columns"]),
        "noise": _noise_words(stat),
        "confidence": _confidence(options),
    }
    if kind == "grouped_sum":
        return format_html(
            gettext(
                "Each bar estimates the sum of {columns} in one {groups} (made under the rules "
                "below) plus random noise drawn from a {noise}. With {confidence} confidence the "
                "sum it estimates lies within plus or minus {halfwidth} of any one bar; all {k} "
                "bars at once lie within plus or minus {simultaneous}."
            ),
            groups=_groups_text(stat), k=stat["k"],
            halfwidth=format_html('<span data-fill="halfwidth">{}</span>',
                                  text["per_cell"]["halfwidth"][0]),
            simultaneous=format_html('<span data-fill="simultaneous-halfwidth">{}</span>',
                                     text["simultaneous"]["halfwidth"][0]),
            **fills,
        )  # fmt: skip
    if kind == "grouped_mean":
        return format_html(
            gettext(
                "Each bar is the mean of {columns} in one {groups}: a noisy sum divided by a "
                "noisy count, each with its own noise from a {noise}; the number of rows is not "
                "published. With {confidence} confidence the means they estimate are: "
                "{groups_list}."
            ),
            groups=_groups_text(stat), groups_list=_per_group(stat, options), **fills,
        )  # fmt: skip
    if kind == "quantiles":
        return _quantiles(stat, options)
    if kind == "variance":
        start = gettext(
            "The variance of {columns} is computed from three noisy numbers: a count of the rows, "
            "a sum of the clipped values (centred in their range) and a sum of their squares, "
            "each with its own noise from a {noise}."
        )
        one = gettext("With {confidence} confidence the variance it estimates lies between "
                      "{lower} and {upper}.")  # fmt: skip
    else:
        start = gettext(
            "The standard deviation of {columns} is computed from three noisy numbers: a count "
            "of the rows, a sum of the clipped values (centred in their range) and a sum of "
            "their squares, each with its own noise from a {noise}."
        )
        one = gettext("With {confidence} confidence the standard deviation it estimates lies "
                      "between {lower} and {upper}.")  # fmt: skip
    start_html = format_html(start, columns=fills["columns"], noise=fills["noise"])
    if len(stat["cells"]) == 1 and (stat.get("uninformative_cells") or [False])[0]:
        end = gettext("There are too few records to estimate it: no value is shown.")
    elif len(stat["cells"]) == 1:
        end = format_html(
            one, confidence=fills["confidence"],
            lower=_fill("cell-lower", text["per_cell"]["lower"][0], 0),
            upper=_fill("cell-upper", text["per_cell"]["upper"][0], 0),
        )  # fmt: skip
    else:
        end = format_html(
            gettext("With {confidence} confidence, per group: {groups_list}."),
            confidence=fills["confidence"], groups_list=_per_group(stat, options),
        )  # fmt: skip
    return format_html("{} {}", start_html, end)


def alt_text(stat: dict[str, Any], *, options: ViewOptions) -> str:
    values = stat["text"][options.confidence]["value"]
    pairs = pairs_text(stat["cells"], values)
    what = {
        "quantiles": gettext("Quantile plot of %(label)s: %(values)s"),
        "grouped_bars": gettext("Grouped bar chart of %(label)s: %(values)s"),
        "bars": gettext("Bar chart of %(label)s: %(values)s"),
    }.get(stat["layout"], "%(label)s: %(values)s")
    return what % {"label": stat["label"], "values": pairs}


def warnings(stat: dict[str, Any]) -> list[str]:
    """Notices under the statistic (any kind): a clamped variance; the cells too
    uninformative to show (one notice, whatever made them so)."""
    out = []
    separator = pgettext("list separator", ", ")
    hidden = stat.get("uninformative_cells") or [False] * len(stat["cells"])
    clamped = [
        c
        for c, flag, gone in zip(stat["cells"], stat.get("clamped") or [], hidden, strict=False)
        if flag and not gone
    ]
    if clamped and len(stat["cells"]) == 1:
        out.append(gettext(
            "The noisy variance came out negative (an effect of the noise, not of the data) and "
            "was clamped to 0; the interval still holds at the stated confidence."
        ))  # fmt: skip
    elif clamped:
        out.append(gettext(
            "The noisy variance came out negative (an effect of the noise, not of the data) and "
            "was clamped to 0; the interval still holds at the stated confidence (in %(cells)s)."
        ) % {"cells": separator.join(clamped)})  # fmt: skip
    small = [c for c, flag in zip(stat["cells"], hidden, strict=False) if flag]
    if small and len(stat["cells"]) == 1:
        out.append(gettext(
            "Too few records to estimate this value: at the release's confidence level its "
            "noisy count cannot be told from zero, or its interval spans every possible value. "
            "No value is shown; data.json keeps the noisy one, flagged \"uninformative\"."
        ))  # fmt: skip
    elif small:
        out.append(gettext(
            "Too few records to estimate in %(cells)s: at the release's confidence level the "
            "noisy count cannot be told from zero, or the interval spans every possible value. "
            "No value or bar is shown there; data.json keeps the noisy values, flagged "
            "\"uninformative\"."
        ) % {"cells": separator.join(small)})  # fmt: skip
    return out
