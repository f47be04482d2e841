"""Statistical helpers for the privacy-core tests (no Django, no database).

Every statistical assertion in tests/privacy has a false-failure probability of
at most 1e-6, stated in its docstring; there are no retries. The helpers here
are exposed as fixtures because tests/privacy has no __init__.py (importlib mode).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import optimize, stats

from dpportal.privacy.rng import SeededTestRandom

ALPHA = 1e-6  # false-failure probability budget of one statistical assertion


@pytest.fixture
def seeded() -> Callable[[int], SeededTestRandom]:
    """Factory of deterministic test generators: seeded(17)."""
    return SeededTestRandom


# ---------------------------------------------------------------- exact reference laws
# Written independently of dpportal.privacy.tails (direct formulas and sums).


def dlap_cdf(scale: float, y: np.ndarray) -> np.ndarray:
    """Pr[Y <= y] for the discrete Laplace, Pr[Y = y] = (1-a)/(1+a) a**|y|, a = e**(-1/b)."""
    y = np.asarray(y, dtype=np.float64)
    a = math.exp(-1.0 / scale)
    upper = 1.0 - np.exp(-(np.maximum(y, 0) + 1) / scale) / (1.0 + a)
    lower = np.exp(-np.abs(np.minimum(y, -1)) / scale) / (1.0 + a)
    return np.where(y >= 0, upper, lower)


def dlap_abs_moments(scale: float) -> tuple[float, float]:
    """(E|Y|, Var|Y|): E|Y| = 2a/((1-a)(1+a)), E[Y^2] = 2a/(1-a)^2."""
    a = math.exp(-1.0 / scale)
    one_minus_a = -math.expm1(-1.0 / scale)
    mean = 2 * a / (one_minus_a * (1 + a))
    second = 2 * a / one_minus_a**2
    return mean, second - mean * mean


def dgauss_pmf_table(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(support, pmf) of the discrete Gaussian, normalised direct sum over |y| <= 40 sigma + 40."""
    top = int(40 * sigma) + 40
    y = np.arange(-top, top + 1)
    logw = -(y.astype(np.float64) ** 2) / (2 * sigma * sigma)
    w = np.exp(logw - logw.max())
    return y, w / w.sum()


def dgauss_cdf(sigma: float, y: np.ndarray) -> np.ndarray:
    support, pmf = dgauss_pmf_table(sigma)
    cdf = np.cumsum(pmf)
    idx = np.searchsorted(support, np.asarray(y), side="right") - 1
    return np.where(idx < 0, 0.0, cdf[np.clip(idx, 0, None)])


def dgauss_abs_moments(sigma: float) -> tuple[float, float]:
    support, pmf = dgauss_pmf_table(sigma)
    mean = float(np.sum(np.abs(support) * pmf))
    return mean, float(np.sum(support.astype(np.float64) ** 2 * pmf)) - mean * mean


def pf_tail(eps: float, sens: float, m: int, beta: float) -> float:
    """Permute-and-flip's worst-case rank tail, solved directly: the p with
    1 - (1 - (1 - p)**m) / (m p) = beta (Brent's method); t = (2 Delta / eps) ln(1/p)."""

    def miss(p: float) -> float:
        return 1 - (1 - (1 - p) ** m) / (m * p) - beta

    p = optimize.brentq(miss, 1e-15, 1 - 1e-15, xtol=1e-300, rtol=1e-14)
    return 2 * sens / eps * -math.log(p)


@pytest.fixture
def laws():
    """Reference laws: dlap_cdf, dlap_abs_moments, dgauss_cdf, dgauss_abs_moments, pmf table,
    pf_tail (permute-and-flip's exact worst-case tail)."""

    @dataclass(frozen=True)
    class Laws:
        dlap_cdf = staticmethod(dlap_cdf)
        dlap_abs_moments = staticmethod(dlap_abs_moments)
        dgauss_cdf = staticmethod(dgauss_cdf)
        dgauss_abs_moments = staticmethod(dgauss_abs_moments)
        dgauss_pmf_table = staticmethod(dgauss_pmf_table)
        pf_tail = staticmethod(pf_tail)

    return Laws()


# ---------------------------------------------------------------- tests of fit


