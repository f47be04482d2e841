"""Noisy results made readable: values with intervals recomputed from the stored explanation."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from dpportal.privacy.accuracy import mean_interval, result_halfwidth


def results_for_display(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per statistic: rows of (cell, noisy value, low, high) and the noise used.

    Intervals describe the noisy value before any post-processing; recomputed at
    the release's confidence from public parameters only.
    """
    confidence = payload["confidence"]
    out = []
    for entry in payload["statistics"]:
        explanation = entry["explanation"]
        item: dict[str, Any] = {
            "label": entry["label"],
            "kind": entry["kind"],
            "columns": entry["columns"],
            "epsilon": entry["epsilon"],
            "delta": entry["delta"],
            "mechanism": explanation.get("mechanism", payload["mechanism"]),
            "scale": explanation.get("scale_float") or explanation.get("sigma_float"),
            "scale_name": "sigma" if "sigma" in explanation else "scale",
            "rows": [],
            "halfwidth": None,
            "halfwidth_simultaneous": None,
            "argmax": entry.get("argmax"),
        }
        if entry["kind"] == "mean":
            estimate, low, high = mean_interval(explanation, confidence=confidence)
            item["rows"] = [{"cell": "Mean", "value": estimate, "low": low, "high": high}]
            item["scale"] = explanation["sum"].get("scale_float") or explanation["sum"].get(
                "sigma_float"
            )
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
                    {"cell": cell, "value": value, "low": number - h, "high": number + h}
                )
        out.append(item)
    return out
