"""Accuracy: half-widths of confidence intervals for the noise, per cell and simultaneous.

At confidence 1 - beta a noisy value y = x + Y has |Y| <= h with probability
>= 1 - beta, so [y - h, y + h] contains the true x. For k cells at once the
union bound gives each cell beta/k (Dwork & Roth 2014, Thm 3.8 for Laplace).

- continuous Laplace, scale b: Pr[|Y| >= t b] = exp(-t), so h = b ln(1/beta),
  simultaneous h = b ln(k/beta) (Dwork & Roth 2014, Fact 3.7, Thm 3.8);
- discrete Laplace (what is sampled): the smallest integer m with
  Pr[|Y| > m] = 2 a**(m+1) / (1 + a) <= beta/k, a = exp(-1/b);
- continuous Gaussian: h = sigma z, z the upper beta/(2k) normal quantile;
- discrete Gaussian (what is sampled): the smallest integer m with
  Pr[|Y| > m] <= beta/k (exact tail, dpportal.privacy.tails).

Intervals describe the noisy value before any post-processing (rounding,
clamping at 0, hiding small cells).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mean_pivot import mean_interval_from_explanation
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import check_cells, check_confidence, to_fraction
from dpportal.privacy.tails import dgauss_log_sf, dlap_tail, normal_upper_quantile

__all__ = [
    "laplace_halfwidth",
    "discrete_laplace_halfwidth",
    "gaussian_halfwidth",
    "discrete_gaussian_halfwidth",
    "noise_halfwidth",
    "result_halfwidth",
    "mean_interval_from_parts",
    "mean_interval",
]


def _positive(value: object, name: str) -> Fraction:
    x = to_fraction(value, name)
    if x <= 0:
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be > 0, got %(value)s"), name=name, value=repr(value)
        )
    return x


def _beta_per_cell(confidence: object, k: object) -> Fraction:
    return (1 - check_confidence(confidence)) / check_cells(k)


def laplace_halfwidth(scale: object, confidence: object, k: object = 1) -> float:
    """h = b ln(k / beta), beta = 1 - confidence (Dwork & Roth 2014, Thm 3.8; k = 1: Fact 3.7)."""
    b = _positive(scale, "scale")
    return float(b) * -math.log(float(_beta_per_cell(confidence, k)))


def discrete_laplace_halfwidth(scale: object, confidence: object, k: object = 1) -> int:
    """Smallest integer m >= 0 with Pr[|Y| > m] = 2 a**(m+1)/(1+a) <= beta/k, a = e**(-1/b).

    Solved in closed form, m + 1 >= b ln(2k / (beta (1 + a))), then checked
    against the exact tail in 50-digit arithmetic.
    """
    b = _positive(scale, "scale")
    target = _beta_per_cell(confidence, k)
    with localcontext() as ctx:
        ctx.prec = 50
        bd = Decimal(b.numerator) / Decimal(b.denominator)
        a = (-1 / bd).exp()
        tgt = Decimal(target.numerator) / Decimal(target.denominator)
        guess = bd * (2 / (tgt * (1 + a))).ln()
        m = max(0, int(guess.to_integral_value(rounding="ROUND_CEILING")) - 1)
        while m > 0 and dlap_tail(b, m - 1) <= tgt:
            m -= 1
        while dlap_tail(b, m) > tgt:
            m += 1
    return m


def gaussian_halfwidth(sigma: object, confidence: object, k: object = 1) -> float:
    """h = sigma z with Pr[N(0,1) > z] = beta/(2k): two-sided, union bound over k cells."""
    s = _positive(sigma, "sigma")
    return float(s) * normal_upper_quantile(float(_beta_per_cell(confidence, k)) / 2)


def discrete_gaussian_halfwidth(sigma: object, confidence: object, k: object = 1) -> int:
    """Smallest integer m >= 0 with Pr[|Y| > m] = 2 Pr[Y >= m+1] <= beta/k, Y discrete Gaussian."""
    s = _positive(sigma, "sigma")
    log_target = math.log(float(_beta_per_cell(confidence, k)))

    def too_wide(m: int) -> bool:  # True if m would miss more often than beta/k
        return math.log(2.0) + dgauss_log_sf(s, m + 1) > log_target

    m = max(0, math.floor(gaussian_halfwidth(s, confidence, k)))
    while m > 0 and not too_wide(m - 1):
        m -= 1
    while too_wide(m):
        m += 1
    return m


def noise_halfwidth(*, noise: str, parameter: object, confidence: object, k: object = 1) -> int:
    """Half-width in units of the sampled noise.

    noise: "discrete_laplace" (parameter = scale) or "discrete_gaussian" (parameter = sigma).
    """
    if noise == "discrete_laplace":
        return discrete_laplace_halfwidth(parameter, confidence, k)
    if noise == "discrete_gaussian":
        return discrete_gaussian_halfwidth(parameter, confidence, k)
    raise PrivacyParameterError(gettext_noop("unknown noise %(noise)s"), noise=repr(noise))


def spec_halfwidth(spec: NoiseSpec, confidence: object, k: int = 1) -> int:
    """Half-width in units of a NoiseSpec's noise at `confidence`, covering k values at once."""
    parameter = spec.scale if spec.mechanism == "laplace" else spec.sigma
    return noise_halfwidth(noise=spec.noise, parameter=parameter, confidence=confidence, k=k)