def chi_square_pvalue(samples: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], scale: float):
    """Chi-square goodness of fit of integer samples against an exact CDF.

    Bins (-inf, e0], (e0, e1], ..., (e_last, inf) on integer edges: every integer
    when the scale is small, else ~160 bins over +-8 scales; adjacent bins are
    merged until each expects >= 5 samples. Returns (p-value, bins).
    """
    n = samples.size
    if scale <= 4:
        edges = np.arange(-int(40 * scale) - 20, int(40 * scale) + 21)
    else:
        edges = np.unique(np.round(np.linspace(-8 * scale, 8 * scale, 161)).astype(np.int64))
    cum = np.concatenate([[0.0], cdf(edges), [1.0]])
    probs = np.diff(cum)
    counts = np.bincount(np.searchsorted(edges, samples, side="left"), minlength=probs.size)
    merged_p, merged_c, acc_p, acc_c = [], [], 0.0, 0
    for p, c in zip(probs, counts, strict=True):
        acc_p, acc_c = acc_p + p, acc_c + c
        if acc_p * n >= 5:
            merged_p.append(acc_p)
            merged_c.append(acc_c)
            acc_p, acc_c = 0.0, 0
    merged_p[-1] += acc_p
    merged_c[-1] += acc_c
    p_arr, c_arr = np.array(merged_p), np.array(merged_c)
    expected = p_arr / p_arr.sum() * n
    statistic = float(np.sum((c_arr - expected) ** 2 / expected))
    return float(stats.chi2.sf(statistic, p_arr.size - 1)), p_arr.size


def z_score(values: np.ndarray, mean: float, variance: float) -> float:
    """(sample mean - mean) / (sd / sqrt(n))."""
    return (float(np.mean(values)) - mean) / math.sqrt(variance / values.size)


def wilson_interval(successes: int, n: int, z: float = 6.0) -> tuple[float, float]:
    """Wilson score interval at z standard errors (z = 6: two-sided miss 2e-9)."""
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre - half, centre + half


# ---------------------------------------------------------------- privacy audit


def clopper_pearson_lower(x: int, n: int, level: float) -> float:
    return 0.0 if x == 0 else float(stats.beta.ppf(level, x, n - x + 1))


def clopper_pearson_upper(x: int, n: int, level: float) -> float:
    return 1.0 if x == n else float(stats.beta.ppf(1 - level, x + 1, n - x))


def audit_lower_bound(
    outputs_d: np.ndarray,
    outputs_dprime: np.ndarray,
    thresholds: Sequence[float],
    *,
    delta: float = 0.0,
    alpha: float = ALPHA,
) -> float:
    """Lower confidence bound on the privacy loss over threshold events, both directions.

    Events S in {y >= t}, {y < t} for each threshold t; for each event and each
    order (D, D') and (D', D) the bound ln((p_lo - delta) / q_hi) uses one-sided
    Clopper-Pearson bounds, each at level alpha / (2 m) for m event-order pairs
    (Bonferroni). If the mechanism is (eps, delta)-DP then p <= e**eps q + delta
    for every S, so the returned value exceeds eps with probability <= alpha.
    """
    a = np.sort(np.asarray(outputs_d, dtype=np.float64))
    b = np.sort(np.asarray(outputs_dprime, dtype=np.float64))
    pairs = 4 * len(thresholds)
    level = alpha / (2 * pairs)
    best = -math.inf
    for t in thresholds:
        above_a = a.size - int(np.searchsorted(a, t, side="left"))
        above_b = b.size - int(np.searchsorted(b, t, side="left"))
        for xa, xb in ((above_a, above_b), (a.size - above_a, b.size - above_b)):
            for x, y, nx, ny in ((xa, xb, a.size, b.size), (xb, xa, b.size, a.size)):
                p_lo = clopper_pearson_lower(x, nx, level) - delta
                q_hi = clopper_pearson_upper(y, ny, level)
                if p_lo > 0:
                    best = max(best, math.log(p_lo / q_hi))
    return best


def audit_index_lower_bound(
    indices_d: np.ndarray, indices_dprime: np.ndarray, k: int, *, alpha: float = ALPHA
) -> float:
    """The same audit over the events {index = i}, i < k (Report Noisy Max)."""
    ca = np.bincount(indices_d, minlength=k)
    cb = np.bincount(indices_dprime, minlength=k)
    level = alpha / (2 * 2 * k)
    best = -math.inf
    for i in range(k):
        for x, y, nx, ny in (
            (ca[i], cb[i], indices_d.size, indices_dprime.size),
            (cb[i], ca[i], indices_dprime.size, indices_d.size),
        ):
            p_lo = clopper_pearson_lower(int(x), nx, level)
            q_hi = clopper_pearson_upper(int(y), ny, level)
            if p_lo > 0:
                best = max(best, math.log(p_lo / q_hi))
    return best


@pytest.fixture
def stat():
    """Statistical helpers: chi_square_pvalue, z_score, wilson_interval, audits."""

    @dataclass(frozen=True)
    class Stat:
        alpha = ALPHA
        chi_square_pvalue = staticmethod(chi_square_pvalue)
        z_score = staticmethod(z_score)
        wilson_interval = staticmethod(wilson_interval)
        audit_lower_bound = staticmethod(audit_lower_bound)
        audit_index_lower_bound = staticmethod(audit_index_lower_bound)

    return Stat()
