"""Noisy results made readable for the project's members: values with intervals, in data units.

Intervals are recomputed from the stored explanation at the release's
confidence (public parameters only), and the noise parameters are converted
to the data's units by releases.results_text, as on the public page: a sum's
scale is shown in the column's units, never in grid steps.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from dpportal.privacy.accuracy import mean_interval, result_halfwidth
from releases import stats_results
from releases.results_text import mechanism_name, noise_parameters


def _mean_row(explanation: dict[str, Any], *, confidence: object) -> dict[str, Any]:
    estimate, low, high = mean_interval(explanation, confidence=confidence)
    # the interval is asymmetric: its larger side fixes the precision shown
    halfwidth = max(high - estimate, estimate - low)
    return {"cell": "Mean", "value": estimate, "low": low, "high": high, "halfwidth": halfwidth}


def _new_kind_rows(entry: dict[str, Any], *, confidence: object) -> list[dict[str, Any]]:
    cells = stats_results.statistic_intervals(entry, confidence=confidence)
    rows = []
    for label, cell in zip(entry["cells"], cells, strict=True):
        halfwidth = cell["halfwidth"]
        if halfwidth is None and cell["low"] is not None:
            halfwidth = max(cell["high"] - cell["value"], cell["value"] - cell["low"])
        rows.append({"cell": label, **cell, "halfwidth": halfwidth})
    return rows


def results_for_display(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per statistic: rows of (cell, noisy value, low, high) and the noise used.

    Intervals describe the noisy value before any post-processing; recomputed at
    the release's confidence from public parameters only. Numbers stay exact
    here; the template formats them (dpformat).
    """
    confidence = payload["confidence"]
    out = []
    for entry in payload["statistics"]:
        explanation = entry["explanation"]
        noise = noise_parameters(explanation, kind=entry["kind"])
        item: dict[str, Any] = {
            "label": entry["label"],
            "kind": entry["kind"],
            "columns": entry["columns"],
            "epsilon": entry["epsilon"],
            "delta": entry["delta"],
            "mechanism": mechanism_name(explanation.get("mechanism", payload["mechanism"])),
            "noise": noise,
            "noise_text": "; ".join(p.text for p in noise),
            "rows": [],
            "halfwidth": None,
            "halfwidth_simultaneous": None,
            "argmax": entry.get("argmax"),
        }
        if entry["kind"] in stats_results.NEW_KINDS:
            item["rows"] = _new_kind_rows(entry, confidence=confidence)
            item["rank_errors"] = entry["kind"] == "quantiles"
        elif entry["kind"] == "mean":
            item["rows"] = [_mean_row(explanation, confidence=confidence)]
        elif entry["kind"] == "argmax":
            item["halfwidth"] = result_halfwidth(explanation, confidence=confidence)
        else:
            h = result_halfwidth(explanation, confidence=confidence)
            item["halfwidth"] = h
            if len(entry["values"]) > 1:
                item["halfwidth_simultaneous"] = result_halfwidth(
                    explanation, confidence=confidence, simultaneous=True
                )
            for cell, value in zip(entry["cells"], entry["values"], strict=False):
                number = float(Decimal(str(value)))
                item["rows"].append(
                    {"cell": cell, "value": value, "low": number - h, "high": number + h,
                     "halfwidth": h}
                )  # fmt: skip
        out.append(item)
    return out