def explanation_halfwidth(explanation: Mapping[str, Any], confidence: object, k: int = 1) -> int:
    """spec_halfwidth from a stored NoiseSpec.describe() (its noise and scale or sigma)."""
    noise = explanation["noise"]
    key = "scale" if noise == "discrete_laplace" else "sigma"
    return noise_halfwidth(
        noise=noise, parameter=Fraction(explanation[key]), confidence=confidence, k=k
    )


def _explanation_halfwidth_units(
    explanation: Mapping[str, Any], confidence: object, simultaneous: bool
) -> int:
    k = explanation.get("cells", 1) if simultaneous else 1
    return explanation_halfwidth(explanation, confidence, k)


def result_halfwidth(
    explanation: Mapping[str, Any], *, confidence: object, simultaneous: bool = False
) -> float:
    """Half-width, in value units, of a stored result at any confidence, from its to_dict().

    Uses only the stored public parameters (noise, scale or sigma, cells,
    granularity). Per cell by default; simultaneous=True covers all cells at once
    (beta/k each). Sums: grid units times the granularity, plus the stored
    rounding_bound when there is one (noise.sum_noise), so the interval covers the
    clipped sum and not only the grid-rounded one. For a mean use
    `mean_interval`; for an argmax this is the half-width of each noisy count.
    """
    if explanation.get("statistic") == "mean":
        raise PrivacyParameterError(
            gettext_noop("a mean has an asymmetric interval: use mean_interval")
        )
    units = _explanation_halfwidth_units(explanation, confidence, simultaneous)
    rounding = Fraction(explanation.get("rounding_bound", "0"))
    return float(units * Fraction(explanation.get("granularity", "1")) + rounding)


def mean_interval_from_parts(
    *,
    noisy_sum_units: int,
    sum_halfwidth_units: int,
    noisy_count: int,
    count_halfwidth: int,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
) -> tuple[Fraction, Fraction, Fraction, bool]:
    """(estimate, low, high, count_nonpositive) for a mean, by interval arithmetic.

    The older, wider construction: means and grouped means use
    mean_pivot.mean_pivot_interval, and grouped means this only at a confidence
    too high for the pivot to certify (grouped_release.grouped_mean_cells).

    With the true sum in [a, b] = S +- hs and the true count in [c, d] =
    [max(N - hc, 1), N + hc] (a mean needs a count >= 1), the true mean S'/n'
    lies in [min(a/c, a/d), max(b/c, b/d)]; the interval is clamped to
    [lower, upper], where the clipped mean always lies. If d < 1 there is no
    information and the interval is [lower, upper]. Estimate: clamp(S / N) if
    N > 0; if the noisy count N <= 0 the estimate is the midpoint (lower + upper)/2
    and count_nonpositive is True (the dashboard should say "too few rows").
    """

    def clamp(x: Fraction) -> Fraction:
        return min(max(x, lower), upper)

    s = noisy_sum_units * granularity
    hs = sum_halfwidth_units * granularity
    if noisy_count > 0:
        estimate, nonpositive = clamp(s / noisy_count), False
    else:
        estimate, nonpositive = (lower + upper) / 2, True
    c = max(Fraction(noisy_count - count_halfwidth), Fraction(1))
    d = Fraction(noisy_count + count_halfwidth)
    if d < c:
        return estimate, lower, upper, nonpositive
    a, b = s - hs, s + hs
    low, high = clamp(min(a / c, a / d)), clamp(max(b / c, b / d))
    return estimate, low, high, nonpositive


def mean_interval(
    explanation: Mapping[str, Any], *, confidence: object
) -> tuple[float, float, float]:
    """(estimate, low, high) of a stored mean at any confidence, from its to_dict().

    The interval inverts the exact pivot g S^ - m N^ (dpportal.privacy.mean_pivot):
    coverage >= confidence, no union bound. It reads only the stored public
    parameters, so results stored before this method was adopted get it too
    (their noise, grid and bounds are all in the explanation).
    """
    estimate, low, high, _ = mean_interval_from_explanation(explanation, confidence=confidence)
    return float(estimate), float(low), float(high)
