"""The variance interval from a spread's three noisy parts, by their joint law.

Noisy count N = n + Z_n, sum S = s + Z_s and sum of squares Q = q + Z_q, the Z's
independent, symmetric, of known laws (discrete Laplace or discrete Gaussian;
mean_pivot.NoiseLaw). Units: centred half grid units w in [-W, W]
(dpportal.privacy.spread). Write m = s/n (the mean of the w's, |m| <= W) and
u = q/n (the mean of their squares, in [0, W**2]); the population variance is
v = u - m**2 in [0, W**2]. The truth satisfies s**2 <= n q and |s| <= n W, i.e.
m**2 <= u <= W**2: the construction works on (v, m) and never leaves that set.

Three events, each with a known law at the true values (no box, no corner):

1. The mean. S - m N = Z_s - m Z_n: the mean's Fieller pivot (mean_pivot, the
   mean of the rows' w on [-W, W]) gives M = [m_lo, m_hi] holding m with
   probability >= 1 - beta_m.
2. The upper end. Q - u N = Z_q - u Z_n: the same pivot for u (the mean of the
   rows' w**2 on [0, W**2]); U_hi = the upper end of its interval at confidence
   1 - 2 beta_hi. For N > 0 that hull holds the estimate Q/N (clamped), so
   u > U_hi forces Q - u N < -q(u), probability <= beta_hi by the symmetry of
   Z_q - u Z_n. On events 1 and 2, v = u - m**2 <= U_hi - min_M m**2.
3. The lower end. D(v) = Q - N v - S**2/N is computable for every candidate v.
   For any c, P(v, c) = Q - 2 c S + N (c**2 - v) = N (c - S/N)**2 + D(v) >= D(v)
   (N > 0), and at c = m and v the truth the known parts cancel
   (q - 2 m s + n m**2 = n v):
       D(v) <= P(v, m) = E(v, m) = Z_q - 2 m Z_s + (m**2 - v) Z_n,
   whose law depends on (v, m) only. With q(v, M) >= the (1 - beta_lo) quantile
   of E(v, m) for every m in M, the set {v : D(v) <= q(v, M)} holds v on event 1
   unless E(v, m) > q (probability <= beta_lo): a test inversion with the
   nuisance m confined to M (Berger & Boos 1994, J. Amer. Statist. Assoc. 89,
   1012-1016; Casella & Berger 2002, Thm 9.2.2). D decreases in v, so the lower
   end is the smallest such v.

Coverage: Pr[v in interval] >= 1 - (beta_m + beta_hi + beta_lo) = 1 - beta for
every dataset with n >= 1, exactly, not asymptotically (union bound over the three
events). SPLIT = (beta_lo, beta_hi, beta_m) / beta = (3/20, 7/10, 3/20): the
lower end takes the sup over M, so it misses far less often than beta_lo (about
0.2 % at n = 100, epsilon 1); the upper end misses about as often as beta_hi when
the mean is near the centre, so most of beta goes there and the coverage stays
near nominal (measured 93.2 / 97.2 / 99.2 % at 90 / 95 / 99 % over 500 runs at
n = 100, epsilon 1, uniform data on [0, 100]). It cannot reach nominal exactly:
the union bound pays for beta_lo + beta_m, seldom used, and when the mean is off
the centre the upper end's m**2 >= min_M m**2 gives away about 2 |m| (m_hi - m_lo)/2
as well (integer ages 0..109 clipped to [0, 100], n = 100: 94.7 / 98.2 % at
90 / 95 %; all rows in the top fifth of the range: ~99 % at 95 %).

Computing q(v, M) over a continuum. E(v, m) has the law of E(v, |m|) (Z_s is
symmetric), so only |m| in [a, b], the range of |m| over M, snapped outward to
multiples of W/M_STEPS and taken one step [a, b] at a time (q is the largest over
the steps; at most MAX_STEPS steps, wider ones when M is wide); v lies in one of
V_PIECES equal pieces [v0 - wv, v0 + wv] of [0, W**2].
With m0 = (a + b)/2, wm = (b - a)/2,
c0 = m0**2 - v0 and wa = wm (b + m0) + wv, the triangle inequality gives
    |E(v, m)| <= X = |Z_q - 2 m0 Z_s + c0 Z_n| + 2 wm |Z_s| + wa |Z_n|,
and since E(v, m) is symmetric, Pr[E > t] <= Pr[X > t] / 2. Pr[X <= t] is bounded
below by a finite sum: Z_n and Z_s are cut into at most COUNT_BINS and SUM_BINS
integer bins (mass by the certified NoiseLaw.window; the tails beyond ~1e-10 count
as misses), each bin represented by its centre with the centre's error moved into
the room left for Z_q (|2 m0 (z - z_c)| <= 2 m0 h for a bin of half-width h), and
Z_q's window is exact for the discrete Laplace and certified for the discrete
Gaussian (mean_pivot.NoiseLaw.window). The sum is computed in float64 and reduced by
1e-9 plus twice Z_q's largest point mass (a window end misplaced by rounding), so
every approximation errs towards coverage; q is found to 1e-6 relative (rounded up)
and held as an exact Fraction. The lower end uses min(q of v's piece, q of the whole
range [0, W**2]) (both valid for every v of the piece), which bounds the pieces to
scan (the whole range's q takes all of M as one step). q depends on public
parameters and the snapped M only, so it is cached. When the count's noise parameter
passes 4000 (an epsilon so small that the count's table would be too long), or the
squares' noise is too fine for the certified margins, the lower end falls back to
U_lo - max_M m**2, U_lo the lower end of u's interval at 1 - 2 beta_lo (the same
one-sided argument as U_hi; valid on that event and event 1). When a part's noise is
too fine for mean_pivot's margins (epsilon in the thousands), its interval is the
box of the two parts at 1 - beta/2 each, whose corners bound the ratio
(_ratio_interval), also one-sided at beta/2 per end.

Width (500 runs, n = 100, epsilon 1, uniform data on [0, 100], Laplace, 95 %):
487 on average against the estimator's RMSE 86 (the box of parts gave 813);
tests/test_releases_spread_interval.py holds it under 3 RMSE for the half-width.

Estimate: v^ = Q/N - (S/N)**2 when N >= 1, clamped to [0, W**2] (a negative
estimate from noise is reported as 0, flagged "clamped": "low"; above W**2,
"high"); when N < 1, the midpoint W**2 / 2, count_nonpositive, and the interval
is [0, W**2] (nothing is known). The interval is widened to hold the estimate.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mean_pivot import NoiseLaw, mean_pivot_interval
from dpportal.privacy.params import check_confidence
from dpportal.privacy.spread_parts import VarianceEstimate

__all__ = ["SPLIT", "V_PIECES", "M_STEPS", "variance_interval", "lower_quantile"]

#: shares of beta: (lower end, upper end, the mean m); module docstring
SPLIT = (Fraction(3, 20), Fraction(7, 10), Fraction(3, 20))
V_PIECES = 32
M_STEPS = 24
MAX_STEPS = 8
COUNT_BINS = 256
SUM_BINS = 160
_TAIL = 1e-10
_FLOAT_MARGIN = 1e-9
_MAX_COUNT_PARAMETER = 4000


def _clamp(x: Fraction, top: Fraction) -> Fraction:
    return min(max(x, Fraction(0)), top)


def _reach(law: NoiseLaw) -> int:
    """|y| beyond which the law's two tails hold < 1e-10."""
    p = float(law.parameter)
    if law.noise == "discrete_laplace":
        return math.ceil(p * math.log(2 / _TAIL)) + 1
    return math.ceil(7 * p) + 2


