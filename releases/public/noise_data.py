"""A published statistic's noise in words and numbers (value units), for its public data.

English texts for the API and downloads, with the codes (`distribution`) and formatted
numbers (`value_text`) from which the page says the same in the reader's language
(releases.public.page_words).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpportal import formatting
from dpportal.privacy.params import exact_str
from releases import kinds
from releases.kinds import NoisePart


def _noise_part(part: NoisePart) -> dict[str, Any]:
    """One noise draw in words, its parameter in its own unit (the kind's NoisePart)."""
    if part.distribution == "discrete_gaussian":
        name, symbol = "discrete Gaussian distribution", "sigma"
        words = "parameter sigma (about its standard deviation)"
    else:
        name, symbol, words = "discrete Laplace distribution", "scale", "scale b"
    value = float(part.value)
    shown = formatting.scale(value)
    return {
        "name": name,
        "distribution": part.distribution,
        "parameter": symbol,
        "value": value,
        # the parameter exactly ("p/q" where it has no finite decimal), for the record
        "value_exact": exact_str(part.value),
        "unit": part.unit,
        "value_text": shown,
        "granularity": formatting.exact(part.factor),
        "parameter_text": f"{words} = {shown}",
    }


def noise(explanation: dict, *, kind: str) -> dict[str, Any]:
    """The noise distribution(s) in words and their parameter, each in its own unit."""
    parts = kinds.get(kind).noise_parts(explanation)
    if not parts and explanation.get("mechanism") == "above_threshold":
        return _search(explanation)
    if not parts:
        return _selection(explanation)
    if len(parts) == 1 and not parts[0].part:
        return _noise_part(parts[0])
    named = {p.part: _noise_part(p) for p in parts}
    first = named[parts[0].part]
    return {
        "name": first["name"],
        "parameter": first["parameter"],
        **named,
        "parameter_text": "; ".join(f"{k}: {v['parameter_text']}" for k, v in named.items()),
    }


def _selection(explanation: dict) -> dict[str, Any]:
    """A selection among public candidates (quantiles): no noise parameter."""
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


def _search(explanation: dict) -> dict[str, Any]:
    """A private bounds search: discrete Laplace noise on the counts of values it compares,
    none of them published, so no noise parameter of a published value (and, for an
    extrapolated bound, the noise on the published count of values)."""
    scale = formatting.scale(float(Fraction(explanation["scale"])))
    text = (
        f"AboveThreshold: discrete Laplace noise of scale b = {scale} on the threshold and "
        "on each count of values compared (none is published)"
    )
    count = None
    if "count_scale" in explanation:
        count = formatting.scale(float(Fraction(explanation["count_scale"])))
        text += f"; the count of values: discrete Laplace noise of scale b = {count}"
    return {
        "name": "AboveThreshold search",
        "distribution": "above_threshold",
        "parameter": None,
        "value": None,
        "scale_text": scale,
        "count_scale_text": count,
        "granularity": "1",
        "parameter_text": text,
    }
