#!/usr/bin/env python3
"""Check a dpportal release yourself: recompute every interval it states, and its project's total.

Usage:
    python dpportal_verify.py record.json [--registry registry.json] [--quiet]
    (a path or an http(s) URL for each)

What it does, from public documents only (no data, no dpportal code):

1. The release record (`/p/<project>/releases/<id>/record.json`) states, for every
   statistic, the noisy values, the noise (its law and parameter) and, at every
   confidence level and for per-cell and simultaneous intervals, each cell's
   half-width and interval. This script recomputes each of them from the statistic's
   stored `explanation` (the public noise parameters, the noisy parts) and its
   published values, with the same formulas dpportal uses (written out below with
   numpy and scipy only), and prints each recomputed number beside the published one:
   OK or MISMATCH.
2. With `--registry` (the project's epsilon registry, `/registry/<project>.json`) it
   recomputes the project's total privacy loss: the privacy-loss-distribution (PLD)
   epsilon at the cap's delta over every mechanism record listed (dp_accounting, the
   pessimistic connect-the-dots discretisation the registry names), the Renyi-DP
   epsilon and the basic sums, and the stated spend (the smallest valid one).

What "matches" means (TOLERANCES): numbers published as floats agree to a relative
1e-9 (absolute 1e-12 near zero), far finer than the two significant digits of a
half-width a page shows; exact strings (epsilons, deltas, noisy integers, exact
decimals) agree exactly; the registry's tight epsilons agree within its
discretisation (the accountant's own resolution). Anything this script cannot
recompute is printed as "not checked: <reason>", never as a pass.

Exit status: 0 when every check matches, 1 when any does not, 2 when a document
cannot be read.

Requirements: Python 3.11+, numpy, scipy and dp-accounting at the versions the
product pins (the page /verify/ names them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import urllib.request
from dataclasses import dataclass, field
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import signal, special

SCRIPT_VERSION = "1"

#: how close a recomputed float must be to the published one (math.isclose)
REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-12
#: the interval kinds every statistic states at every level
INTERVAL_KINDS = ("per_cell", "simultaneous")
#: the largest document read from a URL
MAX_DOCUMENT_BYTES = 512 * 1024 * 1024


# =====================================================================================
# Reporting
# =====================================================================================


@dataclass
class Report:
    """Every check made, printed as it is made; counts for the summary."""

    quiet: bool = False
    ok: int = 0
    mismatches: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text)

    def heading(self, text: str) -> None:
        if not self.quiet:
            print()
            print(text)

    def outcome(self, label: str, recomputed: Any, published: Any, same: bool) -> bool:
        if same:
            self.ok += 1
            self.say(
                f"  OK        {label}: recomputed {_show(recomputed)}, published {_show(published)}"
            )
        else:
            self.mismatches.append(label)
            print(
                f"  MISMATCH  {label}: recomputed {_show(recomputed)}, published {_show(published)}"
            )
        return same

    def number(self, label: str, recomputed: Any, published: Any) -> bool:
        """Floats (or None) compared at REL_TOLERANCE / ABS_TOLERANCE."""
        return self.outcome(label, recomputed, published, close(recomputed, published))

    def exact(self, label: str, recomputed: Any, published: Any) -> bool:
        """Exact values (strings, integers, Fractions) compared exactly."""
        return self.outcome(label, recomputed, published, recomputed == published)

    def within(
        self, label: str, recomputed: float | None, published: float | None, tolerance: float
    ) -> bool:
        same = (recomputed is None and published is None) or (
            recomputed is not None
            and published is not None
            and abs(recomputed - published) <= tolerance
        )
        return self.outcome(f"{label} (within {tolerance:g})", recomputed, published, same)

    def not_checked(self, label: str, reason: str) -> None:
        self.unchecked.append(f"{label}: {reason}")
        print(f"  NOT CHECKED {label}: not checked: {reason}")


def _show(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Fraction):
        return exact_str(value)
    if isinstance(value, list) and len(value) > 8:
        return "[" + ", ".join(_show(v) for v in value[:8]) + f", ... ({len(value)} items)]"
    return json.dumps(value) if isinstance(value, str | list | dict) else repr(value)


def close(a: Any, b: Any) -> bool:
    """Both None, or two finite numbers equal at REL_TOLERANCE (ABS_TOLERANCE near 0)."""
    if a is None or b is None:
        return a is None and b is None
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if math.isnan(x) or math.isnan(y):
        return False
    return math.isclose(x, y, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


# =====================================================================================
# Exact numbers (as the product writes them: decimals, or p/q)
# =====================================================================================


def frac(value: Any) -> Fraction:
    """An exact Fraction of a stored value (a float through its shortest repr)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(str(value).strip())


