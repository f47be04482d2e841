"""Noise calibration: Laplace scale, Gaussian sigma, and the delta each achieves.

Sources:
- Laplace: Dwork & Roth 2014, Thm 3.6: scale b = Delta1 / epsilon gives
  epsilon-DP; the discrete Laplace (CKS 2020, Section 2) has the same guarantee
  for integer queries.
- Classic Gaussian: Dwork & Roth 2014, Thm A.1: sigma = Delta2 sqrt(2 ln(1.25/delta)) / epsilon,
  valid only for epsilon < 1.
- Analytic Gaussian: Balle & Wang, ICML 2018, Thm 8: the Gaussian mechanism is
  (epsilon, delta)-DP iff
  delta >= Phi(D/(2 s) - e s/D) - exp(e) Phi(-D/(2 s) - e s/D)
  (s = sigma, e = epsilon, D = Delta2).
- Discrete Gaussian, 1-D, integer Delta: Canonne, Kamath, Steinke 2020, Thm 7:
  delta = Pr[Y > e s**2/D - D/2] - exp(e) Pr[Y > e s**2/D + D/2], Y ~ N_Z(0, s**2).
- Discrete Gaussian, several coordinates: it is rho-zCDP with
  rho = Delta2**2 / (2 sigma**2) (CKS 2020, Thm 14), and rho-zCDP implies
  (epsilon, delta)-DP with delta = min_{alpha > 1} exp((alpha-1)(alpha rho - epsilon))
  / (alpha - 1) * (1 - 1/alpha)**alpha (CKS 2020, Cor. 13). Valid for any shift
  with ||v||_2 <= Delta2, but 6-11 % more sigma than needed; no longer used for
  histograms (next point), kept as `multivariate=True` for callers that need it.
- Histogram with L rows per person. Adding or removing a person
  moves the cell counts by a non-negative integer vector v with ||v||_1 <= L
  (k_i of their rows in cell i). With iid N_Z(0, sigma**2) noise the privacy
  loss is ln P(y)/Q(y) = (||v||_2**2 - 2 <Y, v>) / (2 sigma**2): it depends on
  the pattern only through <Y, v> = sum k_i Y_i. Worst case: ONE cell moved by L.
  * Continuous Gaussian: <Y, v> ~ N(0, sigma**2 ||v||_2**2), so delta depends on
    ||v||_2 alone and grows with it (Balle & Wang 2018, Thm 8); among
    non-negative integer v with ||v||_1 <= L, ||v||_2**2 = sum k_i**2 <= L**2 with
    equality only for v = L e_i, and the runner-up (L-1, 1) has
    ||v||_2**2 = L**2 - 2L + 2, far below.
  * Discrete Gaussian: <Y, v> is no longer exactly normal, so this is checked by
    exact hockey-stick sums over the law of sum k_i Y_i for EVERY partition of
    L (and of every m < L) at the sigma calibrated for one cell at sensitivity L:
    L = 2..8 with epsilon 0.1 to 10, L = 2..4 up to epsilon 200, delta 1e-5 to
    1e-9. The single cell was the maximum in every case, the runner-up at most
    ~11 % of it (epsilon = 0.1; below 1 % at epsilon 10): the lattice effects
    are far smaller than the gap in ||v||_2. Status of the claim: for the
    continuous Gaussian it is the proof above; for the discrete Gaussian we know
    of no published proof (CKS 2020 bound several coordinates only through
    zCDP, Thm 14), so it is a claim verified by exact computation over that
    range, not a theorem for every sigma. tests/privacy/test_privacy_histogram_shift.py
    repeats the exact check at the sigma actually chosen, for every partition
    of every m <= L: L = 2..6 with epsilon 0.1 to 50 and 2, 3, 12 cells, and
    L = 7..10 with epsilon 1, 4, 10 (12 cells); and checks that the chosen sigma
    is the exact one-cell calibration within 0.5 % for L = 2..10. So a histogram
    is calibrated as a 1-D discrete Gaussian at sensitivity L by CKS Thm 7.

The sigma actually used (`gaussian_sigma`) is an exact Fraction: the analytic
sigma rounded UP to 4 significant digits, then raised until the delta of the
DISCRETE Gaussian at exactly that sigma is within the target. Float evaluation
of delta is accurate to ~1e-9 relative; a 1e-6 relative safety margin covers it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import check_delta, check_epsilon, round_up_sig, to_fraction
from dpportal.privacy.tails import dgauss_log_sf, log_ndtr

__all__ = [
    "SIGMA_DIGITS",
    "GaussianCalibration",
    "laplace_scale",
    "continuous_gaussian_delta",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "discrete_gaussian_delta",
    "cdp_delta",
    "zcdp_rho",
    "gaussian_sigma",
]

SIGMA_DIGITS = 4
_SAFETY = 1.0 - 1e-6


def _positive_sensitivity(value: object, name: str) -> Fraction:
    x = to_fraction(value, name)
    if x <= 0:
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be > 0, got %(value)s"), name=name, value=repr(value)
        )
    return x


def laplace_scale(l1_sensitivity: object, epsilon: object) -> Fraction:
    """Exact Laplace scale b = Delta1 / epsilon (Dwork & Roth 2014, Thm 3.6)."""
    return _positive_sensitivity(l1_sensitivity, "l1_sensitivity") / check_epsilon(epsilon)


def _delta_from_logs(epsilon: float, log_p: float, log_q: float) -> float:
    """p - e**epsilon q computed as p (1 - exp(epsilon + log q - log p)), without cancellation."""
    return max(0.0, math.exp(log_p) * -math.expm1(epsilon + log_q - log_p))


def continuous_gaussian_delta(sigma: object, epsilon: object, l2_sensitivity: object) -> float:
    """Balle & Wang 2018, Thm 8: the exact delta of N(0, sigma**2) at epsilon, sensitivity Delta.

    delta = Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D).
    """
    s, e = float(to_fraction(sigma, "sigma")), float(check_epsilon(epsilon))
    d = float(_positive_sensitivity(l2_sensitivity, "l2_sensitivity"))
    a, b = d / (2 * s) - e * s / d, -d / (2 * s) - e * s / d
    return _delta_from_logs(e, log_ndtr(a), log_ndtr(b))


def _bisect_sigma(delta_of, target: float, start: float) -> float:
    """Smallest sigma (to 1e-12 relative) with delta_of(sigma) <= target; delta_of decreasing."""
    hi = start
    while delta_of(hi) > target:
        hi *= 2
    lo = hi / 2
    while delta_of(lo) <= target and lo > 1e-300:
        hi, lo = lo, lo / 2
    while hi - lo > 1e-12 * hi:
        mid = math.sqrt(lo * hi) if hi / lo > 2 else (lo + hi) / 2
        if delta_of(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def analytic_gaussian_sigma(epsilon: object, delta: object, l2_sensitivity: object) -> float:
    """The smallest sigma with continuous_gaussian_delta(sigma) <= delta (Balle & Wang 2018).

    Valid for every epsilon > 0 and 0 < delta < 1. Found by bisection to 1e-12
    relative precision and returned as a float, for display and comparison; the
    sigma a mechanism samples with is `gaussian_sigma`.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, mechanism="gaussian")
    sens = _positive_sensitivity(l2_sensitivity, "l2_sensitivity")
    e, d, target = float(eps), float(sens), float(dlt)
    start = d * math.sqrt(2 * math.log(1.25 / target)) / e
    return _bisect_sigma(lambda s: continuous_gaussian_delta(s, eps, sens), target, start)


