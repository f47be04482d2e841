"""The mean's confidence interval by inverting an exact pivot.

A mean is released as two noisy integers (dpportal.privacy.mechanisms.release_mean):
S^ = S_u + Y_s (grid units) and N^ = n + Y_c (rows), with Y_s, Y_c independent,
symmetric, of known laws (discrete Laplace or discrete Gaussian; noise.NoiseSpec).
Write g for the grid granularity, mu_r = g S_u / n for the mean of the rows'
grid values (it lies in [g lo_u, g hi_u], lo_u, hi_u = sensitivity.grid_bounds)
and mu for the clipped mean, the number the release is about.

Pivot. At the true mu_r, T(mu_r) = g S^ - mu_r N^ = g Y_s - mu_r Y_c exactly (the
true parts cancel: g S_u = mu_r n), and the law of T depends on mu_r and public
noise parameters only. So C = {m : |g S^ - m N^| <= q(m)} covers mu_r with
probability >= 1 - beta as soon as Pr[|g Y_s - m Y_c| <= q(m)] >= 1 - beta for
every m (Fieller's construction for a ratio, Fieller 1954; test inversion,
Casella & Berger 2002, Thm 9.2.2). No union bound, no corner of a box: this is
what makes it much narrower than the old interval arithmetic with both parts
at 1 - beta/2 (which missed 0.1-0.7 % at 95 %).

Computing q over a continuum of m. The range of |m| is cut into K = 64 equal
pieces [c - w, c + w]. For every m in a piece, by the triangle inequality and
the symmetry of Y_c,  |g Y_s - m Y_c| <= |g Y_s - c Y_c'| + w |Y_c|  with Y_c' = +-Y_c
of the same law, so ONE q per piece with
    P(q) = sum_y Pr[Y_c = y] Pr[|g Y_s - c y| <= q - w |y|] >= 1 - beta
is valid for the whole piece (when the count's noise parameter exceeds 4000,
an epsilon so small that the table would be too long, q falls back to the
union bound g Q_s(beta/2) + (c + w) Q_c(beta/2), Q the two-sided quantiles,
the old construction's cost without its corner). P is an exact finite sum over the count noise
(y beyond the 1e-13 tails is counted as a miss) of window probabilities of the
sum noise (closed form for the discrete Laplace; for the discrete Gaussian an
exact pmf table when sigma < 100, else the midpoint rule
Pr[k1 <= Y <= k2] = Phi((k2 + 1/2)/sigma) - Phi((k1 - 1/2)/sigma); its error per end
is the Euler-Maclaurin term max|f'|/(24 Z) = e**(-1/2)/(24 sqrt(2 pi) sigma**2)
= 0.0101/sigma**2 plus far smaller terms (measured: 0.01008/sigma**2 for sigma
from 100 to 1000), and 0.05/sigma**2 per end is subtracted). P is computed in float64 and
further reduced by 1e-9 plus twice the largest point mass of Y_s (covers a
window end misplaced by rounding), so every approximation errs towards more
coverage. q is the smallest such value found by bisection (1e-7 relative),
held as an exact Fraction.

The interval. C is a union of per-piece intervals
{m in piece : |g S^ - m N^| <= q_piece}; the released interval is the hull of C
and the point estimate (so it is never empty), widened by the largest rounding
gap of one row r = max(g/2, g lo_u - lo, hi - g hi_u) (|mu - mu_r| <= r since
each row moves by at most r), clamped to [lo, hi]. Guarantee:
Pr[mu in interval] >= 1 - beta for every dataset with n >= 1 rows, exactly, not
asymptotically. Only pieces that can meet C are evaluated (those inside the
widest piece's candidate set, scanned inwards from both ends of each side of 0
until one meets C: the hull's ends lie there), and the data-free part (the
grid's means, the pieces, their q) is cached per public parameters.

Planning (the preview's half-width at an owner's guess n, never the data):
q of the piece holding the largest |m| divided by n, plus r, capped at
upper - lower; that is the interval's half-width when both noisy parts equal
their expectations and the mean sits at the bound farthest from 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import special

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import check_confidence
from dpportal.privacy.sensitivity import grid_bounds, rounding_gap

__all__ = [
    "PIECES",
    "NoiseLaw",
    "pivot_reaches",
    "pivot_quantile",
    "mean_pivot_interval",
    "mean_pivot_halfwidth",
    "mean_interval_from_explanation",
]

PIECES = 64
_TAIL = 1e-13
_FLOAT_MARGIN = 1e-9
_DIRECT_SIGMA = 100
_MAX_COUNT_PARAMETER = 4000  # beyond: the count's table would pass ~2e5 points


@dataclass(frozen=True)
class NoiseLaw:
    """An integer noise law: "discrete_laplace" (parameter = scale) or "discrete_gaussian"."""

    noise: str
    parameter: Fraction

    @classmethod
    def of_spec(cls, spec: NoiseSpec) -> NoiseLaw:
        return cls(spec.noise, spec.scale if spec.mechanism == "laplace" else spec.sigma)

    @classmethod
    def of_explanation(cls, explanation: Mapping[str, Any]) -> NoiseLaw:
        noise = explanation["noise"]
        key = "scale" if noise == "discrete_laplace" else "sigma"
        return cls(noise, Fraction(explanation[key]))

    def pmf_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(support, pmf) over the central part; the mass left out is < 1e-13."""
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
        """An upper bound on the largest point mass, Pr[Y = 0]."""
        p = float(self.parameter)
        if self.noise == "discrete_laplace":
            return math.tanh(1 / (2 * p))  # (1 - a)/(1 + a)
        return 1.0 / (p * math.sqrt(2 * math.pi)) + 1.0 / (p * p) if p >= 1 else 1.0

    def window(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """Lower bounds on Pr[k1 <= Y <= k2] (float arrays of integers; 0 where k2 < k1)."""
        p = float(self.parameter)
        if self.noise == "discrete_laplace":
            out = self._dlap_cdf(k2, p) - self._dlap_cdf(k1 - 1, p)
        elif p < _DIRECT_SIGMA:
            ys, pmf = self.pmf_table()
            cdf = np.concatenate(([0.0], np.cumsum(pmf)))
            lo = np.clip(k1 - ys[0], 0, ys.size)
            hi = np.clip(k2 - ys[0] + 1, 0, ys.size)
            out = cdf[hi.astype(np.int64)] - cdf[lo.astype(np.int64)]
        else:
            out = special.ndtr((k2 + 0.5) / p) - special.ndtr((k1 - 0.5) / p) - 0.1 / (p * p)
        return np.where(k2 >= k1, np.maximum(out, 0.0), 0.0)

    def quantile(self, beta: float) -> int:
        """The smallest integer m with the certified Pr[|Y| <= m] >= 1 - beta (+ 1e-9)."""
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
        """Pr[Y <= k] = a**(-k)/(1+a) for k < 0, 1 - a**(k+1)/(1+a) for k >= 0, a = e**(-1/b)."""
        a = math.exp(-1 / scale)
        neg = np.exp(np.minimum(k, 0) / scale) / (1 + a)
        pos = 1 - np.exp(-(np.maximum(k, 0) + 1) / scale) / (1 + a)
        return np.where(k < 0, neg, pos)


def pivot_reaches(sum_law: NoiseLaw, count_law: NoiseLaw, beta: Fraction) -> bool:
    """Whether pivot_quantile can certify 1 - beta: its margins (1e-9 plus twice the sum
    noise's largest point mass, at most ~1e-6 on a mean's sum grid, whose noise scale is
    at least ~2**20 grid units) must stay below beta. False only for a tiny beta (all of
    100,000 cells at once at 99 %, say)."""
    if float(count_law.parameter) > _MAX_COUNT_PARAMETER:
        return True  # the union-bound branch holds at any beta
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
    """The smallest q (1e-7 relative) with Pr[|g Y_s - c Y_c| + w |Y_c| <= q] >= 1 - beta.

    g = granularity, c = centre, w = spread (value units), Y_s ~ sum_law (grid
    units), Y_c ~ count_law (rows); the probability is a certified lower bound
    (module docstring), so q is valid for every mean m with | |m| - c | <= w.
    """
    g, c, w = float(granularity), float(centre), float(spread)
    if float(count_law.parameter) > _MAX_COUNT_PARAMETER:
        # union bound: |g Y_s - c Y_c| + w |Y_c| <= g |Y_s| + (c + w) |Y_c|, each at beta/2
        half = float(beta) / 2
        return Fraction(g * sum_law.quantile(half) + (c + w) * count_law.quantile(half))
    ys, pmf = count_law.pmf_table()
    y = ys.astype(np.float64)
    target = 1 - float(beta) + _FLOAT_MARGIN + 2 * sum_law.max_mass()
    if target >= 1:
        raise PrivacyParameterError(
            gettext_noop("the mean's sum noise is too coarse for this confidence")
        )

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
    else:  # pragma: no cover - the window tends to 1 - margins < 1 - beta... by construction
        raise PrivacyParameterError(gettext_noop("no half-width reaches this confidence"))
    lo = 0.0
    while hi - lo > 1e-7 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if coverage(mid) >= target else (mid, hi)
    return Fraction(hi)


def _pieces(lo_m: Fraction, hi_m: Fraction) -> tuple[Fraction, Fraction, Fraction]:
    """(a0, a1, width) of the range of |m| for m in [lo_m, hi_m], cut into PIECES."""
    a1 = max(abs(lo_m), abs(hi_m))
    a0 = Fraction(0) if lo_m <= 0 <= hi_m else min(abs(lo_m), abs(hi_m))
    return a0, a1, (a1 - a0) / PIECES


def _solve(t: Fraction, nhat: int, q: Fraction) -> tuple[Fraction, Fraction] | None:
    """{m : |t - m nhat| <= q} as [low, high] (None = empty, or all m when nhat = 0)."""
    if nhat == 0:
        return (Fraction(-(10**30)), Fraction(10**30)) if abs(t) <= q else None
    ends = ((t - q) / nhat, (t + q) / nhat)
    return min(ends), max(ends)


def mean_pivot_interval(
    *,
    noisy_sum_units: int,
    noisy_count: int,
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
    confidence: object,
) -> tuple[Fraction, Fraction, Fraction, bool]:
    """(estimate, low, high, count_nonpositive) of a mean; see the module docstring.

    Estimate: clamp(g S^ / N^) when N^ > 0, else the midpoint (lower + upper)/2 and
    count_nonpositive is True. The interval covers the clipped mean with
    probability >= confidence.
    """
    beta = 1 - check_confidence(confidence)
    g = granularity
    layout = _layout(sum_law, count_law, g, lower, upper, beta)
    lo_m, hi_m, a0, a1, width = layout.lo_m, layout.hi_m, layout.a0, layout.a1, layout.width
    t = noisy_sum_units * g
    if noisy_count > 0:
        estimate, nonpositive = min(max(t / noisy_count, lower), upper), False
    else:
        estimate, nonpositive = (lower + upper) / 2, True
    reach = _solve(t, noisy_count, layout.widest * (1 + Fraction(1, 10**6)))  # bisection slack
    low, high = estimate, estimate

    def part(j: int, sign: int) -> tuple[Fraction, Fraction] | None:
        """C within piece j on the side of 0 given by sign, or None when empty."""
        p0, p1, q = layout.piece(j)
        s0, s1 = (p0, p1) if sign > 0 else (-p1, -p0)
        s0, s1 = max(s0, lo_m), min(s1, hi_m)
        if s0 > s1:  # outside [lo_m, hi_m] whatever q is
            return None
        solved = _solve(t, noisy_count, q)
        if solved is None:
            return None
        s0, s1 = max(s0, solved[0]), min(s1, solved[1])
        return (s0, s1) if s0 <= s1 else None

    if reach is not None and width > 0:
        first = max(0, math.floor((max(abs_min(reach), a0) - a0) / width) - 1)
        last = min(PIECES - 1, math.floor((min(abs_max(reach), a1) - a0) / width) + 1)
        # Pieces tile each side of 0 in order (on the side of sign -1, mirrored), so the
        # hull's lowest point on a side lies in its first non-empty piece from below and
        # its highest in the first from above: scan inwards from both ends, stop there.
        for sign in (1, -1):
            top_m, bottom_m = (hi_m, lo_m) if sign > 0 else (-lo_m, -hi_m)
            start = max(first, math.ceil((bottom_m - a0) / width) - 1)
            stop = min(last, math.floor((top_m - a0) / width))  # pieces meeting [lo_m, hi_m]
            upward = range(start, stop + 1)[::sign]
            bottom = next((c for j in upward if (c := part(j, sign)) is not None), None)
            if bottom is not None:
                top = next(c for j in reversed(upward) if (c := part(j, sign)) is not None)
                low, high = min(low, bottom[0]), max(high, top[1])
    elif reach is not None:  # a single possible mean: lower == upper on the grid
        low, high = min(low, lo_m), max(high, hi_m)
    return estimate, max(low - layout.gap, lower), min(high + layout.gap, upper), nonpositive


@dataclass
class _Layout:
    """The data-free part of a mean's interval: the grid's means, the pieces of |m|, the
    rounding gap, and each piece's (p0, p1, q), filled as pieces are first needed."""

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
    pieces: dict[int, tuple[Fraction, Fraction, Fraction]] = field(default_factory=dict)

    def piece(self, j: int) -> tuple[Fraction, Fraction, Fraction]:
        """(p0, p1, q) of piece j: |m| in [p0, p1], q its pivot quantile."""
        if j not in self.pieces:
            p0, p1, half = self.a0 + j * self.width, self.a0 + (j + 1) * self.width, self.width / 2
            q = pivot_quantile(*self.laws, self.granularity, p0 + half, half, self.beta)
            self.pieces[j] = (p0, p1, q)
        return self.pieces[j]


@lru_cache(maxsize=1024)
def _layout(
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
    beta: Fraction,
) -> _Layout:
    g = granularity
    lo_u, hi_u = grid_bounds(lower, upper, g)
    lo_m, hi_m = lo_u * g, hi_u * g
    a0, a1, width = _pieces(lo_m, hi_m)
    widest = pivot_quantile(sum_law, count_law, g, (a0 + a1) / 2, (a1 - a0) / 2, beta)
    return _Layout(
        laws=(sum_law, count_law), granularity=g, beta=beta, lo_m=lo_m, hi_m=hi_m, a0=a0,
        a1=a1, width=width, widest=widest, gap=rounding_gap(lower, upper, g),
    )  # fmt: skip


def abs_min(interval: tuple[Fraction, Fraction]) -> Fraction:
    """The smallest |m| over m in the interval."""
    a, b = interval
    return Fraction(0) if a <= 0 <= b else min(abs(a), abs(b))


def abs_max(interval: tuple[Fraction, Fraction]) -> Fraction:
    """The largest |m| over m in the interval."""
    return max(abs(interval[0]), abs(interval[1]))


def mean_pivot_halfwidth(
    *,
    n: Fraction,
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
    confidence: object,
) -> Fraction:
    """Planning half-width at n rows: q(top piece) / n + r, capped at upper - lower."""
    beta = 1 - check_confidence(confidence)
    lo_u, hi_u = grid_bounds(lower, upper, granularity)
    a0, a1, width = _pieces(lo_u * granularity, hi_u * granularity)
    q = pivot_quantile(sum_law, count_law, granularity, a1 - width / 2, width / 2, beta)
    return min(q / n + rounding_gap(lower, upper, granularity), upper - lower)


def mean_interval_from_explanation(
    explanation: Mapping[str, Any], *, confidence: object
) -> tuple[Fraction, Fraction, Fraction, bool]:
    """mean_pivot_interval of a stored mean (MeanResult.to_dict()); public parameters only."""
    sum_exp, count_exp = explanation["sum"], explanation["count"]
    return mean_pivot_interval(
        noisy_sum_units=int(sum_exp["values"][0]),
        noisy_count=int(count_exp["values"][0]),
        sum_law=NoiseLaw.of_explanation(sum_exp),
        count_law=NoiseLaw.of_explanation(count_exp),
        granularity=Fraction(sum_exp["granularity"]),
        lower=Fraction(explanation["lower"]),
        upper=Fraction(explanation["upper"]),
        confidence=confidence,
    )