@lru_cache(maxsize=64)
def _bins(law: NoiseLaw, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(centres, half-widths, largest |y|, certified masses) of <= `bins` integer bins
    covering all but ~1e-10 of the law (the rest counts as a miss)."""
    reach = _reach(law)
    edges = np.unique(np.round(np.linspace(-reach, reach + 1, bins + 1)).astype(np.int64))
    first, last = edges[:-1], edges[1:] - 1  # bin j = [first_j, last_j]
    mass = law.window(first.astype(np.float64), last.astype(np.float64))
    centre = (first + last) / 2
    half = (last - first) / 2
    top = np.maximum(np.abs(first), np.abs(last)).astype(np.float64)
    return centre, half, top, mass


@lru_cache(maxsize=8192)
def lower_quantile(
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    piece: int,
    m_steps: tuple[int, int],
    beta: Fraction,
) -> Fraction:
    """q with Pr[Z_q - 2 m Z_s + (m**2 - v) Z_n > q] <= beta for every v in v-piece
    `piece` (-1: all of [0, W**2]) and every |m| in [a, b] = m_steps * W / M_STEPS
    (module docstring: a certified bound, to 1e-6 relative)."""
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
    # x: the centre of Z_q's window; slack: what the bins and the pieces take from the room
    x = 2 * m0 * sc[None, :] - c0 * nc[:, None]
    slack = 2 * wm * stop[None, :] + wa * ntop[:, None] + 2 * m0 * sh[None, :]
    slack = slack + abs(c0) * nh[:, None]
    weight = nmass[:, None] * smass[None, :]
    target = 1 - 2 * float(beta) + _FLOAT_MARGIN + 2 * squares_law.max_mass()
    if target >= 1:
        raise PrivacyParameterError(
            gettext_noop("the variance's noise is too coarse for this confidence")
        )

    def coverage(t: float) -> float:
        room = t - slack
        k1, k2 = np.ceil(x - room), np.floor(x + room)
        return float((weight * squares_law.window(k1, k2)).sum())

    spread = math.sqrt(
        float(squares_law.parameter) ** 2
        + (2 * b * float(sum_law.parameter)) ** 2
        + ((abs(c0) + wa) * float(count_law.parameter)) ** 2
    )
    return Fraction(_solve(coverage, target, max(spread, 1.0)))


def _solve(coverage, target: float, guess: float) -> float:
    """The smallest t (to 1e-6 relative, rounded up) with coverage(t) >= target, for a
    coverage increasing in t: bracketing, then interpolation of log(1 - coverage)
    (about linear in t for these tails) checked on both sides, else bisection."""
    lo, hi = 0.0, 4 * guess
    c_lo, c_hi = 0.0, coverage(hi)
    for _ in range(200):
        if c_hi >= target:
            break
        lo, c_lo, hi = hi, c_hi, hi * 2
        c_hi = coverage(hi)
    else:  # pragma: no cover - the masses sum to more than the target
        raise PrivacyParameterError(gettext_noop("no half-width reaches this confidence"))
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


def _ratio_interval(
    total: int,
    count: int,
    total_law: NoiseLaw,
    count_law: NoiseLaw,
    lower: Fraction,
    upper: Fraction,
    beta: Fraction,
) -> tuple[Fraction, Fraction]:
    """An interval for the mean total/n of values in [lower, upper] (count >= 1): the
    Fieller pivot (mean_pivot_interval) at 1 - beta; when the total's noise is too fine
    for its certified margins (a very large epsilon), the box of the two parts, each at
    1 - beta/2 (NoiseLaw.quantile), whose corners bound total/n. Either misses on each
    side with probability <= beta/2 (symmetric laws)."""
    try:
        _, low, high, _ = mean_pivot_interval(
            noisy_sum_units=total, noisy_count=count, sum_law=total_law,
            count_law=count_law, granularity=Fraction(1), lower=lower, upper=upper,
            confidence=1 - beta,
        )  # fmt: skip
        return low, high
    except PrivacyParameterError:
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
    """The smallest v in [0, W**2] with d0 - n v <= q(v, M) (module docstring, event 3)."""
    top = Fraction(w_bound * w_bound)
    a, b = m_range
    first = math.floor(a * M_STEPS / w_bound)
    last = max(math.ceil(b * M_STEPS / w_bound), first + 1)
    size = -(-(last - first) // MAX_STEPS)  # a wide M (large noise): fewer, wider steps
    steps = [(j, min(j + size, last)) for j in range(first, last, size)]

    def q_of(piece: int) -> Fraction:  # the sup over M, one |m| step at a time
        return max(lower_quantile(laws, w_bound, piece, step, beta) for step in steps)

    q_all = lower_quantile(laws, w_bound, -1, (first, last), beta)  # one wide step
    width = top / V_PIECES
    start = max(Fraction(0), (d0 - q_all) / n)
    for piece in range(min(math.floor(start / width), V_PIECES - 1), V_PIECES):
        q = min(q_all, q_of(piece))
        v = max(piece * width, (d0 - q) / n)
        if v <= (piece + 1) * width:
            return v
    return top


def variance_interval(
    *,
    noisy_count: int,
    noisy_sum: int,
    noisy_squares: int,
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    confidence: object,
) -> VarianceEstimate:
    """Estimate and interval of v = Q/N - (S/N)**2 in w**2 units (module docstring).

    laws: the (count, sum, squares) noise laws; w_bound is W (|w| <= W); the
    interval covers the population variance of the w's with probability >= confidence.
    """
    return _variance_interval(
        int(noisy_count),
        int(noisy_sum),
        int(noisy_squares),
        tuple(laws),
        int(w_bound),
        check_confidence(confidence),
    )


@lru_cache(maxsize=4096)
def _variance_interval(
    noisy_count: int,
    noisy_sum: int,
    noisy_squares: int,
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    confidence: Fraction,
) -> VarianceEstimate:
    beta = 1 - confidence
    top = Fraction(w_bound * w_bound)
    if noisy_count < 1:
        return VarianceEstimate(top / 2, Fraction(0), top, None, True)
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
            raise PrivacyParameterError(gettext_noop("the count's table would be too long"))
        low = _lower_end(d0, n, laws, w_bound, (near, far), beta_lo)
    except PrivacyParameterError:  # see the module docstring: U_lo - max_M m**2
        low = _ratio_interval(*squares, 2 * beta_lo)[0] - far * far
    low = min(_clamp(low, top), estimate)
    high = max(_clamp(u_hi - near * near, top), estimate)
    return VarianceEstimate(estimate, low, high, clamped, False)
