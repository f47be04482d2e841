"""Public data of grouped statistics, quantiles and spread (issue 14), as JSON-ready values.

The same shape releases.public.data gives every statistic (cells, values, and
for each confidence level and interval kind the half-widths, lower and upper
ends, and their text), so the page's tables, the downloads and the members'
page read them unchanged; plus `extra`, what their charts and sentences need.
Everything is recomputed from the stored explanation (dpportal.privacy's
to_dict) with the privacy core's own functions, never from data:

- grouped count and sum: accuracy.result_halfwidth (per group; all groups at
  once); grouped mean: grouped_release.grouped_mean_intervals (asymmetric, so
  no half-width), from the noisy sums and counts;
- spread: spread.spread_intervals (the standard deviation's or the variance's
  interval, asymmetric; a negative variance estimate clamped to 0 is flagged);
- quantiles: the released candidates have no interval in value units: their
  accuracy is a rank error (quantiles.quantile_rank_errors), shown in ranks,
  and in percentile points when the release holds a noisy count of the same
  rows (quantiles.rank_error_percent, an estimate through a NOISY count).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpportal import formatting
from dpportal.privacy import accuracy
from dpportal.privacy.grouped_release import grouped_mean_intervals
from dpportal.privacy.quantiles import quantile_rank_errors, rank_error_percent
from dpportal.privacy.spread import spread_intervals
from releases.public.options import CONFIDENCE_LEVELS, INTERVAL_KINDS

# The kinds of stats14-format.md (grouped counts are histograms: no new kind).
GROUPED_KINDS = ("grouped_sum", "grouped_mean")
SPREAD_KINDS = ("stddev", "variance")
KINDS = GROUPED_KINDS + ("quantiles",) + SPREAD_KINDS

QUANTILE_NAMES = {
    Fraction(1, 2): "Median",
    Fraction(1, 4): "Lower quartile",
    Fraction(3, 4): "Upper quartile",
}


def handles(kind: str) -> bool:
    return kind in KINDS


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def percentile_text(percent: float) -> str:
    """'the 25th percentile', 'the 2.5th percentile' (a percent in [0, 100])."""
    value = formatting.significant(percent, 3, group=False)
    if "." in value:
        return f"the {value}th percentile"
    return f"the {_ordinal(int(value))} percentile"


def quantile_name(quantile: object) -> str:
    """'Median', 'Lower quartile', or '90th percentile'."""
    q = Fraction(str(quantile))
    if q in QUANTILE_NAMES:
        return QUANTILE_NAMES[q]
    return percentile_text(float(q * 100))[4:].capitalize()


def measure(entry: dict[str, Any]) -> str:
    """'sd' or 'variance': the spread the kind names (its stored result holds both)."""
    return "variance" if entry["kind"] == "variance" else "sd"


def _spread_cells(entry: dict[str, Any], *, level: str, simultaneous: bool) -> list[dict]:
    return spread_intervals(entry["explanation"], confidence=level, simultaneous=simultaneous)


def values(entry: dict[str, Any]) -> list[float]:
    """The released value of each cell (group, quantile or spread cell) as floats."""
    return [float(Decimal(str(v))) for v in entry.get("values") or []]


def cells(entry: dict[str, Any]) -> list[str]:
    """Cell labels: the groups (as compute named them), the quantiles, or 'All rows'."""
    labels = [str(c) for c in entry.get("cells") or []]
    if entry["kind"] == "quantiles" and not labels:
        labels = [quantile_name(part["quantile"]) for part in entry["explanation"]["quantiles"]]
    return labels or ["All rows"]


def layout(entry: dict[str, Any]) -> str:
    """'quantiles' (a quantile plot), 'figure' (one value) or 'grouped' (bars per group)."""
    if entry["kind"] == "quantiles":
        return "quantiles"
    if entry["kind"] in SPREAD_KINDS and len(entry.get("values") or []) == 1:
        return "figure"
    return "grouped"


def value_title(entry: dict[str, Any]) -> str:
    kind, columns = entry["kind"], list(entry.get("columns") or [])
    name = columns[0] if columns else ""
    return {
        "grouped_sum": f"sum of {name}",
        "grouped_mean": f"mean of {name}",
        "quantiles": name,
        "variance": f"variance of {name}",
        "stddev": f"standard deviation of {name}",
    }[kind]


def intervals(
    entry: dict[str, Any], released: list[float]
) -> dict[str, dict[str, dict[str, list]]]:
    """{level: {per_cell|simultaneous: {halfwidths, lower, upper}}}, as data.py's
    (for quantiles also `rank_errors`, in ranks; their value ends are None)."""
    kind, explanation = entry["kind"], entry["explanation"]
    out: dict[str, dict[str, dict[str, list]]] = {}
    n = len(released)
    for level in CONFIDENCE_LEVELS:
        out[level] = {}
        for interval_kind in INTERVAL_KINDS:
            together = interval_kind == "simultaneous"
            if kind == "grouped_sum":
                h = float(
                    accuracy.result_halfwidth(explanation, confidence=level, simultaneous=together)
                )
                iv = {"halfwidths": [h] * n, "lower": [v - h for v in released],
                      "upper": [v + h for v in released]}  # fmt: skip
            elif kind == "grouped_mean":
                rows = grouped_mean_intervals(explanation, confidence=level, simultaneous=together)
                iv = {"halfwidths": [None] * n, "lower": [r[1] for r in rows],
                      "upper": [r[2] for r in rows]}  # fmt: skip
            elif kind in SPREAD_KINDS:
                key = "variance_interval" if kind == "variance" else "sd_interval"
                rows = _spread_cells(entry, level=level, simultaneous=together)
                iv = {"halfwidths": [None] * n,
                      "lower": [float(Fraction(r[key][0])) for r in rows],
                      "upper": [float(Fraction(r[key][1])) for r in rows]}  # fmt: skip
            else:  # quantiles: no interval in value units, a rank error
                iv = {
                    "halfwidths": [None] * n, "lower": [None] * n, "upper": [None] * n,
                    "rank_errors": quantile_rank_errors(
                        explanation, confidence=level, simultaneous=together
                    ),
                }  # fmt: skip
            out[level][interval_kind] = iv
    return out


def _precision(value: float, lower: float | None, upper: float | None) -> float | None:
    if lower is None or upper is None:
        return None
    return max(upper - value, value - lower)


def _end(x: float | None, h: float | None) -> str:
    return "" if x is None else formatting.noisy(x, h)


def texts(stat: dict[str, Any]) -> dict[str, Any]:
    """The numbers as people read them, in data.py's shape (no 'rounded': not counts)."""
    out: dict[str, Any] = {}
    released = stat["values"]
    exact_values = stat["kind"] == "quantiles"
    for level in CONFIDENCE_LEVELS:
        per_cell = stat["intervals"][level]["per_cell"]
        level_texts: dict[str, Any] = {"value": []}
        for i, v in enumerate(released):
            h = per_cell["halfwidths"][i]
            if h is None:
                h = _precision(v, per_cell["lower"][i], per_cell["upper"][i])
            if exact_values:  # an owner-declared grid point: shown as declared
                level_texts["value"].append(formatting.significant(v, 15))
            else:
                level_texts["value"].append(formatting.noisy(v, h))
        for interval_kind in INTERVAL_KINDS:
            iv = stat["intervals"][level][interval_kind]
            ends = [
                iv["halfwidths"][i]
                if iv["halfwidths"][i] is not None
                else _precision(v, iv["lower"][i], iv["upper"][i])
                for i, v in enumerate(released)
            ]
            level_texts[interval_kind] = {
                "lower": [_end(x, h) for x, h in zip(iv["lower"], ends, strict=True)],
                "upper": [_end(x, h) for x, h in zip(iv["upper"], ends, strict=True)],
                "halfwidth": [formatting.halfwidth(h) for h in iv["halfwidths"]],
            }
        out[level] = level_texts
    return out


