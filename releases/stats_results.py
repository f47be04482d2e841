"""Stored results of the issue-14 kinds, read for people: intervals at any confidence, notes.

Everything here is post-processing of a stored result entry (noisy values and
the public explanation dpportal.privacy returned): intervals are recomputed
from the explanation at any confidence level, never from data.

`statistic_intervals` gives, per cell, {"value", "low", "high", "halfwidth",
"rank_error", "flag"} (/work/wt/briefs/stats14-format.md):
- grouped_sum: value +- halfwidth (accuracy.result_halfwidth);
- grouped_mean: the asymmetric [low, high] of grouped_release.grouped_mean_intervals;
- stddev / variance: spread.spread_intervals (sd or variance), flags for a
  clamped estimate or a non-positive noisy count;
- quantiles: no value interval: the rank-error bound t (ranks) of
  quantiles.quantile_rank_errors: with the stated confidence the released
  candidate's rank is within t of the target rank q n (plus the grid's resolution).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils.translation import gettext_noop

from dpportal import formatting
from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.grouped_release import grouped_mean_intervals
from dpportal.privacy.quantiles import quantile_rank_errors
from dpportal.privacy.spread import spread_intervals
from releases.dp_stats import NEW_KINDS, SPREAD_KINDS

__all__ = ["NEW_KINDS", "statistic_intervals", "statistic_notes", "layout"]


def _cell(value: float, low=None, high=None, halfwidth=None, rank_error=None, flag=None) -> dict:
    return {
        "value": value,
        "low": low,
        "high": high,
        "halfwidth": halfwidth,
        "rank_error": rank_error,
        "flag": flag,
    }


def _float(value: Any) -> float:
    return float(Decimal(value)) if isinstance(value, str) else float(value)


def statistic_intervals(
    entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
) -> list[dict[str, Any]]:
    """Per cell of a stored new-kind entry: value and its interval (or rank error)."""
    kind, explanation = entry["kind"], entry["explanation"]
    values = [_float(v) for v in entry["values"]]
    if kind == "grouped_sum":
        h = float(result_halfwidth(explanation, confidence=confidence, simultaneous=simultaneous))
        return [_cell(v, v - h, v + h, h) for v in values]
    if kind == "grouped_mean":
        flags = explanation.get("count_nonpositive") or [False] * len(values)
        cells = grouped_mean_intervals(
            explanation, confidence=confidence, simultaneous=simultaneous
        )
        return [
            _cell(est, low, high, flag="count_nonpositive" if flag else None)
            for (est, low, high), flag in zip(cells, flags, strict=True)
        ]
    if kind in SPREAD_KINDS:
        key = "sd" if kind == "stddev" else "variance"
        out = []
        for cell in spread_intervals(explanation, confidence=confidence, simultaneous=simultaneous):
            low, high = cell[f"{key}_interval"]
            flag = "count_nonpositive" if cell["count_nonpositive"] else None
            if cell["clamped"]:
                flag = f"clamped_{cell['clamped']}"
            out.append(_cell(_float(cell[key]), _float(low), _float(high), flag=flag))
        return out
    if kind == "quantiles":
        errors = quantile_rank_errors(explanation, confidence=confidence, simultaneous=simultaneous)
        return [_cell(v, rank_error=t) for v, t in zip(values, errors, strict=True)]
    raise ValueError("not an issue-14 statistic")


def layout(entry: dict[str, Any]) -> str:
    """The public page's layout: "grouped_bars" (two grouping columns), "bars" (one),
    "figure" (one ungrouped spread), "quantiles" (a quantile plot with rank bands)."""
    if entry["kind"] == "quantiles":
        return "quantiles"
    if entry.get("shape"):
        return "grouped_bars"
    if entry["kind"] in SPREAD_KINDS and len(entry.get("cells") or []) == 1:
        return "figure"
    return "bars"


def value_title(kind: str, columns: list[str]) -> str:
    name = columns[0] if columns else ""
    return {
        "grouped_sum": f"sum of {name}",
        "grouped_mean": f"mean of {name}",
        "quantiles": name,
        "stddev": f"standard deviation of {name}",
        "variance": f"variance of {name}",
    }[kind]


def statistic_notes(entry: dict[str, Any], spec: dict[str, Any] | None, clip_note, note) -> list:
    """The rules behind a new-kind statistic (after the privacy unit's note), one message
    record each (`note(msgid, **params)`, see releases.public.notes)."""
    kind, spec = entry["kind"], spec or {}
    name = ", ".join(entry.get("columns") or [])
    notes = []
    if kind == "quantiles":
        grid = spec.get("grid") or {}
        if "step" in grid:
            notes.append(
                note(
                    gettext_noop(
                        "Each value was chosen among public candidates (every %(step)s from "
                        "%(lower)s to %(upper)s) by a randomised selection that favours "
                        "candidates near the quantile; the rank error says how far, in records, "
                        "the chosen value's rank may lie from the quantile's."
                    ),
                    step=formatting.exact(grid["step"]),
                    lower=formatting.exact(grid["lower"]),
                    upper=formatting.exact(grid["upper"]),
                )
            )
        else:
            notes.append(
                note(
                    gettext_noop(
                        "Each value was chosen among public candidates (the declared bin edges) "
                        "by a randomised selection that favours candidates near the quantile; "
                        "the rank error says how far, in records, the chosen value's rank may "
                        "lie from the quantile's."
                    )
                )
            )
    elif spec.get("lower") is not None:
        what = {"grouped_sum": "sum", "grouped_mean": "mean was taken"}.get(kind, "spread")
        notes.append(clip_note(name, spec["lower"], spec["upper"], what=what))
    if kind in SPREAD_KINDS:
        notes.append(
            note(
                gettext_noop(
                    "It is the population spread (dividing by the number of records) of the "
                    "clipped values; a noisy variance below zero is shown as zero."
                )
            )
        )
    notes.append(note(gettext_noop("Records with no value for %(name)s are left out."), name=name))
    return notes
