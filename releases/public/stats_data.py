"""Chart fields of grouped statistics, quantiles and spread for the public page.

releases.public.data gives every statistic its values, intervals and texts
(through the statistic's kind, releases.kinds); this adds what the charts and the
sentences of the new kinds need: the grouping columns' titles, the flag to
tell the reader of a variance clamped to 0 (the cells too uninformative to show
are flagged by the kind, for every kind: releases.public.data), and for
quantiles the rank-error band of each quantile: in ranks
(quantiles.quantile_rank_errors, via the kind's intervals), and in percentile points
only when the statistic holds a NOISY count of the same rows
(quantiles.rank_error_percent; an estimate through a noisy count, never the
true n). Public values only, never data.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpportal import formatting
from dpportal.privacy.quantiles import rank_error_percent
from releases import kinds
from releases.kinds import quantile_words
from releases.public.options import INTERVAL_KINDS


def handles(kind: str) -> bool:
    """Whether the statistic's chart needs these fields (grouping columns, quantiles)."""
    return kinds.get(kind).fields == "grouped"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def percentile_text(percent: float) -> str:
    """'the 25th percentile', 'the 2.5th percentile' (a percent in [0, 100])."""
    value = formatting.significant(percent, 3, group=False)
    if "." in value:
        return f"the {value}th percentile"
    return f"the {_ordinal(int(value))} percentile"


def _noisy_count(entry: dict[str, Any]) -> int | None:
    """A released NOISY count of the quantiles' rows, when the statistic holds one."""
    for source in (entry, entry["explanation"]):
        count = source.get("noisy_count")
        if isinstance(count, int) and not isinstance(count, bool):
            return count
    return None


def _band(
    percents: list[float], ranks: list[float], count: int | None, iv: dict[str, Any]
) -> dict[str, list]:
    """The rank error in ranks (whole ranks, rounded up, as every surface states it), in
    percentile points through a noisy count (if any), and in the data's units (the kind's
    estimate, releases.kinds.quantiles; '' without an n to read it with)."""
    lows = iv.get("about_lower") or [None] * len(ranks)
    highs = iv.get("about_upper") or [None] * len(ranks)
    about = [quantile_words.about_range_texts(a, b) for a, b in zip(lows, highs, strict=True)]
    out: dict[str, list] = {
        "ranks_text": [formatting.rank(max(1, t)) for t in ranks],
        "about_low": list(lows),
        "about_high": list(highs),
        "about_low_text": [a for a, _ in about],
        "about_high_text": [b for _, b in about],
        # the released confidence interval in the data's units (None: none at this level)
        "ci_low": list(iv.get("lower") or [None] * len(ranks)),
        "ci_high": list(iv.get("upper") or [None] * len(ranks)),
        "low": [],
        "high": [],
        "low_text": [],
        "high_text": [],
    }
    ci = [quantile_words.about_range_texts(a, b) for a, b in zip(out["ci_low"], out["ci_high"],
                                                                  strict=True)]  # fmt: skip
    out["ci_low_text"] = [a for a, _ in ci]
    out["ci_high_text"] = [b for _, b in ci]
    for p, t in zip(percents, ranks, strict=True):
        d = rank_error_percent(t, count) if count else None
        low = None if d is None else max(0.0, p - d)
        high = None if d is None else min(100.0, p + d)
        out["low"].append(low)
        out["high"].append(high)
        out["low_text"].append("" if low is None else percentile_text(low))
        out["high_text"].append("" if high is None else percentile_text(high))
    return out


def quantile_extra(entry: dict[str, Any], ivs: dict[str, Any]) -> dict[str, Any]:
    """Per quantile: its percent and, per level and interval kind, its rank-error band."""
    explanation = entry["explanation"]
    percents = [float(Fraction(p["quantile"]) * 100) for p in explanation["quantiles"]]
    count = _noisy_count(entry)
    return {
        "percents": percents,
        # whether confidence intervals were released with the quantiles (not older releases)
        "released_intervals": bool(entry.get("intervals")),
        "percent_texts": [percentile_text(p) for p in percents],
        "noisy_count": count,
        "candidates": int(explanation["candidates"]),
        "candidates_text": formatting.integer(int(explanation["candidates"])),
        "grid_first": formatting.significant(Fraction(explanation["grid_first"]), 15),
        "grid_last": formatting.significant(Fraction(explanation["grid_last"]), 15),
        "bands": {
            level: {
                kind: _band(percents, ivs[level][kind]["rank_errors"], count, ivs[level][kind])
                for kind in INTERVAL_KINDS
            }
            for level in ivs
        },
    }


def chart_fields(entry: dict[str, Any], ivs: dict[str, Any]) -> dict[str, Any]:
    """What the charts and sentences of a new kind need beyond data.py's fields."""
    kind, explanation = entry["kind"], entry["explanation"]
    out: dict[str, Any] = {
        "group_columns": [str(c) for c in entry.get("group_columns") or []],
        "quantile_chart": quantile_extra(entry, ivs) if kind == "quantiles" else None,
        "clamped": [],
    }
    groups = out["group_columns"]
    if groups:  # grouped bars: the first grouping column on the axis, the second in the legend
        out["row_title"] = groups[0]
        out["col_title"] = groups[1] if len(groups) > 1 else ""
    if kinds.get(kind).aggregate == "spread":
        out["clamped"] = [cell.get("clamped") == "low" for cell in explanation["cells"]]
    return out
