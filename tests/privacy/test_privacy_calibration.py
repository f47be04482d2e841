"""C2: calibration against values computed independently (scipy, brute-force sums).

Closed forms agree to 1e-9 relative, bisections to 1e-6. Deterministic tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from dpportal.privacy.calibration import (
    SIGMA_DIGITS,
    analytic_gaussian_sigma,
    cdp_delta,
    classic_gaussian_sigma,
    continuous_gaussian_delta,
    discrete_gaussian_delta,
    gaussian_sigma,
    laplace_scale,
    zcdp_rho,
)
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.params import round_up_sig


def _ref_continuous_delta(sigma: float, eps: float, sens: float) -> float:
    """Balle & Wang 2018, Thm 8, written with scipy's log-survival functions."""
    a = eps * sigma / sens - sens / (2 * sigma)
    b = eps * sigma / sens + sens / (2 * sigma)
    return stats.norm.sf(a) - math.exp(eps + stats.norm.logsf(b))


def _ref_analytic_sigma(eps: float, delta: float, sens: float) -> float:
    return optimize.brentq(
        lambda s: _ref_continuous_delta(s, eps, sens) - delta, 1e-6, 1e9, xtol=1e-14, rtol=1e-13
    )


def _ref_discrete_delta(sigma: float, eps: float, sens: int) -> float:
    """CKS 2020 Thm 7 by brute force over the normalised pmf (|y| <= 60 sigma + 60)."""
    top = int(60 * sigma) + 60 + 2 * sens
    y = np.arange(-top, top + 1)
    w = np.exp(-(y.astype(np.float64) ** 2) / (2 * sigma * sigma))
    pmf = w / w.sum()
    x1 = eps * sigma * sigma / sens - sens / 2
    x2 = eps * sigma * sigma / sens + sens / 2
    return float(pmf[y > x1].sum() - math.exp(eps) * pmf[y > x2].sum())


CASES = [
    (1.0, 1e-5, 1.0),
    (0.5, 1e-6, 1.0),
    (0.1, 1e-5, 3.0),
    (2.0, 1e-9, 1.0),
    (20.0, 1e-5, 1.0),
    (5.0, 0.1, 2.0),
    (0.01, 1e-8, 1.0),
]


@pytest.mark.parametrize(("eps", "delta", "sens"), CASES)
def test_analytic_sigma_matches_independent_bisection(eps, delta, sens):
    ours = analytic_gaussian_sigma(str(eps), str(delta), str(sens))
    assert ours == pytest.approx(_ref_analytic_sigma(eps, delta, sens), rel=1e-6)
    assert continuous_gaussian_delta(ours, str(eps), str(sens)) <= delta * (1 + 1e-9)


def test_classic_sigma_closed_form_and_refusal():
    assert classic_gaussian_sigma("0.5", "1e-5", 2) == pytest.approx(
        2 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5, rel=1e-12
    )
    for eps in (1, "1.0", 20):
        with pytest.raises(PrivacyParameterError, match="epsilon < 1"):
            classic_gaussian_sigma(eps, "1e-5", 1)


def test_classic_sigma_underestimates_badly_at_large_epsilon():
    """DESIGN.md: at eps = 20, delta = 1e-5 the textbook sigma's true delta is ~1.5e-3."""
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 20
    assert continuous_gaussian_delta(sigma, 20, 1) == pytest.approx(1.5e-3, rel=0.05)
    assert analytic_gaussian_sigma(20, "1e-5", 1) > sigma


@pytest.mark.parametrize(
    ("sigma", "eps", "sens"),
    [
        (1.0, 1.0, 1),
        (3.741, 1.0, 1),
        (10.0, 0.3, 2),
        (50.0, 0.05, 3),
        (150.0, 0.02, 1),
        (1000.0, 0.004, 1),
        (0.6, 5.0, 1),
        (25.5, 1.0, 40),
    ],
)
def test_discrete_delta_matches_brute_force(sigma, eps, sens):
    ours = discrete_gaussian_delta(Fraction(sigma), Fraction(eps), sens)
    ref = _ref_discrete_delta(sigma, eps, sens)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-300)