def classic_gaussian_sigma(epsilon: object, delta: object, l2_sensitivity: object) -> float:
    """sigma = Delta2 sqrt(2 ln(1.25 / delta)) / epsilon (Dwork & Roth 2014, Thm A.1).

    Only valid for epsilon < 1; refused otherwise (at epsilon = 20, delta = 1e-5
    its true delta is ~1.5e-3). Shown for comparison, never used to add noise.
    """
    eps = check_epsilon(epsilon)
    if eps >= 1:
        raise PrivacyParameterError(
            gettext_noop(
                "the classic Gaussian sigma is only valid for epsilon < 1, got %(epsilon)s"
            ),
            epsilon=repr(epsilon),
        )
    dlt = check_delta(delta, mechanism="gaussian")
    sens = _positive_sensitivity(l2_sensitivity, "l2_sensitivity")
    return float(sens) * math.sqrt(2 * math.log(1.25 / float(dlt))) / float(eps)


def discrete_gaussian_delta(sigma: object, epsilon: object, l2_sensitivity: object) -> float:
    """CKS 2020, Thm 7: the exact delta of the 1-D discrete Gaussian, integer sensitivity Delta.

    delta = Pr[Y > x1] - e**epsilon Pr[Y > x2], x1,2 = epsilon sigma**2/Delta -/+ Delta/2.
    The integer thresholds floor(x) + 1 are computed exactly in rationals.
    """
    sg = _positive_sensitivity(sigma, "sigma")
    eps = check_epsilon(epsilon)
    sens = _positive_sensitivity(l2_sensitivity, "l2_sensitivity")
    if sens.denominator != 1:
        raise PrivacyParameterError(
            gettext_noop("the discrete Gaussian needs an integer sensitivity")
        )
    centre = eps * sg * sg / sens
    n1 = math.floor(centre - sens / 2) + 1
    n2 = math.floor(centre + sens / 2) + 1
    return _delta_from_logs(float(eps), dgauss_log_sf(sg, n1), dgauss_log_sf(sg, n2))


