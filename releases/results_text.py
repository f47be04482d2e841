"""A stored result's noise in the data's units, for every page that shows it.

Sums (and a mean's sum part) are noised on an integer grid of public
granularity gamma (DESIGN.md section 3), so the scale b or sigma stored in
their explanation counts grid steps. A person reads value units: the
parameter times gamma (a count's granularity is 1). The members' results page
(releases.presentation) and the public pages read the noise through here, so
both show the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, pgettext

from dpportal import formatting
from releases import kinds

DISTRIBUTIONS = {
    "discrete_gaussian": "discrete Gaussian distribution",
    "discrete_laplace": "discrete Laplace distribution",
}


@dataclass(frozen=True)
class NoiseParameter:
    """One noise distribution: its parameter ("scale" b or "sigma") in the data's units."""

    part: str  # "" for a statistic with one noise draw; "sum" / "count" for a mean
    symbol: str
    value: Fraction
    distribution: str
    granularity: Fraction

    @property
    def text(self) -> str:
        """'scale 1,350' or 'sum: sigma 2.5' (formatting.scale, 3 significant digits), in
        the active language."""
        symbol = {"scale": pgettext("noise", "scale"), "sigma": pgettext("noise", "sigma")}
        words = gettext("%(symbol)s %(value)s") % {
            "symbol": symbol.get(self.symbol, self.symbol),
            "value": formatting.scale(self.value),
        }
        if not self.part:
            return words
        parts = {
            "sum": pgettext("noise part", "sum"),
            "count": pgettext("noise part", "count"),
            "squares": pgettext("noise part", "squares"),
        }
        return gettext("%(part)s: %(words)s") % {
            "part": parts.get(self.part, self.part),
            "words": words,
        }


def noise_parameters(explanation: Mapping[str, Any], *, kind: str) -> list[NoiseParameter]:
    """Every noise draw of a statistic in its own unit, as its kind states them
    (releases.kinds: a mean's sum and count parts, a spread's three, a selection none)."""
    return [
        NoiseParameter(
            part=p.part,
            symbol=p.symbol,
            value=p.value,
            distribution=DISTRIBUTIONS.get(p.distribution, "discrete Laplace distribution"),
            granularity=p.factor,
        )
        for p in kinds.get(kind).noise_parts(dict(explanation))
    ]


def noise_text(explanation: Mapping[str, Any], *, kind: str) -> str:
    """'scale 1,350', or for a mean 'sum: scale 2,690; count: scale 4'."""
    return "; ".join(p.text for p in noise_parameters(explanation, kind=kind))


def noise_law(code: str) -> str:
    """The law a noise part is drawn from (a NoisePart's `distribution`), or the
    selection of a kind that draws no noise parameter, in the active language: the one
    label map every results table reads (the public page's words for the same laws)."""
    laws = {
        "discrete_laplace": gettext("discrete Laplace"),
        "discrete_gaussian": gettext("discrete Gaussian"),
        "permute_and_flip": gettext("exact permute-and-flip selection"),
        "above_threshold": gettext("AboveThreshold search with discrete Laplace noise"),
    }
    return laws.get(code) or mechanism_name(code)


def noise_summary(parameters: list[NoiseParameter], *, laws: list[str], mechanism: str) -> str:
    """'discrete Laplace noise, scale 26', 'discrete Laplace noise, sum: scale 2,690; count:
    scale 4', or for a selection without noise parts 'exact permute-and-flip selection'.

    `laws`: each parameter's law code (NoisePart.distribution), in order; `mechanism`:
    the result's mechanism code, named when there is no noise part."""
    if not parameters:
        return noise_law(mechanism)
    by_law: dict[str, list[str]] = {}
    for law, parameter in zip(laws, parameters, strict=True):
        by_law.setdefault(law, []).append(parameter.text)
    return "; ".join(
        gettext("%(mechanism)s noise, %(noise)s")
        % {"mechanism": noise_law(law), "noise": "; ".join(texts)}
        for law, texts in by_law.items()
    )


def result_noise_text(explanation: Mapping[str, Any], *, kind: str, mechanism: str) -> str:
    """A stored result's noise in words (noise_summary of its kind's noise parts)."""
    parts = kinds.get(kind).noise_parts(dict(explanation))
    return noise_summary(
        noise_parameters(explanation, kind=kind),
        laws=[p.distribution for p in parts],
        mechanism=mechanism,
    )


def mechanism_name(code: str) -> str:
    """'Laplace', 'Gaussian' or 'Permute-and-flip' in the active language (the code itself
    if unknown)."""
    names = {
        "laplace": pgettext("noise", "Laplace"),
        "gaussian": pgettext("noise", "Gaussian"),
        "permute_and_flip": pgettext("noise", "Permute-and-flip"),
        "above_threshold": pgettext("noise", "AboveThreshold"),
        "partition_selection": pgettext("noise", "Partition selection"),
    }
    return names.get(code, code)