def _noisy_count(entry: dict[str, Any]) -> int | None:
    """A released NOISY count of the quantiles' rows, when the statistic holds one."""
    for source in (entry, entry["explanation"]):
        count = source.get("noisy_count")
        if isinstance(count, int) and not isinstance(count, bool):
            return count
    return None


def _band(percents: list[float], ranks: list[float], count: int | None) -> dict[str, list]:
    """The rank error in ranks, and in percentile points through a noisy count (if any)."""
    out: dict[str, list] = {
        "ranks_text": [formatting.integer(max(1, round(t))) for t in ranks],
        "low": [],
        "high": [],
        "low_text": [],
        "high_text": [],
    }
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
        "percent_texts": [percentile_text(p) for p in percents],
        "noisy_count": count,
        "candidates": int(explanation["candidates"]),
        "candidates_text": formatting.integer(int(explanation["candidates"])),
        "grid_first": formatting.significant(Fraction(explanation["grid_first"]), 15),
        "grid_last": formatting.significant(Fraction(explanation["grid_last"]), 15),
        "bands": {
            level: {
                kind: _band(percents, ivs[level][kind]["rank_errors"], count)
                for kind in INTERVAL_KINDS
            }
            for level in CONFIDENCE_LEVELS
        },
    }


def chart_fields(entry: dict[str, Any], ivs: dict[str, Any]) -> dict[str, Any]:
    """What the charts and sentences of a new kind need beyond data.py's fields."""
    kind, explanation = entry["kind"], entry["explanation"]
    out: dict[str, Any] = {
        "group_columns": [str(c) for c in entry.get("group_columns") or []],
        "quantiles": quantile_extra(entry, ivs) if kind == "quantiles" else None,
        "clamped": [],
        "count_nonpositive_cells": [],
    }
    groups = out["group_columns"]
    if groups:  # grouped bars: the first grouping column on the axis, the second in the legend
        out["row_title"] = groups[0]
        out["col_title"] = groups[1] if len(groups) > 1 else ""
    if kind in SPREAD_KINDS:
        out["clamped"] = [cell.get("clamped") == "low" for cell in explanation["cells"]]
        flags = [cell.get("count_nonpositive") for cell in explanation["cells"]]
        out["count_nonpositive_cells"] = [bool(f) for f in flags]
    elif kind == "grouped_mean":
        out["count_nonpositive_cells"] = [bool(f) for f in explanation["count_nonpositive"]]
    return out
