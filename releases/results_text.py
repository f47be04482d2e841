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


def _exact(value: Any) -> Fraction:
    # stored as exact strings ("10/3", "0.0009765625"); *_float only as a fallback
    return Fraction(str(value)) if not isinstance(value, float) else Fraction(repr(value))


def noise_parameter(explanation: Mapping[str, Any], *, part: str = "") -> NoiseParameter:
    """The noise of one mechanism's stored explanation, converted to value units."""
    granularity = _exact(explanation.get("granularity", "1"))
    if explanation.get("noise") == "discrete_gaussian":
        symbol = "sigma"
        raw = explanation.get("sigma", explanation.get("sigma_float"))
    else:
        symbol = "scale"
        raw = explanation.get("scale", explanation.get("scale_float"))
    if raw is None:
        raise ValueError("the explanation names no noise parameter")
    return NoiseParameter(
        part=part,
        symbol=symbol,
        value=_exact(raw) * granularity,
        distribution=DISTRIBUTIONS.get(
            str(explanation.get("noise")), "discrete Laplace distribution"
        ),
        granularity=granularity,
    )


def noise_parameters(explanation: Mapping[str, Any], *, kind: str) -> list[NoiseParameter]:
    """Every noise draw of a statistic: a mean's sum and count parts, else the one."""
    if kind in ("mean", "grouped_mean"):
        return [
            noise_parameter(explanation["sum"], part="sum"),
            noise_parameter(explanation["count"], part="count"),
        ]
    if kind == "quantiles":
        return []  # permute-and-flip selects a candidate: no noise is added to a value
    if kind in ("stddev", "variance"):
        # the sum and the squares are noised in centred half-grid units (w = 2u - ...):
        # one unit is gamma/2 in value units, one unit of squares (gamma/2)**2
        # the count is in rows, whatever grid its explanation records (the sum's gamma)
        gamma = _exact(explanation["granularity"])
        return [
            noise_parameter({**explanation["count"], "granularity": 1}, part="count"),
            noise_parameter({**explanation["sum"], "granularity": gamma / 2}, part="sum"),
            noise_parameter(
                {**explanation["squares"], "granularity": gamma**2 / 4}, part="squares"
            ),
        ]
    return [noise_parameter(explanation)]


def noise_text(explanation: Mapping[str, Any], *, kind: str) -> str:
    """'scale 1,350', or for a mean 'sum: scale 2,690; count: scale 4'."""
    return "; ".join(p.text for p in noise_parameters(explanation, kind=kind))


def mechanism_name(code: str) -> str:
    """'Laplace' or 'Gaussian' in the active language (the code itself if unknown)."""
    names = {"laplace": pgettext("noise", "Laplace"), "gaussian": pgettext("noise", "Gaussian")}
    return names.get(code, code)