def exact_str(value: Fraction | int) -> str:
    """A finite decimal when one exists, else "p/q" (the product's exact strings)."""
    x = Fraction(value)
    if x.denominator == 1:
        return str(x.numerator)
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    digits = max(twos, fives)
    scaled = abs(x.numerator) * (10**digits // x.denominator)
    sign = "-" if x < 0 else ""
    whole, part = divmod(scaled, 10**digits)
    return f"{sign}{whole}.{part:0{digits}d}".rstrip("0").rstrip(".")


def decimal_exponent(x: Fraction) -> int:
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def round_up_sig(x: Fraction, digits: int) -> Fraction:
    unit = Fraction(10) ** (decimal_exponent(x) - digits + 1)
    return -(-x // unit) * unit


def round_down_sig(x: Fraction, digits: int) -> Fraction:
    unit = Fraction(10) ** (decimal_exponent(x) - digits + 1)
    return (x // unit) * unit


_EXACT = Context(prec=60)


def decimal_text(value: Decimal) -> str:
    """An amount as the registry writes it: no trailing zeros, no exponent."""
    if value == 0:
        return "0"
    return format(value.normalize(_EXACT), "f")


def fraction_decimal(value: Fraction) -> Decimal:
    return _EXACT.divide(Decimal(value.numerator), Decimal(value.denominator))


# =====================================================================================
# Tails and half-widths of the sampled noise (discrete Laplace, discrete Gaussian)
# =====================================================================================

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_DIRECT_SIGMA = 100.0


def _dec(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def log_ndtr(x: float) -> float:
    """log Phi(x), accurate in both tails (asymptotic series below -20)."""
    if x > 0:
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x >= -20:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    x2 = x * x
    term, total = 1.0, 1.0
    for k in range(1, 13):
        term *= -(2 * k - 1) / x2
        total += term
    return -0.5 * x2 - math.log(-x) - _LOG_SQRT_2PI + math.log(total)


def normal_upper_quantile(p: float) -> float:
    """z with Pr[N(0,1) > z] = p."""
    if p < 0.5:
        return -NormalDist().inv_cdf(p)
    return NormalDist().inv_cdf(1.0 - p)


def dlap_tail(scale: Fraction, m: int) -> Decimal:
    """Pr[|Y| > m] = 2 a**(m+1) / (1 + a), a = exp(-1/b), in 50-digit decimals."""
    with localcontext() as ctx:
        ctx.prec = 50
        a = (-1 / _dec(scale)).exp()
        return 2 * ((-(m + 1) / _dec(scale)).exp()) / (1 + a)


def _log_upper_sum(sigma: float, n: int) -> float:
    """log sum_{y >= n} exp(-y**2 / (2 sigma**2)) (direct below sigma 100, else Euler-Maclaurin)."""
    s2 = sigma * sigma
    if sigma < _DIRECT_SIGMA:
        count = int(12 * sigma) + 40
        total = math.fsum(math.exp(-(2 * n * j + j * j) / (2 * s2)) for j in range(count))
        return -n * n / (2 * s2) + math.log(total)
    u = n / sigma
    mills = math.exp(log_ndtr(-u) + 0.5 * u * u + math.log(sigma) + _LOG_SQRT_2PI)
    r = n / s2
    correction = (
        0.5
        + r / 12
        + (3 * r / s2 - r**3) / 720
        + (r**5 - 10 * r**3 / s2 + 15 * r / (s2 * s2)) / 30240
    )
    return -0.5 * u * u + math.log(mills + correction)


def _log_normalizer(sigma: float) -> float:
    if sigma < _DIRECT_SIGMA:
        return math.log(1.0 + 2.0 * math.exp(_log_upper_sum(sigma, 1)))
    return math.log(sigma) + _LOG_SQRT_2PI


def dgauss_log_sf(sigma: Fraction | float, n: int) -> float:
    """log Pr[Y >= n], Y discrete Gaussian with parameter sigma."""
    sg = float(sigma)
    log_z = _log_normalizer(sg)
    if n >= 1:
        return _log_upper_sum(sg, n) - log_z
    return math.log1p(-math.exp(_log_upper_sum(sg, 1 - n) - log_z))


def _beta_per_cell(confidence: Fraction, k: int) -> Fraction:
    return (1 - confidence) / k


def gaussian_halfwidth(sigma: Fraction, confidence: Fraction, k: int = 1) -> float:
    return float(sigma) * normal_upper_quantile(float(_beta_per_cell(confidence, k)) / 2)


@lru_cache(maxsize=4096)
def discrete_laplace_halfwidth(scale: Fraction, confidence: Fraction, k: int = 1) -> int:
    """Smallest integer m with Pr[|Y| > m] <= beta/k (closed-form guess, exact check)."""
    target = _beta_per_cell(confidence, k)
    with localcontext() as ctx:
        ctx.prec = 50
        bd = Decimal(scale.numerator) / Decimal(scale.denominator)
        a = (-1 / bd).exp()
        tgt = Decimal(target.numerator) / Decimal(target.denominator)
        guess = bd * (2 / (tgt * (1 + a))).ln()
        m = max(0, int(guess.to_integral_value(rounding="ROUND_CEILING")) - 1)
        while m > 0 and dlap_tail(scale, m - 1) <= tgt:
            m -= 1
        while dlap_tail(scale, m) > tgt:
            m += 1
    return m


@lru_cache(maxsize=4096)
def discrete_gaussian_halfwidth(sigma: Fraction, confidence: Fraction, k: int = 1) -> int:
    """Smallest integer m with 2 Pr[Y >= m+1] <= beta/k."""
    log_target = math.log(float(_beta_per_cell(confidence, k)))

    def too_wide(m: int) -> bool:
        return math.log(2.0) + dgauss_log_sf(sigma, m + 1) > log_target

    m = max(0, math.floor(gaussian_halfwidth(sigma, confidence, k)))
    while m > 0 and not too_wide(m - 1):
        m -= 1
    while too_wide(m):
        m += 1
    return m


def noise_halfwidth(noise: str, parameter: Fraction, confidence: Fraction, k: int = 1) -> int:
    if noise == "discrete_laplace":
        return discrete_laplace_halfwidth(parameter, confidence, k)
    if noise == "discrete_gaussian":
        return discrete_gaussian_halfwidth(parameter, confidence, k)
    raise ValueError(f"unknown noise {noise!r}")


def explanation_halfwidth(explanation: dict, confidence: Fraction, k: int = 1) -> int:
    noise = explanation["noise"]
    key = "scale" if noise == "discrete_laplace" else "sigma"
    return noise_halfwidth(noise, frac(explanation[key]), confidence, k)


def result_halfwidth(explanation: dict, confidence: Fraction, simultaneous: bool) -> float:
    """Value units: grid units times the granularity, plus the stored rounding bound."""
    k = int(explanation.get("cells", 1)) if simultaneous else 1
    units = explanation_halfwidth(explanation, confidence, k)
    rounding = frac(explanation.get("rounding_bound", "0"))
    return float(units * frac(explanation.get("granularity", "1")) + rounding)


# =====================================================================================
# A mean's interval: the exact pivot g S - m N (means, grouped means, spreads' parts)
# =====================================================================================

PIECES = 64
_TAIL = 1e-13
_FLOAT_MARGIN = 1e-9
_PIVOT_DIRECT_SIGMA = 100
_MAX_COUNT_PARAMETER = 4000


class TooCoarse(ValueError):
    """The certified margins cannot reach this confidence (the product's fallback applies)."""


@dataclass(frozen=True)
class NoiseLaw:
    noise: str
    parameter: Fraction

    @classmethod
    def of_explanation(cls, explanation: dict) -> NoiseLaw:
        noise = explanation["noise"]
        key = "scale" if noise == "discrete_laplace" else "sigma"
        return cls(noise, frac(explanation[key]))

    def pmf_table(self) -> tuple[np.ndarray, np.ndarray]:
        p = float(self.parameter)
        if self.noise == "discrete_laplace":
            reach = math.ceil(p * math.log(2 / _TAIL)) + 1
            ys = np.arange(-reach, reach + 1)
            a = math.exp(-1 / p)
            return ys, (1 - a) / (1 + a) * np.exp(-np.abs(ys) / p)
        reach = math.ceil(8 * p) + 2
        ys = np.arange(-reach, reach + 1)
        weights = np.exp(-(ys.astype(np.float64) ** 2) / (2 * p * p))
        wide = np.arange(-(math.ceil(40 * p) + 2), math.ceil(40 * p) + 3, dtype=np.float64)
        return ys, weights / np.exp(-(wide**2) / (2 * p * p)).sum()

    def max_mass(self) -> float:
        p = float(self.parameter)
        if self.noise == "discrete_laplace":
            return math.tanh(1 / (2 * p))
        return 1.0 / (p * math.sqrt(2 * math.pi)) + 1.0 / (p * p) if p >= 1 else 1.0

    def window(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        p = float(self.parameter)
        if self.noise == "discrete_laplace":
            out = self._dlap_cdf(k2, p) - self._dlap_cdf(k1 - 1, p)
        elif p < _PIVOT_DIRECT_SIGMA:
            ys, pmf = self.pmf_table()
            cdf = np.concatenate(([0.0], np.cumsum(pmf)))
            lo = np.clip(k1 - ys[0], 0, ys.size)
            hi = np.clip(k2 - ys[0] + 1, 0, ys.size)
            out = cdf[hi.astype(np.int64)] - cdf[lo.astype(np.int64)]
        else:
            out = special.ndtr((k2 + 0.5) / p) - special.ndtr((k1 - 0.5) / p) - 0.1 / (p * p)
        return np.where(k2 >= k1, np.maximum(out, 0.0), 0.0)

    def quantile(self, beta: float) -> int:
        target = 1 - beta + _FLOAT_MARGIN

        def inside(m: int) -> bool:
            return float(self.window(np.array([-m]), np.array([m]))[0]) >= target

        hi = 1
        while not inside(hi):
            hi *= 2
        lo = -1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if inside(mid) else (mid, hi)
        return hi

    @staticmethod
    def _dlap_cdf(k: np.ndarray, scale: float) -> np.ndarray:
        a = math.exp(-1 / scale)
        neg = np.exp(np.minimum(k, 0) / scale) / (1 + a)
        pos = 1 - np.exp(-(np.maximum(k, 0) + 1) / scale) / (1 + a)
        return np.where(k < 0, neg, pos)


def pivot_reaches(sum_law: NoiseLaw, count_law: NoiseLaw, beta: Fraction) -> bool:
    if float(count_law.parameter) > _MAX_COUNT_PARAMETER:
        return True
    return 1 - float(beta) + _FLOAT_MARGIN + 2 * sum_law.max_mass() < 1


@lru_cache(maxsize=4096)
def pivot_quantile(
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    centre: Fraction,
    spread: Fraction,
    beta: Fraction,
) -> Fraction:
    """The smallest q (1e-7 relative) with Pr[|g Y_s - c Y_c| + w |Y_c| <= q] >= 1 - beta."""
    g, c, w = float(granularity), float(centre), float(spread)
    if float(count_law.parameter) > _MAX_COUNT_PARAMETER:
        half = float(beta) / 2
        return Fraction(g * sum_law.quantile(half) + (c + w) * count_law.quantile(half))
    ys, pmf = count_law.pmf_table()
    y = ys.astype(np.float64)
    target = 1 - float(beta) + _FLOAT_MARGIN + 2 * sum_law.max_mass()
    if target >= 1:
        raise TooCoarse("the mean's sum noise is too coarse for this confidence")

    def coverage(q: float) -> float:
        room = q - w * np.abs(y)
        k1 = np.ceil((c * y - room) / g)
        k2 = np.floor((c * y + room) / g)
        return float(np.dot(pmf, sum_law.window(k1, k2)))

    hi = g + (abs(c) + w) * float(np.abs(y).max()) + 1.0
    for _ in range(200):
        if coverage(hi) >= target:
            break
        hi *= 2
    else:
        raise TooCoarse("no half-width reaches this confidence")
    lo = 0.0
    while hi - lo > 1e-7 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if coverage(mid) >= target else (mid, hi)
    return Fraction(hi)


def grid_bounds(lower: Fraction, upper: Fraction, g: Fraction) -> tuple[int, int]:
    return math.ceil(lower / g), math.floor(upper / g)


def rounding_gap(lower: Fraction, upper: Fraction, g: Fraction) -> Fraction:
    lo_units, hi_units = grid_bounds(lower, upper, g)
    return max(g / 2, lo_units * g - lower, upper - hi_units * g)


def _pieces(lo_m: Fraction, hi_m: Fraction) -> tuple[Fraction, Fraction, Fraction]:
    a1 = max(abs(lo_m), abs(hi_m))
    a0 = Fraction(0) if lo_m <= 0 <= hi_m else min(abs(lo_m), abs(hi_m))
    return a0, a1, (a1 - a0) / PIECES


def _solve_pivot(t: Fraction, nhat: int, q: Fraction) -> tuple[Fraction, Fraction] | None:
    if nhat == 0:
        return (Fraction(-(10**30)), Fraction(10**30)) if abs(t) <= q else None
    ends = ((t - q) / nhat, (t + q) / nhat)
    return min(ends), max(ends)


def _abs_min(interval: tuple[Fraction, Fraction]) -> Fraction:
    a, b = interval
    return Fraction(0) if a <= 0 <= b else min(abs(a), abs(b))


def _abs_max(interval: tuple[Fraction, Fraction]) -> Fraction:
    return max(abs(interval[0]), abs(interval[1]))


@dataclass
class _Layout:
    laws: tuple[NoiseLaw, NoiseLaw]
    granularity: Fraction
    beta: Fraction
    lo_m: Fraction
    hi_m: Fraction
    a0: Fraction
    a1: Fraction
    width: Fraction
    widest: Fraction
    gap: Fraction
    pieces: dict = field(default_factory=dict)

    def piece(self, j: int) -> tuple[Fraction, Fraction, Fraction]:
        if j not in self.pieces:
            p0, p1, half = self.a0 + j * self.width, self.a0 + (j + 1) * self.width, self.width / 2
            q = pivot_quantile(*self.laws, self.granularity, p0 + half, half, self.beta)
            self.pieces[j] = (p0, p1, q)
        return self.pieces[j]


@lru_cache(maxsize=1024)
def _layout(
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    g: Fraction,
    lower: Fraction,
    upper: Fraction,
    beta: Fraction,
) -> _Layout:
    lo_u, hi_u = grid_bounds(lower, upper, g)
    lo_m, hi_m = lo_u * g, hi_u * g
    a0, a1, width = _pieces(lo_m, hi_m)
    widest = pivot_quantile(sum_law, count_law, g, (a0 + a1) / 2, (a1 - a0) / 2, beta)
    return _Layout(
        (sum_law, count_law),
        g,
        beta,
        lo_m,
        hi_m,
        a0,
        a1,
        width,
        widest,
        rounding_gap(lower, upper, g),
    )


def mean_pivot_interval(
    *,
    noisy_sum_units: int,
    noisy_count: int,
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
    confidence: Fraction,
) -> tuple[Fraction, Fraction, Fraction, bool]:
    """(estimate, low, high, count_nonpositive): the hull of {m : |g S - m N| <= q(m)}."""
    beta = 1 - confidence
    g = granularity
    layout = _layout(sum_law, count_law, g, lower, upper, beta)
    lo_m, hi_m, a0, a1, width = layout.lo_m, layout.hi_m, layout.a0, layout.a1, layout.width
    t = noisy_sum_units * g
    if noisy_count > 0:
        estimate, nonpositive = min(max(t / noisy_count, lower), upper), False
    else:
        estimate, nonpositive = (lower + upper) / 2, True
    reach = _solve_pivot(t, noisy_count, layout.widest * (1 + Fraction(1, 10**6)))
    low, high = estimate, estimate

    def part(j: int, sign: int) -> tuple[Fraction, Fraction] | None:
        p0, p1, q = layout.piece(j)
        s0, s1 = (p0, p1) if sign > 0 else (-p1, -p0)
        s0, s1 = max(s0, lo_m), min(s1, hi_m)
        if s0 > s1:
            return None
        solved = _solve_pivot(t, noisy_count, q)
        if solved is None:
            return None
        s0, s1 = max(s0, solved[0]), min(s1, solved[1])
        return (s0, s1) if s0 <= s1 else None

    if reach is not None and width > 0:
        first = max(0, math.floor((max(_abs_min(reach), a0) - a0) / width) - 1)
        last = min(PIECES - 1, math.floor((min(_abs_max(reach), a1) - a0) / width) + 1)
        for sign in (1, -1):
            top_m, bottom_m = (hi_m, lo_m) if sign > 0 else (-lo_m, -hi_m)
            start = max(first, math.ceil((bottom_m - a0) / width) - 1)
            stop = min(last, math.floor((top_m - a0) / width))
            upward = range(start, stop + 1)[::sign]
            bottom = next((c for j in upward if (c := part(j, sign)) is not None), None)
            if bottom is not None:
                top = next(c for j in reversed(upward) if (c := part(j, sign)) is not None)
                low, high = min(low, bottom[0]), max(high, top[1])
    elif reach is not None:
        low, high = min(low, lo_m), max(high, hi_m)
    return estimate, max(low - layout.gap, lower), min(high + layout.gap, upper), nonpositive


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
    """Interval arithmetic on both parts (the grouped mean's fallback at a tiny beta)."""

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
    return estimate, clamp(min(a / c, a / d)), clamp(max(b / c, b / d)), nonpositive


def mean_interval(explanation: dict, confidence: Fraction) -> tuple[float, float, float]:
    """(estimate, low, high) of a stored mean."""
    s, c = explanation["sum"], explanation["count"]
    estimate, low, high, _ = mean_pivot_interval(
        noisy_sum_units=int(s["values"][0]),
        noisy_count=int(c["values"][0]),
        sum_law=NoiseLaw.of_explanation(s),
        count_law=NoiseLaw.of_explanation(c),
        granularity=frac(s["granularity"]),
        lower=frac(explanation["lower"]),
        upper=frac(explanation["upper"]),
        confidence=confidence,
    )
    return float(estimate), float(low), float(high)


def grouped_mean_intervals(
    explanation: dict, confidence: Fraction, simultaneous: bool
) -> list[tuple[float, float, float]]:
    """Each group's pivot at 1 - beta (or 1 - beta/G), interval arithmetic past its reach."""
    k = int(explanation["groups"]) if simultaneous else 1
    conf = 1 - (1 - confidence) / k
    beta = 1 - conf
    sum_law = NoiseLaw.of_explanation(explanation["sum"])
    count_law = NoiseLaw.of_explanation(explanation["count"])
    g = frac(explanation["sum"]["granularity"])
    lower, upper = frac(explanation["lower"]), frac(explanation["upper"])
    sums, counts = explanation["sum"]["values"], explanation["count"]["values"]
    out = []
    if not pivot_reaches(sum_law, count_law, beta):
        part = 1 - beta / 2
        hs = noise_halfwidth(sum_law.noise, sum_law.parameter, part)
        hc = noise_halfwidth(count_law.noise, count_law.parameter, part)
        cells = [
            mean_interval_from_parts(
                noisy_sum_units=int(s),
                sum_halfwidth_units=hs,
                noisy_count=int(c),
                count_halfwidth=hc,
                granularity=g,
                lower=lower,
                upper=upper,
            )
            for s, c in zip(sums, counts, strict=True)
        ]
    else:
        cells = [
            mean_pivot_interval(
                noisy_sum_units=int(s),
                noisy_count=int(c),
                sum_law=sum_law,
                count_law=count_law,
                granularity=g,
                lower=lower,
                upper=upper,
                confidence=conf,
            )
            for s, c in zip(sums, counts, strict=True)
        ]
    for e, a, b, _ in cells:
        out.append((float(e), float(a), float(b)))
    return out


# =====================================================================================
# A spread's interval: the joint law of its three noisy parts (count, sum, squares)
# =====================================================================================

SPLIT = (Fraction(3, 20), Fraction(7, 10), Fraction(3, 20))
V_PIECES = 32
M_STEPS = 24
MAX_STEPS = 8
COUNT_BINS = 256
SUM_BINS = 160
_SPREAD_TAIL = 1e-10
SPREAD_DIGITS = 12
SQRT_DIGITS = 12


def _clamp(x: Fraction, top: Fraction) -> Fraction:
    return min(max(x, Fraction(0)), top)


def _reach(law: NoiseLaw) -> int:
    p = float(law.parameter)
    if law.noise == "discrete_laplace":
        return math.ceil(p * math.log(2 / _SPREAD_TAIL)) + 1
    return math.ceil(7 * p) + 2


@lru_cache(maxsize=64)
def _bins(law: NoiseLaw, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    reach = _reach(law)
    edges = np.unique(np.round(np.linspace(-reach, reach + 1, bins + 1)).astype(np.int64))
    first, last = edges[:-1], edges[1:] - 1
    mass = law.window(first.astype(np.float64), last.astype(np.float64))
    centre = (first + last) / 2
    half = (last - first) / 2
    top = np.maximum(np.abs(first), np.abs(last)).astype(np.float64)
    return centre, half, top, mass


def _spread_solve(coverage, target: float, guess: float) -> float:
    lo, hi = 0.0, 4 * guess
    c_lo, c_hi = 0.0, coverage(hi)
    for _ in range(200):
        if c_hi >= target:
            break
        lo, c_lo, hi = hi, c_hi, hi * 2
        c_hi = coverage(hi)
    else:
        raise TooCoarse("no half-width reaches this confidence")
    goal = math.log(1 - target)
    for step in range(100):
        if hi - lo <= 1e-6 * hi:
            break
        g_lo, g_hi = math.log(max(1 - c_lo, 1e-300)), math.log(max(1 - c_hi, 1e-300))
        t = (lo + hi) / 2
        if step % 3 != 2 and g_lo > g_hi:
            t = lo + (hi - lo) * (g_lo - goal) / (g_lo - g_hi)
            t = min(max(t, lo + 1e-7 * hi), hi - 1e-7 * hi)
        for probe in (t - 4e-7 * hi, t + 4e-7 * hi) if step % 3 != 2 else (t,):
            if not lo < probe < hi:
                continue
            c = coverage(probe)
            if c >= target:
                hi, c_hi = probe, c
            else:
                lo, c_lo = probe, c
    return hi


@lru_cache(maxsize=8192)
def lower_quantile(
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    piece: int,
    m_steps: tuple[int, int],
    beta: Fraction,
) -> Fraction:
    count_law, sum_law, squares_law = laws
    top = w_bound * w_bound
    if piece < 0:
        v0, wv = top / 2, top / 2
    else:
        wv = top / V_PIECES / 2
        v0 = (2 * piece + 1) * wv
    a, b = (k * w_bound / M_STEPS for k in m_steps)
    m0, wm = (a + b) / 2, (b - a) / 2
    c0, wa = m0 * m0 - v0, wm * (b + m0) + wv
    nc, nh, ntop, nmass = _bins(count_law, COUNT_BINS)
    sc, sh, stop, smass = _bins(sum_law, SUM_BINS)
    keep_n, keep_s = nmass > 0, smass > 0
    nc, nh, ntop, nmass = nc[keep_n], nh[keep_n], ntop[keep_n], nmass[keep_n]
    sc, sh, stop, smass = sc[keep_s], sh[keep_s], stop[keep_s], smass[keep_s]
    x = 2 * m0 * sc[None, :] - c0 * nc[:, None]
    slack = 2 * wm * stop[None, :] + wa * ntop[:, None] + 2 * m0 * sh[None, :]
    slack = slack + abs(c0) * nh[:, None]
    weight = nmass[:, None] * smass[None, :]
    target = 1 - 2 * float(beta) + _FLOAT_MARGIN + 2 * squares_law.max_mass()
    if target >= 1:
        raise TooCoarse("the variance's noise is too coarse for this confidence")

    def coverage(t: float) -> float:
        room = t - slack
        k1, k2 = np.ceil(x - room), np.floor(x + room)
        return float((weight * squares_law.window(k1, k2)).sum())

    spread = math.sqrt(
        float(squares_law.parameter) ** 2
        + (2 * b * float(sum_law.parameter)) ** 2
        + ((abs(c0) + wa) * float(count_law.parameter)) ** 2
    )
    return Fraction(_spread_solve(coverage, target, max(spread, 1.0)))


def _ratio_interval(
    total: int,
    count: int,
    total_law: NoiseLaw,
    count_law: NoiseLaw,
    lower: Fraction,
    upper: Fraction,
    beta: Fraction,
) -> tuple[Fraction, Fraction]:
    try:
        _, low, high, _ = mean_pivot_interval(
            noisy_sum_units=total,
            noisy_count=count,
            sum_law=total_law,
            count_law=count_law,
            granularity=Fraction(1),
            lower=lower,
            upper=upper,
            confidence=1 - beta,
        )
        return low, high
    except TooCoarse:
        pass
    ht, hn = total_law.quantile(float(beta) / 2), count_law.quantile(float(beta) / 2)
    if count + hn < 1:
        return lower, upper
    ratios = [
        Fraction(t, c) for t in (total - ht, total + ht) for c in (max(count - hn, 1), count + hn)
    ]
    return max(min(ratios), lower), min(max(ratios), upper)


def _lower_end(
    d0: Fraction,
    n: int,
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    m_range: tuple[Fraction, Fraction],
    beta: Fraction,
) -> Fraction:
    top = Fraction(w_bound * w_bound)
    a, b = m_range
    first = math.floor(a * M_STEPS / w_bound)
    last = max(math.ceil(b * M_STEPS / w_bound), first + 1)
    size = -(-(last - first) // MAX_STEPS)
    steps = [(j, min(j + size, last)) for j in range(first, last, size)]

    def q_of(piece: int) -> Fraction:
        return max(lower_quantile(laws, w_bound, piece, step, beta) for step in steps)

    q_all = lower_quantile(laws, w_bound, -1, (first, last), beta)
    width = top / V_PIECES
    start = max(Fraction(0), (d0 - q_all) / n)
    for piece in range(min(math.floor(start / width), V_PIECES - 1), V_PIECES):
        q = min(q_all, q_of(piece))
        v = max(piece * width, (d0 - q) / n)
        if v <= (piece + 1) * width:
            return v
    return top


@lru_cache(maxsize=4096)
def variance_interval(
    noisy_count: int,
    noisy_sum: int,
    noisy_squares: int,
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    confidence: Fraction,
) -> tuple[Fraction, Fraction, Fraction, str | None]:
    """(estimate, low, high, clamped) of the variance in w**2 units."""
    beta = 1 - confidence
    top = Fraction(w_bound * w_bound)
    if noisy_count < 1:
        return top / 2, Fraction(0), top, None
    n = noisy_count
    raw = Fraction(noisy_squares, n) - Fraction(noisy_sum, n) ** 2
    estimate = _clamp(raw, top)
    clamped = "low" if raw < 0 else "high" if raw > top else None
    count_law, sum_law, squares_law = laws
    beta_lo, beta_hi, beta_m = (beta * share for share in SPLIT)
    squares = (noisy_squares, n, squares_law, count_law, Fraction(0), top)
    u_hi = _ratio_interval(*squares, 2 * beta_hi)[1]
    m_lo, m_hi = _ratio_interval(
        noisy_sum, n, sum_law, count_law, Fraction(-w_bound), Fraction(w_bound), beta_m
    )
    far = max(abs(m_lo), abs(m_hi))
    near = Fraction(0) if m_lo <= 0 <= m_hi else min(abs(m_lo), abs(m_hi))
    d0 = Fraction(noisy_squares) - Fraction(noisy_sum * noisy_sum, n)
    try:
        if float(count_law.parameter) > _MAX_COUNT_PARAMETER:
            raise TooCoarse("the count's table would be too long")
        low = _lower_end(d0, n, laws, w_bound, (near, far), beta_lo)
    except TooCoarse:
        low = _ratio_interval(*squares, 2 * beta_lo)[0] - far * far
    low = min(_clamp(low, top), estimate)
    high = max(_clamp(u_hi - near * near, top), estimate)
    return estimate, low, high, clamped


def _sqrt_scale(x: Fraction) -> int:
    magnitude = (x.numerator.bit_length() - x.denominator.bit_length()) * 0.30103 / 2
    return max(0, SQRT_DIGITS - math.floor(magnitude) - 1)


def sqrt_floor(x: Fraction) -> Fraction:
    if x <= 0:
        return Fraction(0)
    k = _sqrt_scale(x)
    scaled = x * 10 ** (2 * k)
    return Fraction(math.isqrt(scaled.numerator // scaled.denominator), 10**k)


def sqrt_ceil(x: Fraction) -> Fraction:
    if x <= 0:
        return Fraction(0)
    k = _sqrt_scale(x)
    scaled = x * 10 ** (2 * k)
    top = -(-scaled.numerator // scaled.denominator)
    root = math.isqrt(top)
    if root * root < top:
        root += 1
    return Fraction(root, 10**k)


def _down(x: Fraction) -> Fraction:
    return round_down_sig(x, SPREAD_DIGITS) if x > 0 else Fraction(0)


def _up(x: Fraction) -> Fraction:
    return round_up_sig(x, SPREAD_DIGITS) if x > 0 else Fraction(0)


def spread_cells(explanation: dict, confidence: Fraction, simultaneous: bool) -> list[dict]:
    """Per cell: variance and sd (value units, exact strings) with intervals."""
    keys = ("count", "sum", "squares")
    laws = tuple(NoiseLaw.of_explanation(explanation[key]) for key in keys)
    counts, sums, squares = (explanation[key]["values"] for key in keys)
    conf = confidence
    if simultaneous:
        conf = 1 - (1 - conf) / len(counts)
    factor = frac(explanation["granularity"]) ** 2 / 4
    out = []
    for n, s, q in zip(counts, sums, squares, strict=True):
        estimate, low, high, clamped = variance_interval(
            int(n), int(s), int(q), laws, int(explanation["w_bound"]), conf
        )
        variance, lo, hi = estimate * factor, low * factor, high * factor
        out.append(
            {
                "variance": exact_str(_down(variance)),
                "variance_interval": [exact_str(_down(lo)), exact_str(_up(hi))],
                "sd": exact_str(sqrt_floor(variance)),
                "sd_interval": [exact_str(sqrt_floor(lo)), exact_str(sqrt_ceil(hi))],
                "clamped": clamped,
            }
        )
    return out


# =====================================================================================
# Quantiles: permute-and-flip's exact worst-case tail, the joint recursion's bounds
# =====================================================================================


def worst_case_miss(p: float, m: int) -> float:
    if m <= 1 or p <= 0:
        return 0.0
    if p >= 1:
        return 1 - 1 / m
    tails = math.exp(m * math.log1p(-p))
    return max(0.0, 1 - (1 - tails) / (m * p))


@lru_cache(maxsize=4096)
def utility_error_bound(
    epsilon: Fraction, sensitivity: Fraction, candidates: int, beta: float
) -> float:
    eps = float(epsilon)
    delta_u = float(sensitivity)
    if candidates <= 1:
        return 0.0
    scale = 2 * delta_u / eps
    lo, hi = 0.0, 1.0
    if worst_case_miss(hi, candidates) <= beta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if worst_case_miss(mid, candidates) <= beta:
            lo = mid
        else:
            hi = mid
    p = lo
    if p <= 0:
        return scale * math.log(candidates / beta)
    return scale * -math.log(p) * (1 + 1e-12)


def _joint_tree(
    qs: tuple[Fraction, ...],
) -> list[tuple[int, int, int | None, int | None, Fraction]]:
    """(index, level, lo, hi, local) for sorted distinct quantiles, parents first."""
    nodes: list = []

    def visit(first: int, stop: int, lo: int | None, hi: int | None, level: int) -> None:
        if first >= stop:
            return
        mid = first + (stop - first) // 2
        q_lo = Fraction(0) if lo is None else qs[lo]
        q_hi = Fraction(1) if hi is None else qs[hi]
        nodes.append((mid, level, lo, hi, (qs[mid] - q_lo) / (q_hi - q_lo)))
        visit(first, mid, lo, mid, level + 1)
        visit(mid + 1, stop, mid, hi, level + 1)

    visit(0, len(qs), None, None, 0)
    return nodes


def joint_rank_error_bounds(
    *,
    epsilon: Fraction,
    quantiles: list[Fraction],
    bound: int,
    candidates: int,
    confidence: Fraction,
    simultaneous: bool,
) -> list[float]:
    qs = tuple(sorted(quantiles))
    beta = float(1 - confidence)
    levels = len(qs).bit_length()
    level_epsilon = epsilon / levels
    tree = _joint_tree(qs)
    by_index = {node[0]: node for node in tree}
    paths: dict[int, set[int]] = {}
    for index, _, lo, hi, _ in tree:
        path = {index}
        for parent in (lo, hi):
            if parent is not None:
                path |= paths[parent]
        paths[index] = path
    bounds: dict[int, float] = {}
    for index, *_ in tree:
        share = beta / (len(tree) if simultaneous else len(paths[index]))
        taus: dict[int, float] = {}

        def tau(node: tuple, taus: dict = taus, share: float = share) -> float:
            if node[0] not in taus:
                taus[node[0]] = utility_error_bound(
                    level_epsilon, max(node[4], 1 - node[4]) * bound, candidates, share
                )
            return taus[node[0]]

        def total(node: tuple, tau=tau) -> float:
            t = tau(node)
            for parent, weight in ((node[2], 1 - node[4]), (node[3], node[4])):
                if parent is not None:
                    t += float(weight) * total(by_index[parent], tau)
            return t

        bounds[index] = total(by_index[index])
    return [bounds[qs.index(q)] for q in quantiles]


def quantile_rank_errors(
    explanation: dict, confidence: Fraction, simultaneous: bool
) -> list[float]:
    parts = explanation["quantiles"]
    bound = int(explanation["contribution_bound"])
    m = int(explanation["candidates"])
    if explanation.get("mechanism", "permute_and_flip") == "joint_permute_and_flip":
        return joint_rank_error_bounds(
            epsilon=frac(explanation["epsilon"]),
            quantiles=[frac(p["quantile"]) for p in parts],
            bound=bound,
            candidates=m,
            confidence=confidence,
            simultaneous=simultaneous,
        )
    k = len(parts) if simultaneous else 1
    out = []
    for part in parts:
        q = frac(part["quantile"])
        out.append(
            utility_error_bound(
                frac(part["epsilon"]), max(q, 1 - q) * bound, m, float(1 - confidence) / k
            )
        )
    return out


def value_range_from_released(
    *,
    quantiles: list[Fraction],
    values: list[Any],
    rank_errors: list[float],
    n: int,
    first: Fraction,
    last: Fraction,
    step: Fraction,
) -> list[tuple[float, float]]:
    qs = [float(q) for q in quantiles]
    vs = sorted(float(frac(v)) for v in values)
    lo, hi, st, count = float(first), float(last), float(step), float(n)
    order = sorted(range(len(qs)), key=lambda i: qs[i])
    knots_q = [0.0, *(qs[i] for i in order), 1.0]
    knots_v = [lo, *vs, hi]
    out = []
    for q, t in zip(qs, rank_errors, strict=True):
        d = float(t) / count
        low = float(np.interp(max(0.0, q - d), knots_q, knots_v)) - st
        high = float(np.interp(min(1.0, q + d), knots_q, knots_v)) + st
        out.append((max(lo, low), min(hi, high)))
    return out


# =====================================================================================
# Cross-tabulations: every cell of a table has the same known variance (ResidualPlanner)
# =====================================================================================


def crosstab_cell_variance(plan: dict, marginal: tuple[int, ...]) -> Fraction:
    """V_S = sum over residuals A within S of s_A prod_{A} (n_i - 1)/n_i prod_{S - A} 1/n_i**2."""
    sizes, inside = plan["sizes"], set(marginal)
    out = Fraction(0)
    for residual in plan["residuals"]:
        a = tuple(residual["marginal"])
        if set(a) <= inside:
            term = frac(residual["variance"])
            for i in a:
                term *= Fraction(sizes[i] - 1, sizes[i])
            for i in inside - set(a):
                term /= sizes[i] * sizes[i]
            out += term
    return out


def crosstab_halfwidth(
    plan: dict, marginal: tuple[int, ...], confidence: Fraction, cells: int
) -> float:
    beta = 1 - float(confidence)
    return normal_upper_quantile(beta / (2 * max(1, cells))) * math.sqrt(
        crosstab_cell_variance(plan, marginal)
    )


def _helmert(n: int) -> np.ndarray:
    """The (n - 1) x n integer Helmert contrasts: rows (1, ..., 1, -j, 0, ...)."""
    h = np.zeros((n - 1, n), dtype=np.int64)
    for j in range(1, n):
        h[j - 1, :j] = 1
        h[j - 1, j] = -j
    return h


def _along(array: np.ndarray, axis: int, matrix: np.ndarray) -> np.ndarray:
    moved = np.moveaxis(array, axis, -1)
    return np.moveaxis(moved @ matrix.T, -1, axis)


def _expand(
    term: np.ndarray, a: tuple[int, ...], marginal: tuple[int, ...], sizes: list[int]
) -> np.ndarray:
    out = np.asarray(term)
    for i in marginal:
        if i not in a:
            out = np.multiply.outer(out, np.full(sizes[i], 1.0 / sizes[i], dtype=out.dtype))
    order = list(a) + [i for i in marginal if i not in a]
    return np.transpose(out, [order.index(i) for i in marginal]) if order else out


def crosstab_table(explanation: dict, marginal: tuple[int, ...]) -> np.ndarray:
    """A published table rebuilt from the noisy residual measurements (Helmert units):
    x_S = sum over A within S of (kron_A H^T diag(1/||h_j||^2) kron_{S - A} 1/n_i) y_A."""
    sizes = list(explanation["plan"]["sizes"])
    out = np.zeros(tuple(sizes[i] for i in marginal), dtype=np.float64)
    for measured in explanation["measurements"]:
        a = tuple(measured["marginal"])
        if not set(a) <= set(marginal):
            continue
        y = np.asarray(measured["values"], dtype=np.int64).reshape(tuple(sizes[i] - 1 for i in a))
        term = y.astype(np.float64)
        for axis, i in enumerate(a):
            j = np.arange(1, sizes[i], dtype=np.int64)
            back = _helmert(sizes[i]).T / (j * (j + 1))
            term = _along(term, axis, back.astype(np.float64))
        out += _expand(term, a, marginal, sizes)
    return out


# =====================================================================================
# What a kind states per cell (value, interval) and the display of counts
# =====================================================================================


@dataclass(frozen=True)
class Cell:
    value: float
    low: float | None = None
    high: float | None = None
    halfwidth: float | None = None
    rank_error: float | None = None
    about_low: float | None = None
    about_high: float | None = None


def clamped_at_zero(cell: Cell) -> Cell:
    """A count shown rounded and clamped at 0, with its interval widened to agree."""
    projected = max(0.0, cell.value)
    shown = float(max(0, round(cell.value)))
    if cell.halfwidth is not None:
        h = cell.halfwidth + abs(shown - projected)
        return Cell(shown, max(0.0, shown - h), shown + h, cell.halfwidth)
    if cell.low is None or cell.high is None:
        return Cell(shown)
    low, high = max(0.0, cell.low), max(0.0, cell.high)
    return Cell(shown, min(low, shown), max(high, shown))


def shown_as(cell: Cell, shown: float) -> Cell:
    if cell.halfwidth is None:
        return clamped_at_zero(cell)
    h = cell.halfwidth + abs(shown - cell.value)
    return Cell(float(shown), max(0.0, shown - h), shown + h, cell.halfwidth)


def uninformative(
    noisy_count: int,
    count_explanation: dict,
    confidence: Fraction,
    low: float,
    high: float,
    lowest: float,
    highest: float,
) -> bool:
    if noisy_count <= explanation_halfwidth(count_explanation, confidence):
        return True
    slack = 1e-9 * max(1.0, abs(highest - lowest))
    return low <= lowest + slack and high >= highest - slack


class Unchecked(Exception):
    """A part of a statistic this script does not recompute (the reason is the message)."""


def symmetric_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    h = result_halfwidth(stat["explanation"], level, simultaneous)
    return [Cell(v, v - h, v + h, h) for v in stat["values"]]


def keys_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    noise = (stat.get("explanation") or {}).get("noise")
    if not noise:
        return []
    values = stat["values"]
    h = result_halfwidth({**noise, "cells": max(1, len(values))}, level, simultaneous)
    return [Cell(v, v - h, v + h, h) for v in values]


def mean_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    estimate, low, high = mean_interval(stat["explanation"], level)
    return [Cell(estimate, low, high)]


def grouped_mean_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    return [
        Cell(e, a, b)
        for e, a, b in grouped_mean_intervals(stat["explanation"], level, simultaneous)
    ]


def spread_cells_of(key: str):
    def cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
        return [
            Cell(
                float(frac(c[key])),
                float(frac(c[f"{key}_interval"][0])),
                float(frac(c[f"{key}_interval"][1])),
            )
            for c in spread_cells(stat["explanation"], level, simultaneous)
        ]

    return cells


def crosstab_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    plan = stat["explanation"]["plan"]
    values = stat["values"]
    k = len(values) if simultaneous else 1
    out: list[Cell] = []
    for table in stat.get("tables") or stat["explanation"].get("tables") or []:
        h = crosstab_halfwidth(plan, tuple(table["marginal"]), level, k)
        size = math.prod(table["shape"])
        start = int(table["start"]) if "start" in table else len(out)
        out.extend(Cell(v, v - h, v + h, h) for v in values[start : start + size])
    return out


def quantile_cells(stat: dict, level: Fraction, simultaneous: bool) -> list[Cell]:
    explanation = stat["explanation"]
    errors = quantile_rank_errors(explanation, level, simultaneous)
    values = stat["values"]
    basis = stat.get("about_basis")
    basis = tuple(basis) if basis else None
    released = stat.get("interval_confidence")
    joint = explanation.get("mechanism") == "joint_permute_and_flip"
    if released is None and joint:
        raise Unchecked("the record does not state the confidence its intervals were released at")
    if released is not None:
        k = len(values)
        miss, wanted = 1 - frac(released), 1 - level
        valid = (k * miss if simultaneous else miss) <= wanted
        cells = []
        for value, t, q, i in zip(values, errors, stat["quantiles"], range(k), strict=True):
            if basis is not None and basis[0] == "noisy_count":
                t = min(t, float(max(frac(q), 1 - frac(q))) * basis[1])
            low = high = None
            if valid:  # the released interval itself: a draw, stated as published
                low, high = _released_end(stat, i)
            cells.append(Cell(value, low, high, rank_error=t))
        return cells
    if basis is None:
        return [Cell(v, rank_error=t) for v, t in zip(values, errors, strict=True)]
    step = _quantile_step(stat)
    ranges = value_range_from_released(
        quantiles=[frac(q) for q in stat["quantiles"]],
        values=stat["exact_values"],
        rank_errors=errors,
        n=basis[1],
        first=frac(explanation["grid_first"]),
        last=frac(explanation["grid_last"]),
        step=step,
    )
    return [
        Cell(v, rank_error=t, about_low=lo, about_high=hi)
        for v, t, (lo, hi) in zip(values, errors, ranges, strict=True)
    ]


def _released_end(stat: dict, i: int) -> tuple[float | None, float | None]:
    """A released quantile interval's ends as the record states them at its released level."""
    level = exact_str(frac(stat["interval_confidence"]))
    iv = (stat["intervals"].get(level) or {}).get("per_cell") or {}
    if not iv:
        for value in stat["intervals"].values():
            iv = value["per_cell"]
            break
    return iv["lower"][i], iv["upper"][i]


def _quantile_step(stat: dict) -> Fraction:
    """The grid's largest step (stored, or from the frozen grid, or the mean step)."""
    if stat.get("grid_step") is not None:
        return frac(stat["grid_step"])
    grid = (stat.get("domain") or {}).get("grid") or {}
    if "edges" in grid:
        edges = [frac(e) for e in grid["edges"]]
        return max((b - a for a, b in zip(edges, edges[1:], strict=False)), default=Fraction(0))
    if grid.get("step") is not None and not grid.get("open"):
        lower, upper, step = frac(grid["lower"]), frac(grid["upper"]), frac(grid["step"])
        if (upper - lower) % step == 0:
            return step
        raise Unchecked("the frozen grid's last step (not stated in the record)")
    explanation = stat["explanation"]
    m = int(explanation["candidates"])
    span = frac(explanation["grid_last"]) - frac(explanation["grid_first"])
    return span / (m - 1) if m > 1 else Fraction(0)


#: kind -> (cells at a level, counts: shown rounded and clamped at 0)
KINDS: dict[str, tuple[Any, bool]] = {
    "count": (symmetric_cells, True),
    "histogram": (symmetric_cells, True),
    "rows_per_person": (symmetric_cells, True),
    "sum": (symmetric_cells, False),
    "grouped_sum": (symmetric_cells, False),
    "mean": (mean_cells, False),
    "grouped_mean": (grouped_mean_cells, False),
    "stddev": (spread_cells_of("sd"), False),
    "variance": (spread_cells_of("variance"), False),
    "quantiles": (quantile_cells, False),
    "crosstab": (crosstab_cells, True),
    "keys": (keys_cells, True),
    "argmax": (lambda stat, level, simultaneous: [], False),
    "bounds": (lambda stat, level, simultaneous: [], False),
}


# =====================================================================================
# Checking one statistic
# =====================================================================================


def _expected(cells: list[Cell], display: list[int] | None, clampable: bool) -> dict[str, list]:
    out: dict[str, list] = {
        "halfwidths": [c.halfwidth for c in cells],
        "lower": [c.low for c in cells],
        "upper": [c.high for c in cells],
    }
    if any(c.rank_error is not None for c in cells):
        out["rank_errors"] = [c.rank_error for c in cells]
        out["about_lower"] = [c.about_low for c in cells]
        out["about_upper"] = [c.about_high for c in cells]
    if clampable:
        shown = (
            [shown_as(c, d) for c, d in zip(cells, display, strict=True)]
            if display is not None
            else [clamped_at_zero(c) for c in cells]
        )
        out["rounded_lower"] = [c.low for c in shown]
        out["rounded_upper"] = [c.high for c in shown]
    return out


def check_statistic(stat: dict, levels: list[str], report: Report) -> None:
    kind = stat.get("kind")
    name = f"statistic {stat.get('position')} ({kind}: {stat.get('label')})"
    report.heading(name)
    if kind not in KINDS:
        report.not_checked(
            name, f"kind {kind!r} is unknown to this script (version {SCRIPT_VERSION})"
        )
        return
    if not isinstance(stat.get("explanation"), dict) or not stat["explanation"]:
        report.not_checked(name, "the record holds no explanation for it")
        return
    try:
        check_values(stat, name, report)
        check_noise(stat, name, report)
        check_epsilon(stat, name, report)
        check_privacy(stat, name, report)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        report.not_checked(
            f"{name} values/noise/epsilon", f"the record's fields do not parse ({exc!r})"
        )
    cells_of, clampable = KINDS[kind]
    display = stat.get("display_values") if kind == "crosstab" else None
    intervals = stat.get("intervals") or {}
    for level in levels:
        published_level = intervals.get(level)
        if published_level is None:
            report.not_checked(f"{name} at {level}", "the record states no intervals at this level")
            continue
        for interval_kind in INTERVAL_KINDS:
            label = f"{name} {level} {interval_kind}"
            published = published_level.get(interval_kind)
            if published is None:
                report.not_checked(label, "the record states no such intervals")
                continue
            try:
                cells = cells_of(stat, frac(level), interval_kind == "simultaneous")
            except Unchecked as exc:
                report.not_checked(label, str(exc))
                continue
            except TooCoarse as exc:
                report.not_checked(label, f"the certified construction does not reach it ({exc})")
                continue
            except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError) as exc:
                report.not_checked(label, f"the explanation does not parse ({exc!r})")
                continue
            expected = _expected(cells, display, clampable)
            if kind == "crosstab" and "display_values" not in stat:
                for key in ("rounded_lower", "rounded_upper"):
                    expected.pop(key, None)
                    report.not_checked(
                        f"{label} {key}", "the record does not state the whole-number display"
                    )
            for key, values in expected.items():
                got = published.get(key)
                if got is None or len(got) != len(values):
                    report.exact(f"{label} {key}", values, got)
                    continue
                for i, (mine, theirs) in enumerate(zip(values, got, strict=True)):
                    report.number(f"{label} {key}[{i}]", mine, theirs)
            extra = sorted(set(published) - set(expected))
            for key in extra:
                report.not_checked(f"{label} {key}", "not a field this script recomputes")
    check_uninformative(stat, name, report)


def check_values(stat: dict, name: str, report: Report) -> None:
    """The published values against the noisy parts in the explanation (exact)."""
    kind, explanation = stat["kind"], stat["explanation"]
    exact_values = stat.get("exact_values") or []
    floats = stat.get("values") or []
    for i, (f, e) in enumerate(zip(floats, exact_values, strict=False)):
        if kind not in ("mean", "grouped_mean"):
            report.number(f"{name} value[{i}] as a number", float(frac(e)), f)
    if kind in ("count", "histogram", "rows_per_person"):
        report.exact(
            f"{name} noisy values",
            [int(v) for v in explanation["values"]],
            [int(frac(v)) for v in exact_values],
        )
    elif kind in ("sum", "grouped_sum"):
        g = frac(explanation["granularity"])
        report.exact(
            f"{name} values = noisy grid units x granularity",
            [exact_str(int(u) * g) for u in explanation["values"]],
            [exact_str(frac(v)) for v in exact_values],
        )
    elif kind == "mean":
        lower, upper = frac(explanation["lower"]), frac(explanation["upper"])
        g = frac(explanation["sum"]["granularity"])
        s, n = int(explanation["sum"]["values"][0]), int(explanation["count"]["values"][0])
        mine = min(max(s * g / n, lower), upper) if n > 0 else (lower + upper) / 2
        report.number(
            f"{name} estimate = clamp(g S / N)", float(mine), floats[0] if floats else None
        )
    elif kind == "grouped_mean":
        lower, upper = frac(explanation["lower"]), frac(explanation["upper"])
        g = frac(explanation["sum"]["granularity"])
        for i, (s, n) in enumerate(
            zip(explanation["sum"]["values"], explanation["count"]["values"], strict=True)
        ):
            mine = (
                min(max(int(s) * g / int(n), lower), upper) if int(n) > 0 else (lower + upper) / 2
            )
            report.number(
                f"{name} estimate[{i}] = clamp(g S / N)",
                float(mine),
                floats[i] if i < len(floats) else None,
            )
    elif kind in ("stddev", "variance"):
        key = "sd" if kind == "stddev" else "variance"
        stored = frac(explanation.get("confidence") or "0.95")
        mine = [c[key] for c in spread_cells(explanation, stored, False)]
        report.exact(
            f"{name} values from the noisy count, sum and squares",
            mine,
            [exact_str(frac(v)) for v in exact_values],
        )
    elif kind == "crosstab":
        tables = explanation.get("tables") or []
        flat = [float(v) for t in tables for v in np.asarray(t["values"], dtype=float).reshape(-1)]
        report.exact(f"{name} values = the explanation's tables", flat, [float(v) for v in floats])
        rebuilt = [
            float(v)
            for t in tables
            for v in crosstab_table(explanation, tuple(t["marginal"])).reshape(-1)
        ]
        for i, (mine, theirs) in enumerate(zip(rebuilt, floats, strict=True)):
            report.number(f"{name} value[{i}] rebuilt from the residual measurements", mine, theirs)
        plan = explanation["plan"]
        bound = int(plan["contribution_bound"])
        rho = (
            bound
            * bound
            * sum(
                (
                    math.prod(
                        (Fraction(plan["sizes"][i] - 1, plan["sizes"][i]) for i in r["marginal"]),
                        start=Fraction(1),
                    )
                    / (2 * frac(r["variance"]))
                    for r in plan["residuals"]
                ),
                start=Fraction(0),
            )
        )
        report.exact(
            f"{name} zCDP rho of the residual variances",
            exact_str(rho),
            exact_str(frac(plan["rho"])),
        )
        charged = 1 / (2 * frac(plan["sigma"]) ** 2)
        report.exact(
            f"{name} charged rho = 1 / (2 sigma^2)",
            exact_str(charged),
            exact_str(frac(plan["rho_charged"])),
        )
        report.outcome(
            f"{name} the measurements' rho is within the charged rho",
            exact_str(rho),
            exact_str(charged),
            rho <= charged,
        )
    elif kind == "quantiles":
        mine = [exact_str(frac(p["value"])) for p in explanation["quantiles"]]
        report.exact(
            f"{name} values = the selected candidates",
            mine,
            [exact_str(frac(v)) for v in exact_values],
        )
        if stat.get("interval_confidence") is not None:
            report.not_checked(
                f"{name} the released intervals' ends",
                "draws of the mechanism: checked only that each level states them where they "
                "hold (none above the released confidence)",
            )
    elif kind == "keys":
        check_keys(stat, name, report)
    elif kind == "bounds":
        check_bounds(stat, name, report)
    elif kind == "argmax":
        report.not_checked(f"{name} selected category", "a selection: nothing to recompute")


def laplace_tail(scale: Fraction, m: int) -> float:
    """P[Y >= m] for Y ~ DLap(scale), integer m."""
    a = math.exp(-1.0 / float(scale))
    if m >= 1:
        return math.exp(-m / float(scale)) / (1.0 + a)
    return 1.0 - math.exp(-(1 - m) / float(scale)) / (1.0 + a)


def laplace_threshold(eps: Fraction, dlt: Fraction, keys: int) -> int:
    """The smallest tau with 1 - (1 - P[1 + Y >= tau])^keys <= delta, Y ~ DLap(keys / eps)."""
    scale = Fraction(keys) / eps
    target = float(dlt) * (1 - 1e-9)

    def ok(tau: int) -> bool:
        tail = laplace_tail(scale, tau - 1)
        return (-math.expm1(keys * math.log1p(-tail)) if tail < 1 else 1.0) <= target

    high = 1 + max(1, int(float(scale)))
    while not ok(high):
        high *= 2
    low = 1
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return low


def check_keys(stat: dict, name: str, report: Report) -> None:
    """Keys found in the data: the threshold a key's noisy count had to reach (Laplace
    thresholding: recomputed), and every published count at or above it."""
    ex = stat["explanation"]
    mechanism = ex.get("mechanism")
    threshold = ex.get("threshold")
    if mechanism == "laplace_threshold":
        keys = int(ex["keys_per_person"])
        report.exact(
            f"{name} noise scale = keys per person / epsilon",
            exact_str(Fraction(keys) / frac(ex["epsilon"])),
            exact_str(frac(ex["scale"])),
        )
        report.exact(
            f"{name} threshold (a new key published with probability <= delta)",
            laplace_threshold(frac(ex["epsilon"]), frac(ex["delta"]), keys),
            threshold,
        )
    elif threshold is not None:
        report.not_checked(
            f"{name} threshold", f"the {mechanism} calibration (a joint PLD analysis) is not ported"
        )
    if threshold is not None and stat.get("values"):
        report.outcome(
            f"{name} every published count reached the threshold",
            min(stat["values"]),
            threshold,
            min(stat["values"]) >= threshold,
        )


def check_bounds(stat: dict, name: str, report: Report) -> None:
    """At most N values beyond each bound: N = outside + 2 m from the public search grid."""
    explanation = stat["explanation"]
    ends = explanation["ends"]
    per_end = frac(explanation["epsilon"]) / (2 if ends == "both" else 1)
    bound = int(explanation["contribution_bound"])
    scale = Fraction(2 * bound) / per_end
    report.exact(
        f"{name} noise scale 2 L / epsilon per end",
        exact_str(scale),
        exact_str(frac(explanation["scale"])),
    )
    beta = 1 - frac(explanation["confidence"])
    target = Decimal(beta.numerator) / Decimal(beta.denominator) / 2
    steps = int(explanation["steps"])
    m = 0
    while dlap_tail(scale, m) / 2 * (steps + 1) > target:
        m += 1
    report.exact(
        f"{name} at most N values beyond each bound",
        int(explanation["outside"]) + 2 * m,
        int(explanation["outside_at_most"]),
    )
    published = stat.get("bounds") or {}
    for end in ("lower", "upper"):
        if end in published:
            found = explanation.get(end) or {}
            mine = None if found.get("reached_limit") else found.get("value")
            report.exact(f"{name} {end} bound", mine, published[end])


def _noise_parts(stat: dict) -> list[tuple[str, str, Fraction]]:
    """(part, law, parameter in value units) of each noise draw, as the kind states them."""
    kind, ex = stat["kind"], stat["explanation"]

    def one(e: dict, part: str, factor: Fraction) -> tuple[str, str, Fraction]:
        law = e.get("noise") or "discrete_laplace"
        key = "sigma" if law == "discrete_gaussian" else "scale"
        return part, law, frac(e[key]) * factor

    if kind in ("count", "histogram", "rows_per_person", "argmax"):
        return [one(ex, "", Fraction(1))]
    if kind in ("sum", "grouped_sum"):
        return [one(ex, "", frac(ex.get("granularity", "1")))]
    if kind in ("mean", "grouped_mean"):
        return [
            one(ex["sum"], "sum", frac(ex["sum"].get("granularity", "1"))),
            one(ex["count"], "count", Fraction(1)),
        ]
    if kind in ("stddev", "variance"):
        half = frac(ex["granularity"]) / 2
        return [
            one(ex["count"], "count", Fraction(1)),
            one(ex["sum"], "sum", half),
            one(ex["squares"], "squares", half * half),
        ]
    if kind == "keys":
        return [one(ex["noise"], "", Fraction(1))] if ex.get("noise") else []
    return []


def check_noise(stat: dict, name: str, report: Report) -> None:
    """The stated noise parameter of each draw (value units) from the explanation."""
    noise = stat.get("noise") or {}
    kind = stat["kind"]
    if kind == "crosstab":
        plan = stat["explanation"]["plan"]
        tables = stat.get("tables") or []
        if not tables:
            report.not_checked(f"{name} noise", "the record does not name its tables")
        for table in tables:
            sd = math.sqrt(crosstab_cell_variance(plan, tuple(table["marginal"])))
            part = noise.get(table.get("name")) or {}
            report.number(f"{name} noise sigma of table {table.get('name')}", sd, part.get("value"))
        return
    parts = _noise_parts(stat)
    if not parts:
        return
    for part, law, value in parts:
        stated = noise if not part else noise.get(part) or {}
        report.exact(
            f"{name} noise law{(' of ' + part) if part else ''}", law, stated.get("distribution")
        )
        report.number(
            f"{name} noise parameter{(' of ' + part) if part else ''}",
            float(value),
            stated.get("value"),
        )


def discrete_gaussian_delta(sigma: Fraction, epsilon: Fraction, sensitivity: Fraction) -> float:
    """CKS 2020, Thm 7: the exact delta of the 1-D discrete Gaussian at integer sensitivity:
    Pr[Y > x1] - e**eps Pr[Y > x2], x1,2 = eps sigma**2 / Delta -/+ Delta / 2."""
    centre = epsilon * sigma * sigma / sensitivity
    n1 = math.floor(centre - sensitivity / 2) + 1
    n2 = math.floor(centre + sensitivity / 2) + 1
    log_p, log_q = dgauss_log_sf(sigma, n1), dgauss_log_sf(sigma, n2)
    return max(0.0, math.exp(log_p) * -math.expm1(float(epsilon) + log_q - log_p))


def cdp_delta(rho: Fraction, epsilon: Fraction) -> float:
    """The delta rho-zCDP implies at epsilon (CKS 2020, Cor. 13), at the optimal order."""
    r, e = float(rho), float(epsilon)
    if r <= 0:
        return 0.0
    lo, hi = 1.000001, (e + 1) / (2 * r) + 2
    for _ in range(200):
        alpha = (lo + hi) / 2
        if (2 * alpha - 1) * r - e + math.log1p(-1 / alpha) < 0:
            lo = alpha
        else:
            hi = alpha
    alpha = (lo + hi) / 2
    log_delta = (alpha - 1) * (alpha * r - e) + alpha * math.log1p(-1 / alpha)
    return min(1.0, math.exp(log_delta) / (alpha - 1))


def _draws(stat: dict) -> list[tuple[str, dict]]:
    """(part, explanation) of each noise draw of a statistic."""
    kind, ex = stat["kind"], stat["explanation"]
    if kind in ("mean", "grouped_mean"):
        return [("sum", ex["sum"]), ("count", ex["count"])]
    if kind in ("stddev", "variance"):
        return [(part, ex[part]) for part in ("count", "sum", "squares")]
    if kind == "keys":
        return [("counts", ex["noise"])] if ex.get("noise") else []
    if kind in ("count", "histogram", "sum", "grouped_sum", "rows_per_person", "argmax"):
        return [("", ex)]
    return []


def check_privacy(stat: dict, name: str, report: Report) -> None:
    """Each noise draw delivers the (epsilon, delta) it states: a discrete Laplace's
    epsilon = sensitivity / scale exactly; a discrete Gaussian's delta at its sigma (CKS
    Thm 7 for one coordinate, Cor. 13 through zCDP for a vector) within its delta."""
    for part, ex in _draws(stat):
        label = f"{name}{(' ' + part) if part else ''}"
        if ex.get("noise") == "discrete_laplace":
            report.exact(
                f"{label} epsilon = l1 sensitivity / scale",
                exact_str(frac(ex["l1_sensitivity"]) / frac(ex["scale"])),
                exact_str(frac(ex["epsilon"])),
            )
        elif ex.get("noise") == "discrete_gaussian":
            sigma, eps, l2 = frac(ex["sigma"]), frac(ex["epsilon"]), frac(ex["l2_sensitivity"])
            if ex.get("calibration") == "zcdp_cor13":
                achieved = cdp_delta(l2 * l2 / (2 * sigma * sigma), eps)
                how = "zCDP at rho = l2^2 / (2 sigma^2)"
            elif l2.denominator == 1:
                achieved = discrete_gaussian_delta(sigma, eps, l2)
                how = "discrete Gaussian at its sigma"
            else:
                report.not_checked(f"{label} delta", "a fractional l2 sensitivity")
                continue
            if ex.get("delta_achieved") is not None:
                report.outcome(
                    f"{label} delta achieved ({how})",
                    achieved,
                    ex["delta_achieved"],
                    math.isclose(achieved, float(ex["delta_achieved"]), rel_tol=1e-6),
                )
            report.outcome(
                f"{label} delta achieved within its delta",
                achieved,
                exact_str(frac(ex["delta"])),
                achieved <= float(frac(ex["delta"])),
            )


def check_epsilon(stat: dict, name: str, report: Report) -> None:
    """The statistic's epsilon and delta against what its explanation says it spent."""
    kind, ex = stat["kind"], stat["explanation"]
    eps = None
    if kind in ("mean", "grouped_mean"):
        eps = frac(ex["sum"]["epsilon"]) + frac(ex["count"]["epsilon"])
    elif kind == "quantiles":
        eps = frac(ex["epsilon"])
        if stat.get("interval_confidence") is not None:
            eps = eps * 2  # half on the quantiles, half on their intervals' ends
    elif kind == "crosstab":
        eps = frac(ex["plan"]["epsilon"])
    elif kind == "keys":
        eps = frac(ex["epsilon"])
    elif "epsilon" in ex:
        eps = frac(ex["epsilon"])
    if eps is None:
        report.not_checked(f"{name} epsilon", "its explanation states no epsilon")
        return
    report.exact(f"{name} epsilon", exact_str(eps), exact_str(frac(stat["epsilon"])))


def check_uninformative(stat: dict, name: str, report: Report) -> None:
    """Cells shown as "too few records to estimate": a fact of the noisy count and the interval
    at the release's own confidence."""
    kind, ex = stat["kind"], stat["explanation"]
    published = stat.get("uninformative_cells")
    if published is None or kind not in ("mean", "grouped_mean", "stddev", "variance"):
        return
    try:
        stored = frac(ex.get("confidence") or "0.95")
        if kind == "mean":
            ends = [mean_interval(ex, stored)[1:]]
            lowest, highest = float(frac(ex["lower"])), float(frac(ex["upper"]))
            counts = [ex["count"]["values"][0]]
        elif kind == "grouped_mean":
            ends = [(a, b) for _, a, b in grouped_mean_intervals(ex, stored, False)]
            lowest, highest = float(frac(ex["lower"])), float(frac(ex["upper"]))
            counts = ex["count"]["values"]
        else:
            key = "sd" if kind == "stddev" else "variance"
            cells = spread_cells(ex, stored, False)
            ends = [tuple(float(frac(x)) for x in c[f"{key}_interval"]) for c in cells]
            widest = frac(ex["w_bound"]) * frac(ex["granularity"]) / 2
            lowest, highest = 0.0, float(widest if key == "sd" else widest * widest)
            counts = ex["count"]["values"]
        mine = [
            uninformative(int(n), ex["count"], stored, float(lo), float(hi), lowest, highest)
            for n, (lo, hi) in zip(counts, ends, strict=True)
        ]
    except (TooCoarse, KeyError, TypeError, ValueError) as exc:
        report.not_checked(f"{name} cells too uninformative to show", repr(exc))
        return
    report.exact(f"{name} cells too uninformative to show", mine, list(published))


# =====================================================================================
# The release as a whole
# =====================================================================================


def canonical(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def check_release(record: dict, report: Report) -> None:
    report.heading("the record")
    stated = record.get("record_sha256")
    if stated is None:
        report.not_checked("record_sha256", "the record states none")
    else:
        body = {k: v for k, v in record.items() if k != "record_sha256"}
        report.exact(
            "record_sha256 (canonical JSON without it)",
            hashlib.sha256(canonical(body)).hexdigest(),
            stated,
        )
    statistics = record.get("statistics") or []
    budget = record.get("budget") or {}
    try:
        report.exact(
            "release epsilon = sum of its statistics' epsilons",
            exact_str(sum((frac(s["epsilon"]) for s in statistics), Fraction(0))),
            exact_str(frac(budget["epsilon"])),
        )
        report.exact(
            "release delta = sum of its statistics' deltas",
            exact_str(sum((frac(s["delta"]) for s in statistics), Fraction(0))),
            exact_str(frac(budget["delta"])),
        )
        records = record.get("mechanism_records") or []
        if records:
            report.exact(
                "release epsilon = basic sum of its mechanism records",
                exact_str(
                    sum((frac(r["epsilon"]) * int(r.get("count", 1)) for r in records), Fraction(0))
                ),
                exact_str(frac(budget["epsilon"])),
            )
            report.exact(
                "release delta = basic sum of its mechanism records",
                exact_str(
                    sum((frac(r["delta"]) * int(r.get("count", 1)) for r in records), Fraction(0))
                ),
                exact_str(frac(budget["delta"])),
            )
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        report.not_checked("the release's budget", f"the record's fields do not parse ({exc!r})")
    levels = [str(level) for level in record.get("confidence_levels") or []]
    if not levels:
        report.not_checked("confidence levels", "the record lists none")
    for stat in sorted(statistics, key=lambda s: int(s.get("position", 0))):
        check_statistic(stat, levels, report)


# =====================================================================================
# The project's total: PLD (dp_accounting), Renyi DP and the basic sums
# =====================================================================================

DISCRETISATION = 1e-3
MAX_GRID_POINTS = 200_000
TAIL_TRUNCATION = 1e-15
DELTA_MARGIN = 1e-6
TRUNCATION_SIGMAS = 11.6
_TABLE_SIGMA = 100.0


@dataclass(frozen=True)
class Record:
    """One mechanism record, exact: kind, basic (epsilon, delta), parameters, count."""

    kind: str
    epsilon: Fraction
    delta: Fraction
    sensitivity: Fraction | None
    scale: Fraction | None
    sigma: Fraction | None
    count: int

    @classmethod
    def of(cls, data: dict) -> Record:
        kind = str(data["kind"])

        def opt(name: str) -> Fraction | None:
            return None if data.get(name) is None else frac(data[name])

        sensitivity = opt("sensitivity")
        scale = opt("scale") if kind == "discrete_laplace" else data.get("scale")
        sigma = (
            opt("sigma") if kind in ("discrete_gaussian", "zcdp_gaussian") else data.get("sigma")
        )
        if kind not in ("discrete_laplace", "discrete_gaussian", "zcdp_gaussian"):
            sensitivity = data.get("sensitivity")
        count = int(data.get("count", 1))
        if count < 1:
            raise ValueError("a record's count is at least 1")
        return cls(
            kind,
            frac(data["epsilon"]),
            frac(data.get("delta", "0")),
            sensitivity,
            scale,
            sigma,
            count,
        )

    @property
    def key(self) -> tuple:
        return (self.kind, self.epsilon, self.delta, self.sensitivity, self.scale, self.sigma)

    @property
    def rho(self) -> Fraction | None:
        if self.kind not in ("discrete_gaussian", "zcdp_gaussian"):
            return None
        return self.sensitivity * self.sensitivity / (2 * self.sigma * self.sigma)


def merge(records: list[Record]) -> list[Record]:
    merged: dict[tuple, Record] = {}
    for r in records:
        seen = merged.get(r.key)
        merged[r.key] = r if seen is None else Record(*r.key, seen.count + r.count)
    return list(merged.values())


def _repr_key(record: Record) -> str:
    """The product's composition order: repr((key, count)) with Fractions as Fraction(p, q)."""
    return repr((record.key, record.count))


def _clean(deltas: np.ndarray) -> np.ndarray:
    return np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))


def dlap_profile(sensitivity: int, scale: float, epsilons: np.ndarray) -> np.ndarray:
    eps = np.asarray(epsilons, dtype=np.float64)
    top = sensitivity / scale
    m = np.clip(np.floor((sensitivity - eps * scale) / 2.0), 0.0, float(sensitivity))
    log_a = -1.0 / scale
    log_terms = np.logaddexp((m + 1.0) * log_a, eps + (sensitivity - m) * log_a)
    inside = -np.expm1(log_terms - np.log1p(math.exp(log_a)))
    return _clean(np.where(eps >= top, 0.0, np.where(eps <= -top, -np.expm1(eps), inside)))


def _dgauss_log_sf_table(sigma: float, lowest: int, highest: int) -> np.ndarray:
    reach = math.ceil(TRUNCATION_SIGMAS * sigma) + 1
    ys = np.arange(-reach, reach + 1, dtype=np.float64)
    log_pmf = -0.5 * (ys / sigma) ** 2
    log_pmf -= np.logaddexp.reduce(log_pmf)
    log_sf = np.logaddexp.accumulate(log_pmf[::-1])[::-1]
    n = np.arange(lowest, highest + 1)
    idx = n + reach
    out = np.where(idx <= 0, 0.0, -np.inf)
    inside = (idx > 0) & (idx < ys.size)
    out[inside] = np.minimum(log_sf[idx[inside]], 0.0)
    return out


def _log_upper_sum_vector(sigma: float, n: np.ndarray) -> np.ndarray:
    s2 = sigma * sigma
    u = n / sigma
    mills = np.exp(special.log_ndtr(-u) + 0.5 * u * u + math.log(sigma) + _LOG_SQRT_2PI)
    r = n / s2
    correction = (
        0.5
        + r / 12
        + (3 * r / s2 - r**3) / 720
        + (r**5 - 10 * r**3 / s2 + 15 * r / (s2 * s2)) / 30240
    )
    return -0.5 * u * u + np.log(mills + correction)


def dgauss_log_sf_vector(sigma: float, n: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=np.float64)
    if sigma <= _TABLE_SIGMA:
        lowest, highest = int(n.min()), int(n.max())
        table = _dgauss_log_sf_table(sigma, lowest, highest)
        return table[(n - lowest).astype(np.int64)]
    log_z = math.log(sigma) + _LOG_SQRT_2PI
    positive = n >= 1
    out = np.empty_like(n)
    out[positive] = _log_upper_sum_vector(sigma, n[positive]) - log_z
    rest = 1.0 - n[~positive]
    out[~positive] = np.log1p(-np.exp(_log_upper_sum_vector(sigma, rest) - log_z))
    return out


def dgauss_profile(sensitivity: int, sigma: float, epsilons: np.ndarray) -> np.ndarray:
    eps = np.asarray(epsilons, dtype=np.float64)
    n1 = np.floor(eps * sigma * sigma / sensitivity - sensitivity / 2.0) + 1.0
    both = dgauss_log_sf_vector(sigma, np.concatenate([n1, n1 + sensitivity]))
    log_p, log_q = both[: n1.size], both[n1.size :]
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.where(np.isneginf(log_p), -np.inf, eps + log_q - log_p)
        out = np.where(np.isneginf(log_p), 0.0, np.exp(log_p) * -np.expm1(ratio))
    return _clean(np.nan_to_num(out, nan=0.0))


def generic_profile(epsilon: float, delta: float, epsilons: np.ndarray) -> np.ndarray:
    eps = np.asarray(epsilons, dtype=np.float64)
    inside = delta + (1.0 - delta) * (math.exp(epsilon) - np.exp(eps)) / (1.0 + math.exp(epsilon))
    low = 1.0 - np.exp(eps) * (1.0 - delta)
    return _clean(np.where(eps >= epsilon, delta, np.where(eps <= -epsilon, low, inside)))


def _pld_modules():
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return pld_pmf, PrivacyLossDistribution


def connect_dots_pmf(lower: int, deltas: np.ndarray):
    """Pessimistic connect-the-dots PMF on eps_i = (lower + i) d (Doroshenko et al. 2022)."""
    pld_pmf, _ = _pld_modules()
    deltas = np.minimum.accumulate(np.asarray(deltas, dtype=np.float64))
    d = DISCRETISATION
    if deltas.size == 1:
        return pld_pmf.DensePLDPmf(d, lower, np.array([1 - deltas[0]]), deltas[0], True)
    diffs = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(d)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(d)) / math.expm1(d)
    probs[-1] = diffs[-1] / math.expm1(-d)
    return pld_pmf.DensePLDPmf(d, lower, np.maximum(probs, 0.0), float(deltas[-1]), True)


def _from_profile(low: float, high: float, profile):
    _, pld_class = _pld_modules()
    lower = math.floor(low / DISCRETISATION)
    upper = math.ceil(high / DISCRETISATION)
    if upper - lower + 1 > MAX_GRID_POINTS:
        return None
    epsilons = np.arange(lower, upper + 1, dtype=np.float64) * DISCRETISATION
    return pld_class(connect_dots_pmf(lower, profile(epsilons)))


def _generic_pld(epsilon: float, delta: float):
    pld_pmf, pld_class = _pld_modules()
    pld = _from_profile(-epsilon, epsilon, lambda e: generic_profile(epsilon, delta, e))
    if pld is None:
        upper = math.ceil(epsilon / DISCRETISATION)
        pmf = pld_pmf.DensePLDPmf(DISCRETISATION, upper, np.array([1.0 - delta]), delta, True)
        pld = pld_class(pmf)
    return pld


def mechanism_pld(record: Record):
    pld = None
    if record.kind == "discrete_laplace":
        sens, b = int(record.sensitivity), float(record.scale)
        pld = _from_profile(-sens / b, sens / b, lambda e: dlap_profile(sens, b, e))
    elif record.kind == "discrete_gaussian":
        sens, s = int(record.sensitivity), float(record.sigma)
        centre = sens * sens / (2.0 * s * s)
        reach = sens * TRUNCATION_SIGMAS / s
        pld = _from_profile(centre - reach, centre + reach, lambda e: dgauss_profile(sens, s, e))
    if pld is None:
        pld = _generic_pld(float(record.epsilon), float(record.delta))
    return pld


def _truncate(probs: np.ndarray) -> tuple[int, np.ndarray, float]:
    half = TAIL_TRUNCATION / 2
    left = int(np.searchsorted(np.cumsum(probs), half, side="right"))
    right = probs.size - int(np.searchsorted(np.cumsum(probs[::-1]), half, side="right"))
    right = max(right, left + 1)
    kept = probs[left:right].copy()
    kept[0] += probs[:left].sum()
    return left, kept, float(probs[right:].sum())


def _compose_pmfs(a, b):
    pld_pmf, _ = _pld_modules()
    pa, pb = a._probs, b._probs
    probs = np.convolve(pa, pb) if pa.size * pb.size <= 1 << 16 else signal.fftconvolve(pa, pb)
    inf_a, inf_b = a._infinity_mass, b._infinity_mass
    offset, probs, right = _truncate(probs)
    return pld_pmf.DensePLDPmf(
        DISCRETISATION,
        a._lower_loss + b._lower_loss + offset,
        probs,
        inf_a + inf_b - inf_a * inf_b + right,
        True,
    )


def compose_pld(records: list[Record]):
    """The composed pessimistic PLD (None for no record), in the product's order and tree."""
    _, pld_class = _pld_modules()
    parts = []
    for record in merge(records):
        one = mechanism_pld(record)
        if record.count > 1:
            one = one.self_compose(record.count, TAIL_TRUNCATION)
        parts.append(one._pmf_remove.to_dense_pmf())
    if not parts:
        return None
    while len(parts) > 1:
        paired = [_compose_pmfs(a, b) for a, b in zip(parts[0::2], parts[1::2], strict=False)]
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return pld_class(parts[0])


def _rdp_orders() -> np.ndarray:
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    return np.array(DEFAULT_RDP_ORDERS, dtype=np.float64)


def record_rdp(record: Record, orders: np.ndarray) -> np.ndarray:
    rho = record.rho
    if rho is not None:
        value = float(rho)
        if Fraction(value) < rho:
            value = math.nextafter(value, math.inf)
        return value * orders
    pure = None
    if record.kind == "discrete_laplace":
        pure = float(record.sensitivity / record.scale)
    elif record.kind in ("report_noisy_max", "permute_and_flip") or (
        record.kind == "generic_eps_delta" and record.delta == 0
    ):
        pure = float(record.epsilon)
    if pure is None:
        return np.full(orders.shape, np.inf)
    log_sum = np.logaddexp(orders * pure, (1.0 - orders) * pure) - np.logaddexp(0.0, pure)
    return np.maximum(log_sum / (orders - 1.0), 0.0)


def rdp_epsilon(records: list[Record], delta: Fraction) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    orders = _rdp_orders()
    total = np.zeros(orders.shape)
    for record in merge(records):
        total = total + record.count * record_rdp(record, orders)
    dlt = float(delta)
    if not np.any(total):
        return 0.0
    if dlt <= 0 or not np.any(np.isfinite(total)):
        return math.inf
    return float(compute_epsilon(orders, total, dlt * (1 - DELTA_MARGIN))[0])


def float_text(value: float) -> str | None:
    """A float epsilon as the registry writes it (shortest round-trip digits; None: infinite)."""
    if not math.isfinite(value):
        return None
    return decimal_text(Decimal(repr(value)))


def _amount(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def check_registry(registry: dict, record: dict | None, report: Report) -> None:
    """The project's spent loss, recomputed from every mechanism record the registry lists."""
    report.heading(f"the project's total ({(registry.get('project') or {}).get('slug')})")
    tight = registry.get("tight_accounting") or {}
    spend = registry.get("spend") or {}
    accountant = tight.get("accountant") or {}
    discretisation = float(frac(accountant.get("discretisation", DISCRETISATION)))
    if not math.isclose(discretisation, DISCRETISATION):
        report.not_checked(
            "tight accounting",
            f"the registry's discretisation {discretisation} is not this script's",
        )
        return
    try:
        from importlib import metadata

        installed = metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:
        installed = "unknown"
    if accountant.get("version") and accountant["version"] != installed:
        report.say(
            f"  note: the registry used dp-accounting {accountant['version']}, this run {installed}"
        )
    releases = registry.get("releases") or []
    unpublished = registry.get("unpublished_spent") or {}
    try:
        listed = [Record.of(m) for r in releases for m in r.get("mechanisms") or []]
        listed += [Record.of(m) for m in unpublished.get("mechanisms") or []]
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        report.not_checked("mechanism records", f"a record does not parse ({exc!r})")
        return
    ordered = sorted(merge(listed), key=_repr_key)
    delta = frac(tight.get("delta", spend.get("delta", "0")))
    # basic sums: the releases' charges and the unpublished ones add up to "spent"
    spent = registry.get("spent") or {}
    eps_sum = sum((Decimal(r["epsilon"]) for r in releases), Decimal(0)) + Decimal(
        str(unpublished.get("epsilon", "0"))
    )
    delta_sum = sum((Decimal(r["delta"]) for r in releases), Decimal(0)) + Decimal(
        str(unpublished.get("delta", "0"))
    )
    report.exact(
        "spent epsilon = releases + unpublished (basic sum)",
        decimal_text(eps_sum),
        spent.get("epsilon"),
    )
    report.exact(
        "spent delta = releases + unpublished (basic sum)",
        decimal_text(delta_sum),
        spent.get("delta"),
    )
    basic = tight.get("spent_basic") or {}
    report.exact(
        "tight_accounting.spent_basic epsilon", decimal_text(eps_sum), basic.get("epsilon")
    )
    report.exact(
        "spend.basic.spent_epsilon",
        decimal_text(eps_sum),
        (spend.get("basic") or {}).get("spent_epsilon"),
    )
    records_eps = sum((r.epsilon * r.count for r in ordered), Fraction(0))
    report.exact(
        "basic sum of the mechanism records' epsilons",
        decimal_text(eps_sum),
        decimal_text(fraction_decimal(records_eps)),
    )
    # tight: PLD and RDP at the cap's delta
    pld = compose_pld(ordered)
    pld_eps = (
        0.0 if pld is None else float(pld.get_epsilon_for_delta(float(delta) * (1 - DELTA_MARGIN)))
    )
    rdp_eps = rdp_epsilon(ordered, delta)
    published_pld = tight.get("spent_pld_epsilon")
    published_rdp = tight.get("spent_rdp_epsilon")
    report.within(
        "PLD epsilon at the cap's delta",
        None if not math.isfinite(pld_eps) else pld_eps,
        None if published_pld is None else float(published_pld),
        discretisation,
    )
    report.say(
        f"            (exact digits: recomputed {float_text(pld_eps)}, published {published_pld})"
    )
    report.within(
        "Renyi-DP epsilon at the cap's delta",
        None if not math.isfinite(rdp_eps) else rdp_eps,
        None if published_rdp is None else float(published_rdp),
        discretisation,
    )
    tight_eps = min(pld_eps, rdp_eps)
    basic_eps, basic_delta = eps_sum, delta_sum
    if basic_delta <= fraction_decimal(delta) and (
        not math.isfinite(tight_eps) or basic_eps <= Decimal(repr(tight_eps))
    ):
        stated: Decimal | None = basic_eps
    elif not math.isfinite(tight_eps):
        stated = None
    else:
        stated = Decimal(repr(tight_eps))
    for label, published in (
        ("tight_accounting.spent_epsilon", tight.get("spent_epsilon")),
        ("spend.spent_epsilon (the stated spend)", spend.get("spent_epsilon")),
    ):
        report.within(
            label,
            None if stated is None else float(stated),
            None if published is None else float(published),
            discretisation,
        )
    committed = registry.get("committed") or {}
    if committed.get("epsilon") == spent.get("epsilon") and committed.get("delta") == spent.get(
        "delta"
    ):  # no open reservation: the committed loss is the spent one
        report.within(
            "spend.committed_epsilon (no open reservation)",
            None if stated is None else float(stated),
            None if spend.get("committed_epsilon") is None else float(spend["committed_epsilon"]),
            discretisation,
        )
    else:
        report.not_checked(
            "spend.committed_epsilon",
            "it counts approved releases not yet computed, whose mechanisms are not listed",
        )
    if record is not None:
        release_id = (record.get("release") or {}).get("id")
        entry = next((r for r in releases if r.get("id") == release_id), None)
        if entry is None:
            report.not_checked(
                f"release {release_id} in the registry", "the registry does not list it"
            )
            return
        mine = sorted(
            merge([Record.of(m) for m in record.get("mechanism_records") or []]), key=_repr_key
        )
        theirs = sorted(merge([Record.of(m) for m in entry.get("mechanisms") or []]), key=_repr_key)
        report.exact(
            f"release {release_id}: the record's mechanisms = the registry's",
            [_repr_key(r) for r in mine],
            [_repr_key(r) for r in theirs],
        )
        report.exact(
            f"release {release_id}: epsilon in the registry",
            exact_str(frac((record.get("budget") or {}).get("epsilon"))),
            exact_str(frac(entry.get("epsilon"))),
        )


# =====================================================================================
# Reading the documents, the command line
# =====================================================================================


def load(source: str) -> dict:
    """A JSON document from a path or an http(s) URL."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"Accept": "application/json"})  # noqa: S310
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - http(s) only
            body = response.read(MAX_DOCUMENT_BYTES + 1)
        if len(body) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"{source} is larger than {MAX_DOCUMENT_BYTES} bytes")
        document = json.loads(body.decode("utf-8"))
    else:
        with open(source, encoding="utf-8") as handle:
            document = json.load(handle)
    if not isinstance(document, dict):
        raise ValueError(f"{source} is not a JSON object")
    return document


def verify(record: dict | None, registry: dict | None, *, quiet: bool = False) -> Report:
    """Every check on the documents given; the report holds the outcome."""
    report = Report(quiet=quiet)
    if record is not None:
        check_release(record, report)
    if registry is not None:
        check_registry(registry, record, report)
    return report


def summary(report: Report) -> str:
    lines = [
        "",
        f"Summary: {report.ok} checks OK, {len(report.mismatches)} MISMATCH, "
        f"{len(report.unchecked)} not checked.",
    ]
    for label in report.mismatches[:50]:
        lines.append(f"  MISMATCH: {label}")
    if len(report.mismatches) > 50:
        lines.append(f"  ... and {len(report.mismatches) - 50} more")
    for label in report.unchecked:
        lines.append(f"  not checked: {label}")
    lines.append(
        "Everything checked matches what was published."
        if not report.mismatches
        else "Some published numbers do NOT match their recomputation."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Recompute a dpportal release's intervals and its project's total privacy loss."
    )
    parser.add_argument("record", nargs="?", help="the release record (path or URL)")
    parser.add_argument("--registry", help="the project's epsilon registry JSON (path or URL)")
    parser.add_argument(
        "--quiet", action="store_true", help="print only mismatches and the summary"
    )
    args = parser.parse_args(argv)
    if args.record is None and args.registry is None:
        parser.error("give a release record, a registry, or both")
    try:
        record = load(args.record) if args.record else None
        registry = load(args.registry) if args.registry else None
    except (OSError, ValueError) as exc:
        print(f"cannot read a document: {exc}", file=sys.stderr)
        return 2
    report = verify(record, registry, quiet=args.quiet)
    print(summary(report))
    return 1 if report.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
