"""Privacy profiles: delta(epsilon), the hockey-stick divergence, of each recorded mechanism.

For a pair of output laws (P, Q) of neighbouring datasets,
H_eps(P || Q) = sum_y [P(y) - e**eps Q(y)]_+ is the smallest delta for which the
pair is (eps, delta)-indistinguishable (Balle, Barthe, Gaboardi 2018, Thm 1).
The functions below evaluate it exactly (up to float rounding) on numpy grids
of eps, for the dominating pair of each mechanism kind; dpportal.privacy.pld
turns a profile into a privacy loss distribution by the connect-the-dots
construction. Adding or removing a person gives the same profile (the noise is
symmetric), so one direction is computed.

- discrete Laplace, integer shift Delta, scale b, a = exp(-1/b): the loss
  ln P(y)/Q(y) = (|y - Delta| - |y|)/b is >= eps exactly for y <= m,
  m = floor((Delta - eps b)/2), so for |eps| < Delta/b
  H_eps = F(m) - e**eps F(m - Delta) = 1 - (a**(m+1) + e**eps a**(Delta-m)) / (1 + a),
  F the discrete Laplace CDF; H = 0 for eps >= Delta/b and 1 - e**eps for eps <= -Delta/b.
- discrete Gaussian, integer shift Delta, sigma: CKS 2020, Thm 7,
  H_eps = Pr[Y >= n] - e**eps Pr[Y >= n + Delta], n = floor(eps sigma**2/Delta - Delta/2) + 1.
  Tails: a log-space table of the exact pmf for sigma <= 100, and the
  Euler-Maclaurin formula of dpportal.privacy.tails (vectorised) above.
- generic (eps0, delta0)-DP: the dominating pair of every (eps0, delta0)-DP
  mechanism (Kairouz, Oh, Viswanath 2015, Thm 2.1; Zhu, Dong, Wang 2022, Prop. 8):
  loss +inf w.p. delta0, +eps0 w.p. (1-delta0) e**eps0/(1+e**eps0), -eps0 otherwise;
  H_eps = delta0 + (1 - delta0)(e**eps0 - e**eps)/(1 + e**eps0) on [-eps0, eps0].

Each `*_loss_range` gives an interval of eps outside which the profile is known
in closed form (below it: all outcomes count; above it: H <= TAIL_MASS).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

__all__ = [
    "TAIL_MASS",
    "TRUNCATION_SIGMAS",
    "dlap_profile",
    "dlap_loss_range",
    "dgauss_log_sf",
    "dgauss_profile",
    "dgauss_loss_range",
    "generic_profile",
]

TRUNCATION_SIGMAS = 11.6  # Pr[|Y| > 11.6 sigma] < 1e-29 for the discrete Gaussian (CKS Prop. 25)
TAIL_MASS = 1e-29
_TABLE_SIGMA = 100.0  # as dpportal.privacy.tails: Euler-Maclaurin above
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _clean(deltas: np.ndarray) -> np.ndarray:
    """Clip to [0, 1] and make non-increasing (float rounding only; the true profile is)."""
    return np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))


def dlap_loss_range(sensitivity: int, scale: float) -> tuple[float, float]:
    """The discrete Laplace loss lies in [-Delta/b, Delta/b]."""
    top = sensitivity / scale
    return -top, top


def dlap_profile(sensitivity: int, scale: float, epsilons: np.ndarray) -> np.ndarray:
    """H_eps of the discrete Laplace with integer shift Delta and scale b, vectorised over eps."""
    eps = np.asarray(epsilons, dtype=np.float64)
    top = sensitivity / scale
    m = np.floor((sensitivity - eps * scale) / 2.0)
    m = np.clip(m, 0.0, float(sensitivity))
    log_a = -1.0 / scale
    log_terms = np.logaddexp((m + 1.0) * log_a, eps + (sensitivity - m) * log_a)
    inside = -np.expm1(log_terms - np.log1p(math.exp(log_a)))
    out = np.where(eps >= top, 0.0, np.where(eps <= -top, -np.expm1(eps), inside))
    return _clean(out)


def _dgauss_log_sf_table(sigma: float, lowest: int, highest: int) -> np.ndarray:
    """log Pr[Y >= n] for n = lowest..highest (direct log-space sums of the exact pmf)."""
    reach = math.ceil(TRUNCATION_SIGMAS * sigma) + 1
    ys = np.arange(-reach, reach + 1, dtype=np.float64)
    log_pmf = -0.5 * (ys / sigma) ** 2
    log_pmf -= np.logaddexp.reduce(log_pmf)
    log_sf = np.logaddexp.accumulate(log_pmf[::-1])[::-1]  # log Pr[Y >= ys[i]]
    n = np.arange(lowest, highest + 1)
    idx = n + reach
    out = np.where(idx <= 0, 0.0, -np.inf)
    inside = (idx > 0) & (idx < ys.size)
    out[inside] = np.minimum(log_sf[idx[inside]], 0.0)
    return out


def _log_upper_sum(sigma: float, n: np.ndarray) -> np.ndarray:
    """log sum_{y >= n} exp(-y**2/(2 sigma**2)) for n >= 0, sigma > 100 (Euler-Maclaurin).

    The same formula as dpportal.privacy.tails._log_upper_sum, vectorised.
    """
    s2 = sigma * sigma
    u = n / sigma
    mills = np.exp(log_ndtr(-u) + 0.5 * u * u + math.log(sigma) + _LOG_SQRT_2PI)
    r = n / s2
    correction = (
        0.5
        + r / 12
        + (3 * r / s2 - r**3) / 720
        + (r**5 - 10 * r**3 / s2 + 15 * r / (s2 * s2)) / 30240
    )
    return -0.5 * u * u + np.log(mills + correction)


def dgauss_log_sf(sigma: float, n: np.ndarray) -> np.ndarray:
    """log Pr[Y >= n] for Y ~ N_Z(0, sigma**2), vectorised over integer n (float array)."""
    n = np.asarray(n, dtype=np.float64)
    if sigma <= _TABLE_SIGMA:
        lowest, highest = int(n.min()), int(n.max())
        table = _dgauss_log_sf_table(sigma, lowest, highest)
        return table[(n - lowest).astype(np.int64)]
    log_z = math.log(sigma) + _LOG_SQRT_2PI  # Poisson summation: exact to exp(-2 pi^2 sigma^2)
    positive = n >= 1
    out = np.empty_like(n)
    out[positive] = _log_upper_sum(sigma, n[positive]) - log_z
    rest = 1.0 - n[~positive]  # Pr[Y >= n] = 1 - Pr[Y >= 1 - n] for n <= 0
    out[~positive] = np.log1p(-np.exp(_log_upper_sum(sigma, rest) - log_z))
    return out


def dgauss_loss_range(sensitivity: int, sigma: float) -> tuple[float, float]:
    """Loss (Delta**2 - 2 Delta y)/(2 sigma**2) for |y| <= 11.6 sigma; beyond, mass < 1e-29."""
    centre = sensitivity * sensitivity / (2.0 * sigma * sigma)
    reach = sensitivity * TRUNCATION_SIGMAS / sigma
    return centre - reach, centre + reach


def dgauss_profile(sensitivity: int, sigma: float, epsilons: np.ndarray) -> np.ndarray:
    """H_eps of the discrete Gaussian with integer shift Delta (CKS 2020, Thm 7), vectorised."""
    eps = np.asarray(epsilons, dtype=np.float64)
    n1 = np.floor(eps * sigma * sigma / sensitivity - sensitivity / 2.0) + 1.0
    both = dgauss_log_sf(sigma, np.concatenate([n1, n1 + sensitivity]))
    log_p, log_q = both[: n1.size], both[n1.size :]
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.where(np.isneginf(log_p), -np.inf, eps + log_q - log_p)
        out = np.where(np.isneginf(log_p), 0.0, np.exp(log_p) * -np.expm1(ratio))
    return _clean(np.nan_to_num(out, nan=0.0))


def generic_profile(epsilon: float, delta: float, epsilons: np.ndarray) -> np.ndarray:
    """H_eps of the worst (epsilon, delta)-DP pair (randomized response with a delta atom)."""
    eps = np.asarray(epsilons, dtype=np.float64)
    inside = delta + (1.0 - delta) * (math.exp(epsilon) - np.exp(eps)) / (1.0 + math.exp(epsilon))
    low = 1.0 - np.exp(eps) * (1.0 - delta)  # eps <= -epsilon: every outcome counts
    out = np.where(eps >= epsilon, delta, np.where(eps <= -epsilon, low, inside))
    return _clean(out)
