"""A published statistic's noise in words and numbers (value units), for its public data.

English texts for the API and downloads, with the codes (`distribution`) and formatted
numbers (`value_text`) from which the page says the same in the reader's language
(releases.public.page_words).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from dpportal import formatting
from releases import stats_results


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("boolean is not a statistic value")
    return float(Decimal(value)) if isinstance(value, str) else float(value)


def _noise_part(explanation: dict) -> dict[str, Any]:
    """One noise distribution in words, its parameter converted to value units."""
    granularity = Decimal(str(explanation.get("granularity", "1")))
    if explanation.get("noise") == "discrete_gaussian":
        name = "discrete Gaussian distribution"
        symbol, raw = "sigma", explanation.get("sigma_float", explanation.get("sigma"))
        words = "parameter sigma (about its standard deviation)"
    else:
        name = "discrete Laplace distribution"
        symbol, raw = "scale", explanation.get("scale_float", explanation.get("scale"))
        words = "scale b"
    value = float(_number(raw)) * float(granularity) if raw is not None else None
    shown = formatting.scale(value) if value is not None else "not recorded"
    return {
        "name": name,
        "distribution": explanation.get("noise") or "discrete_laplace",
        "parameter": symbol,
        "value": value,
        "value_text": shown if value is not None else "",
        "granularity": formatting.exact(granularity),
        "parameter_text": f"{words} = {shown}",
    }


def noise(explanation: dict, *, kind: str) -> dict[str, Any]:
    """The noise distribution(s) in words and their parameter (in value units)."""
    if kind in stats_results.NEW_KINDS and kind not in ("grouped_sum", "grouped_mean"):
        return _noise_new_kind(explanation, kind=kind)
    if kind in ("mean", "grouped_mean"):
        total = _noise_part(explanation["sum"])
        count = _noise_part(explanation["count"])
        return {
            "name": total["name"],
            "parameter": total["parameter"],
            "sum": total,
            "count": count,
            "parameter_text": (f"sum: {total['parameter_text']}; count: {count['parameter_text']}"),
        }
    return _noise_part(explanation)


def _noise_new_kind(explanation: dict, *, kind: str) -> dict[str, Any]:
    """Quantiles: the selection, no noise parameter; spread: its three noised parts."""
    if kind == "quantiles":
        m = formatting.integer(explanation.get("candidates"))
        return {
            "name": "exact permute-and-flip selection",
            "distribution": "permute_and_flip",
            "candidates_text": m,
            "parameter": None,
            "value": None,
            "granularity": "1",
            "parameter_text": f"permute-and-flip over {m} public candidates (no added noise)",
        }
    gamma = Decimal(str(explanation["granularity"]))
    parts = {  # rows, whatever grid the count's explanation records (the sum's)
        "count": _noise_part({**explanation["count"], "granularity": "1"}),
        "sum": _noise_part({**explanation["sum"], "granularity": str(gamma / 2)}),
        "squares": _noise_part({**explanation["squares"], "granularity": str(gamma * gamma / 4)}),
    }
    return {
        "name": parts["squares"]["name"],
        "parameter": parts["squares"]["parameter"],
        **parts,
        "parameter_text": "; ".join(f"{k}: {v['parameter_text']}" for k, v in parts.items()),
    }