def cdp_delta(rho: object, epsilon: object) -> float:
    """The delta implied by rho-zCDP at epsilon (CKS 2020, Cor. 13).

    delta = min over alpha > 1 of exp((alpha-1)(alpha rho - epsilon)) / (alpha-1)
    * (1 - 1/alpha)**alpha. Any alpha gives a valid upper bound; the optimum is
    found by bisection on the derivative (2 alpha - 1) rho - epsilon + ln(1 - 1/alpha).
    """
    r, e = float(to_fraction(rho, "rho")), float(check_epsilon(epsilon))
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


def zcdp_rho(sigma: object, l2_sensitivity: object) -> Fraction:
    """rho = Delta2**2 / (2 sigma**2), exact (Bun & Steinke 2016, Prop. 1.6; CKS 2020, Thm 14)."""
    sg = _positive_sensitivity(sigma, "sigma")
    sens = _positive_sensitivity(l2_sensitivity, "l2_sensitivity")
    return sens * sens / (2 * sg * sg)


@dataclass(frozen=True)
class GaussianCalibration:
    """The exact sigma to sample with, and what it achieves."""

    sigma: Fraction
    delta_achieved: float
    rho: Fraction
    method: str  # "cks_thm7" (1-D) or "zcdp_cor13" (several coordinates)


def gaussian_sigma(
    *, epsilon: object, delta: object, l2_sensitivity: object, multivariate: bool = False
) -> GaussianCalibration:
    """The sigma (exact Fraction) at which the DISCRETE Gaussian meets (epsilon, delta).

    1. sigma0 = analytic_gaussian_sigma (continuous; Balle & Wang 2018);
    2. sigma = sigma0 rounded up to 4 significant digits;
    3. the delta the discrete Gaussian achieves at exactly that sigma is computed
       (CKS Thm 7 for one coordinate with integer Delta2; the zCDP bound of CKS
       Cor. 13 with rho = Delta2**2/(2 sigma**2) when one person can move several
       coordinates, `multivariate=True`), and sigma is raised by bisection on this
       delta until it is at most the target (with a 1e-6 relative margin).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, mechanism="gaussian")
    sens = _positive_sensitivity(l2_sensitivity, "l2_sensitivity")
    target = float(dlt) * _SAFETY

    def achieved(sigma: object) -> float:
        if multivariate:
            return cdp_delta(zcdp_rho(to_fraction(sigma, "sigma"), sens), eps)
        return discrete_gaussian_delta(sigma, eps, sens)

    start = analytic_gaussian_sigma(eps, dlt, sens)
    sigma = round_up_sig(Fraction(start), SIGMA_DIGITS)
    if achieved(sigma) > target:
        raised = _bisect_sigma(lambda s: achieved(Fraction(s)), target, float(sigma))
        sigma = round_up_sig(Fraction(raised), SIGMA_DIGITS)
    while (value := achieved(sigma)) > target:
        sigma = round_up_sig(sigma * Fraction(10001, 10000), SIGMA_DIGITS)
    method = "zcdp_cor13" if multivariate else "cks_thm7"
    return GaussianCalibration(sigma, value, zcdp_rho(sigma, sens), method)
