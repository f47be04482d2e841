"""Members' results page rows of grouped statistics, quantiles and spread (issue 14).

Same row shape as releases.presentation (cell, value, low, high, halfwidth),
recomputed at the release's confidence from the stored explanation with the
privacy core's functions; a quantile has no interval in value units but a rank
error (`rank_error`, in ranks). Noise parameters in the data's units: a spread's
centred sum is noised in half grid steps (x gamma/2), its squares in
(gamma/2)**2, its count in rows.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpportal import formatting
from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.grouped_release import grouped_mean_intervals
from dpportal.privacy.quantiles import quantile_rank_errors
from dpportal.privacy.spread import spread_intervals
from releases.public.stats_data import KINDS, SPREAD_KINDS
from releases.results_text import noise_parameter

__all__ = ["KINDS", "noise_text", "result_rows"]


def _scaled(part: dict[str, Any], factor: Fraction) -> str:
    symbol = "sigma" if part.get("noise") == "discrete_gaussian" else "scale"
    raw = part.get("sigma" if symbol == "sigma" else "scale")
    return f"{symbol} {formatting.scale(Fraction(str(raw)) * factor)}"


def noise_text(entry: dict[str, Any]) -> str:
    """The noise of a new kind in words, in the data's units."""
    kind, explanation = entry["kind"], entry["explanation"]
    if kind == "quantiles":
        return "permute-and-flip selection on the public grid (no noise on a value)"
    if kind == "grouped_mean":
        return "; ".join(
            noise_parameter(explanation[part], part=part).text for part in ("sum", "count")
        )
    if kind in SPREAD_KINDS:
        gamma = Fraction(explanation["granularity"])
        return (
            f"count: {_scaled(explanation['count'], Fraction(1))}; "
            f"sum: {_scaled(explanation['sum'], gamma / 2)}; "
            f"squares: {_scaled(explanation['squares'], gamma * gamma / 4)}"
        )
    return noise_parameter(explanation).text


def result_rows(entry: dict[str, Any], *, confidence: object) -> dict[str, Any]:
    """{'rows': [...], 'halfwidth', 'halfwidth_simultaneous'} of one stored new-kind entry."""
    kind, explanation = entry["kind"], entry["explanation"]
    cells = [str(c) for c in entry.get("cells") or []] or ["All rows"]
    rows: list[dict[str, Any]] = []
    out: dict[str, Any] = {"rows": rows, "halfwidth": None, "halfwidth_simultaneous": None}
    if kind == "grouped_sum":
        h = result_halfwidth(explanation, confidence=confidence)
        out["halfwidth"] = h
        out["halfwidth_simultaneous"] = result_halfwidth(
            explanation, confidence=confidence, simultaneous=True
        )
        for cell, value in zip(cells, entry["values"], strict=True):
            number = float(Fraction(str(value)))
            rows.append({"cell": cell, "value": value, "low": number - h, "high": number + h,
                         "halfwidth": h})  # fmt: skip
    elif kind == "grouped_mean":
        for cell, (value, low, high) in zip(
            cells, grouped_mean_intervals(explanation, confidence=confidence), strict=True
        ):
            rows.append({"cell": cell, "value": value, "low": low, "high": high,
                         "halfwidth": max(high - value, value - low)})  # fmt: skip
    elif kind in SPREAD_KINDS:
        key = "variance" if kind == "variance" else "sd"
        for cell, item in zip(
            cells, spread_intervals(explanation, confidence=confidence), strict=True
        ):
            value = float(Fraction(item[key]))
            low, high = (float(Fraction(x)) for x in item[f"{key}_interval"])
            rows.append({"cell": cell, "value": value, "low": low, "high": high,
                         "halfwidth": max(high - value, value - low),
                         "clamped": item.get("clamped") == "low"})  # fmt: skip
    else:  # quantiles: the selected grid value, exact, and its rank error
        errors = quantile_rank_errors(explanation, confidence=confidence)
        for cell, value, t in zip(cells, entry["values"], errors, strict=True):
            rows.append({"cell": cell, "value": value, "low": None, "high": None,
                         "halfwidth": None, "rank_error": round(t)})  # fmt: skip
    return out
