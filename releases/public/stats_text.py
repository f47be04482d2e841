"""Plain-language sentences of grouped statistics, quantiles and spread on the public page.

Numbers are the `text` strings releases.public.stats_data formatted with
dpportal.formatting; each is wrapped in a span the page's script refills for
another confidence level (data-fill="cell-lower" etc. with data-index).
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from releases.public.options import CONFIDENCE_LABELS, ViewOptions
from releases.public.stats_data import KINDS

CAPTIONS = {
    "grouped_bars": (
        "Grouped bars: one bar per value of the second grouping column within each group of "
        "the first; error bars: the interval of each group at the chosen confidence level."
    ),
    "quantiles": (
        "Each point is a published quantile; its accuracy is a rank error (in the table), "
        "not an interval of values."
    ),
}
CLAMPED = (
    "The noisy variance came out negative (an effect of the noise, not of the data) and was "
    "clamped to 0; the interval still holds at the stated confidence."
)


def handles(kind: str) -> bool:
    return kind in KINDS


def quantile_rows(stat: dict[str, Any], *, options: ViewOptions) -> list[dict[str, Any]]:
    """The quantiles' table: name, value, rank error (and percentile band when known)."""
    if stat["kind"] != "quantiles":
        return []
    band = stat["quantile_chart"]["bands"][options.confidence][options.intervals]
    values = stat["text"][options.confidence]["value"]
    return [
        {"index": i, "cell": cell, "value": values[i], "rank_error": band["ranks_text"][i],
         "band_low": band["low_text"][i], "band_high": band["high_text"][i]}
        for i, cell in enumerate(stat["cells"])
    ]  # fmt: skip


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
            "each of the {} groups with its interval in the table below", len(stat["cells"])
        )
    return format_html_join(
        "; ",
        "{}: {} (between {} and {})",
        (
            (cell, _fill("cell-value", text["value"][i], i),
             _fill("cell-lower", text["per_cell"]["lower"][i], i),
             _fill("cell-upper", text["per_cell"]["upper"][i], i))
            for i, cell in enumerate(stat["cells"])
        ),
    )  # fmt: skip


def _noise_words(stat: dict[str, Any]) -> str:
    noise = stat.get("noise") or {}
    return f"{noise.get('name', '')} ({noise.get('parameter_text', '')})"


def _groups_text(stat: dict[str, Any]) -> str:
    return " and ".join(stat.get("group_columns") or []) or "group"


def _quantiles(stat: dict[str, Any], options: ViewOptions) -> SafeString:
    q = stat["quantile_chart"]
    band = q["bands"][options.confidence]["per_cell"]
    text = stat["text"][options.confidence]
    lines = []
    for i, name in enumerate(stat["cells"]):
        if band["low_text"][i]:
            lines.append(format_html(
                "the {} is {}: with {} confidence it lies between {} and {} of the data",
                name.lower(), text["value"][i], _confidence(options),
                _fill("band-low", band["low_text"][i], i),
                _fill("band-high", band["high_text"][i], i),
            ))  # fmt: skip
        else:
            lines.append(format_html(
                "the {} is {}: with {} confidence at most {} values lie between it and the "
                "true {}, beyond the grid's own step",
                name.lower(), text["value"][i], _confidence(options),
                _fill("rank-error", band["ranks_text"][i], i), name.lower(),
            ))  # fmt: skip
    return format_html(
        "Each value was chosen from a public grid of {} values from {} to {} by the "
        "permute-and-flip mechanism, which favours the grid values whose rank is closest to the "
        "target; no value of the data is published. {}.",
        q["candidates_text"], q["grid_first"], q["grid_last"],
        format_html_join("; ", "{}", ((line,) for line in lines)),
    )  # fmt: skip


def explanation(stat: dict[str, Any], *, options: ViewOptions) -> SafeString:
    """The paragraph under a chart of a new kind, at the reader's options."""
    kind = stat["kind"]
    columns_text = " and ".join(stat["columns"])
    text = stat["text"][options.confidence]
    if kind == "grouped_sum":
        return format_html(
            "Each bar estimates the sum of {} in one {} (made under the rules below) plus random "
            "noise drawn from a {}. With {} confidence the sum it estimates lies within plus or "
            "minus {} of any one bar; all {} bars at once lie within plus or minus {}.",
            columns_text, _groups_text(stat), _noise_words(stat), _confidence(options),
            format_html('<span data-fill="halfwidth">{}</span>',
                        text["per_cell"]["halfwidth"][0]),
            stat["k"],
            format_html('<span data-fill="simultaneous-halfwidth">{}</span>',
                        text["simultaneous"]["halfwidth"][0]),
        )  # fmt: skip
    if kind == "grouped_mean":
        return format_html(
            "Each bar is the mean of {} in one {}: a noisy sum divided by a noisy count, each "
            "with its own noise from a {}; the number of rows is not published. With {} "
            "confidence the means they estimate are: {}.",
            columns_text, _groups_text(stat), _noise_words(stat), _confidence(options),
            _per_group(stat, options),
        )  # fmt: skip
    if kind == "quantiles":
        return _quantiles(stat, options)
    what = "variance" if kind == "variance" else "standard deviation"
    start = format_html(
        "The {} of {} is computed from three noisy numbers: a count of the rows, a sum of the "
        "clipped values (centred in their range) and a sum of their squares, each with its own "
        "noise from a {}.",
        what, columns_text, _noise_words(stat),
    )  # fmt: skip
    if len(stat["cells"]) == 1:
        return format_html(
            "{} With {} confidence the {} it estimates lies between {} and {}.",
            start, _confidence(options), what,
            _fill("cell-lower", text["per_cell"]["lower"][0], 0),
            _fill("cell-upper", text["per_cell"]["upper"][0], 0),
        )  # fmt: skip
    return format_html(
        "{} With {} confidence, per group: {}.", start, _confidence(options),
        _per_group(stat, options),
    )  # fmt: skip


def alt_text(stat: dict[str, Any], *, options: ViewOptions) -> str:
    values = stat["text"][options.confidence]["value"]
    what = {"quantiles": "Quantile plot", "grouped_bars": "Grouped bar chart",
            "bars": "Bar chart"}.get(stat["layout"], "")  # fmt: skip
    pairs = "; ".join(f"{c} {v}" for c, v in zip(stat["cells"], values, strict=True))
    return f"{what} of {stat['label']}: {pairs}" if what else f"{stat['label']}: {pairs}"


def warnings(stat: dict[str, Any]) -> list[str]:
    """Notices under the statistic: a clamped variance, a group too small to estimate."""
    out = []
    clamped = [c for c, flag in zip(stat["cells"], stat.get("clamped") or [], strict=False) if flag]
    if clamped:
        where = "" if len(stat["cells"]) == 1 else f" (in {', '.join(clamped)})"
        out.append(CLAMPED[:-1] + where + ".")
    small = [
        c
        for c, flag in zip(stat["cells"], stat.get("count_nonpositive_cells") or [], strict=False)
        if flag
    ]
    if small:
        out.append(
            "The noisy count was zero or negative in " + ", ".join(small) + ": too few rows to "
            "estimate there; the figure shows the middle of the public bounds."
        )
    return out