@pytest.mark.parametrize(("eps", "delta", "sens"), [*CASES, (1.0, 1e-5, 7.0)])
def test_gaussian_sigma_meets_delta_for_the_discrete_law(eps, delta, sens):
    """The sigma used is a 4-significant-digit Fraction >= the analytic sigma, at which
    the discrete Gaussian's own delta (Thm 7, brute force here) is within the target."""
    cal = gaussian_sigma(epsilon=str(eps), delta=str(delta), l2_sensitivity=int(sens))
    assert isinstance(cal.sigma, Fraction)
    assert round_up_sig(cal.sigma, SIGMA_DIGITS) == cal.sigma
    assert float(cal.sigma) >= analytic_gaussian_sigma(str(eps), str(delta), int(sens))
    assert _ref_discrete_delta(float(cal.sigma), eps, int(sens)) <= delta
    assert cal.rho == Fraction(int(sens) ** 2) / (2 * cal.sigma**2)
    assert cal.method == "cks_thm7"


def test_discrete_sigma_is_raised_when_the_continuous_one_falls_short():
    """At eps = 1, delta = 1e-5 the continuous sigma (3.7306...) is not enough for the
    discrete Gaussian: its delta there exceeds 1e-5, and the sigma used is larger."""
    continuous = analytic_gaussian_sigma(1, "1e-5", 1)
    assert _ref_discrete_delta(continuous, 1.0, 1) > 1e-5
    cal = gaussian_sigma(epsilon=1, delta="1e-5", l2_sensitivity=1)
    assert float(cal.sigma) > round_up_sig(Fraction(continuous), SIGMA_DIGITS)


def _ref_cdp_delta(rho: float, eps: float) -> float:
    def log_bound(alpha: float) -> float:
        return (
            (alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
        )

    res = optimize.minimize_scalar(
        log_bound, bounds=(1 + 1e-9, 1e6), method="bounded", options={"xatol": 1e-12}
    )
    return math.exp(res.fun)


@pytest.mark.parametrize(("rho", "eps"), [(0.025, 1.0), (0.5, 3.0), (0.001, 0.2), (2.0, 10.0)])
def test_cdp_delta_matches_independent_minimisation(rho, eps):
    assert cdp_delta(Fraction(rho), Fraction(eps)) == pytest.approx(
        _ref_cdp_delta(rho, eps), rel=1e-6
    )


def test_multivariate_calibration_uses_zcdp_and_is_valid():
    cal = gaussian_sigma(epsilon=1, delta="1e-6", l2_sensitivity=3, multivariate=True)
    assert cal.method == "zcdp_cor13"
    assert cdp_delta(zcdp_rho(cal.sigma, 3), 1) <= 1e-6
    one_d = gaussian_sigma(epsilon=1, delta="1e-6", l2_sensitivity=3)
    assert cal.sigma >= one_d.sigma


def test_laplace_scale_is_exact():
    assert laplace_scale(3, "0.1") == Fraction(30)
    assert laplace_scale(1, Fraction(1, 3)) == 3
    with pytest.raises(PrivacyParameterError):
        laplace_scale(1, 0)


@pytest.mark.parametrize(
    ("eps", "delta"), [(0, "1e-5"), (-1, "1e-5"), (float("nan"), "1e-5"), (1, 0), (1, 1), (1, -0.1)]
)
def test_bad_gaussian_parameters(eps, delta):
    with pytest.raises(PrivacyParameterError):
        analytic_gaussian_sigma(eps, delta, 1)
    with pytest.raises(PrivacyParameterError):
        gaussian_sigma(epsilon=eps, delta=delta, l2_sensitivity=1)
