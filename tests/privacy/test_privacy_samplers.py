"""S1-S3: the exact samplers against their exact laws (PRIVACY-TESTING.md).

N = 200,000 draws per case. Chi-square rejects at p < 1e-6 and the z-tests at
|z| > 6 (two-sided 2e-9), so each assertion that the sampler is RIGHT fails
spuriously with probability <= 1e-6. Assertions that a WRONG scale is rejected
(power) fail spuriously with probability far below 1e-6: the shifts are >= 15
standard errors (z-tests) or the noncentrality is checked in the test (chi-square).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.samplers import discrete_gaussian, discrete_laplace

N = 200_000
P_REJECT = 1e-6
Z_MAX = 6.0

LAPLACE_SCALES = [Fraction(1, 2), Fraction(1), Fraction(10, 3), Fraction(10), Fraction(1000)]
GAUSS_SIGMAS = [Fraction(1, 2), Fraction(1), Fraction(3), Fraction(10), Fraction(100)]


def _draw(sampler, parameter, seeded, seed):
    rng = None if seed is None else seeded(seed)
    return sampler(parameter, N, rng)


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
@pytest.mark.parametrize("seed", [None, 11])
def test_discrete_laplace_matches_exact_pmf(scale, seed, seeded, laws, stat):
    """S1/S3 chi-square vs the exact pmf; seed None = the real CSPRNG path.

    False failure (right law rejected): <= 1e-6 (chi-square p < 1e-6). The same
    samples must be rejected against scales x0.95 and x1.05 (checked when the
    noncentrality makes a miss < 1e-6; for larger scales the z-test below has power).
    """
    y = _draw(discrete_laplace, scale, seeded, seed)
    assert y.dtype == np.int64 and y.shape == (N,)
    b = float(scale)
    p_value, _ = stat.chi_square_pvalue(y, lambda e: laws.dlap_cdf(b, e), b)
    assert p_value >= P_REJECT
    for wrong in (0.95 * b, 1.05 * b):
        p_wrong, bins = stat.chi_square_pvalue(y, lambda e, w=wrong: laws.dlap_cdf(w, e), wrong)
        assert p_wrong < P_REJECT, f"chi-square has no power against scale {wrong}"


@pytest.mark.parametrize("sigma", GAUSS_SIGMAS)
@pytest.mark.parametrize("seed", [None, 12])
def test_discrete_gaussian_matches_exact_pmf(sigma, seed, seeded, laws, stat):
    """S1/S3 chi-square vs the exact pmf (sigma^2 from 0.25 to 1e4). False failure <= 1e-6."""
    y = _draw(discrete_gaussian, sigma, seeded, seed)
    assert y.dtype == np.int64 and y.shape == (N,)
    s = float(sigma)
    p_value, _ = stat.chi_square_pvalue(y, lambda e: laws.dgauss_cdf(s, e), s)
    assert p_value >= P_REJECT
    for wrong in (0.95 * s, 1.05 * s):
        p_wrong, _ = stat.chi_square_pvalue(y, lambda e, w=wrong: laws.dgauss_cdf(w, e), wrong)
        assert p_wrong < P_REJECT, f"chi-square has no power against sigma {wrong}"


@pytest.mark.parametrize(
    "scale", [Fraction(1, 2), Fraction(1), Fraction(10), Fraction(1000), Fraction(10**12)]
)
def test_discrete_laplace_mean_abs_and_power(scale, stat, laws):
    """S2/S3: mean |Y| equals 2a/((1-a)(1+a)) (|z| <= 6, false failure 2e-9), real CSPRNG;
    the same samples give |z| > 6 against scales x0.95 and x1.05 (shift >= 15 SE)."""
    y = discrete_laplace(scale, N)
    b = float(scale)
    mean, var = laws.dlap_abs_moments(b)
    assert abs(stat.z_score(np.abs(y), mean, var)) <= Z_MAX
    for wrong in (0.95 * b, 1.05 * b):
        w_mean, w_var = laws.dlap_abs_moments(wrong)
        assert abs(stat.z_score(np.abs(y), w_mean, w_var)) > Z_MAX


@pytest.mark.parametrize("sigma", [Fraction(1, 2), Fraction(2), Fraction(10), Fraction(100)])
def test_discrete_gaussian_mean_abs_and_power(sigma, seeded, stat, laws):
    """S2/S3 for the discrete Gaussian: |z| <= 6 at the true sigma (false failure 2e-9),
    |z| > 6 at sigma x0.95 and x1.05 (shift >= 15 SE)."""
    y = discrete_gaussian(sigma, N, seeded(5))
    mean, var = laws.dgauss_abs_moments(float(sigma))
    assert abs(stat.z_score(np.abs(y), mean, var)) <= Z_MAX
    for wrong in (0.95 * float(sigma), 1.05 * float(sigma)):
        w_mean, w_var = laws.dgauss_abs_moments(wrong)
        assert abs(stat.z_score(np.abs(y), w_mean, w_var)) > Z_MAX


def test_symmetry(seeded):
    """Pr[Y > 0] = Pr[Y < 0]: binomial z-test on the signs, |z| <= 6 (false failure 2e-9)."""
    for y in (discrete_laplace(Fraction(7, 3), N, seeded(1)), discrete_gaussian(5, N, seeded(2))):
        pos, neg = int(np.sum(y > 0)), int(np.sum(y < 0))
        assert abs(pos - neg) / math.sqrt(pos + neg) <= Z_MAX


@pytest.mark.parametrize(
    "scale",
    [
        Fraction(10**30 + 7, 10**29 + 3),  # ~10, numerator and denominator > 2**64
        Fraction(2**70 + 1, 2**40 + 3),  # ~1.07e9, numerator > 2**64
        Fraction(10**12) * Fraction(0.1),  # a float-derived epsilon: 2**55 in the numerator
    ],
)
def test_huge_rational_scales_are_exact(scale, seeded, stat, laws):
    """Scales whose numerator or denominator exceed 2**64 go through the big-integer path
    and still follow the exact law: chi-square p >= 1e-6 (false failure <= 1e-6)."""
    y = discrete_laplace(scale, N, seeded(3))
    b = float(scale)
    p_value, _ = stat.chi_square_pvalue(y, lambda e: laws.dlap_cdf(b, e), b)
    assert p_value >= P_REJECT


@pytest.mark.parametrize(
    "sigma", [Fraction(123456789123456789, 10**16), Fraction(10**6), Fraction(31415926535, 10**7)]
)
def test_discrete_gaussian_big_integer_path(sigma, seeded, stat, laws):
    """sigma**2 with huge numerator/denominator (2 p q t**2 > 2**63): object-int path.
    Chi-square against the exact law for the small sigma (false failure <= 1e-6);
    for the large ones a z-test of mean |Y| (false failure 2e-9)."""
    y = discrete_gaussian(sigma, N, seeded(4))
    s = float(sigma)
    if s < 100:
        p_value, _ = stat.chi_square_pvalue(y, lambda e: laws.dgauss_cdf(s, e), s)
        assert p_value >= P_REJECT
    else:
        # for sigma >= 100 the discrete law's E|Y| equals sigma sqrt(2/pi) to < 1e-12 relative
        mean = s * math.sqrt(2 / math.pi)
        assert abs(stat.z_score(np.abs(y), mean, s * s - mean * mean)) <= Z_MAX


def test_scale_types_are_exact_and_equivalent(seeded):
    """Fraction, Decimal, int, str and float scales give the same exact scale."""
    ref = discrete_laplace(Fraction(5, 2), 1000, seeded(9))
    for form in (Decimal("2.5"), "2.5", "5/2", 2.5):
        assert np.array_equal(discrete_laplace(form, 1000, seeded(9)), ref)
    assert np.array_equal(
        discrete_laplace(3, 1000, seeded(9)), discrete_laplace(Fraction(3), 1000, seeded(9))
    )
    assert discrete_gaussian("1.5", (4, 5), seeded(1)).shape == (4, 5)
    assert discrete_laplace(1, 0).shape == (0,)


@pytest.mark.parametrize("bad", [0, -1, "0", float("nan"), float("inf"), Decimal("NaN"), "abc"])
def test_bad_scales_are_refused(bad):
    with pytest.raises(PrivacyParameterError):
        discrete_laplace(bad, 10)
    with pytest.raises(PrivacyParameterError):
        discrete_gaussian(bad, 10)


def test_chi_square_helper_has_power_at_these_sizes(laws):
    """Sanity of S3 for the chi-square at scale 1: the noncentrality against x0.95 makes
    a miss (p >= 1e-6) less likely than 1e-6 (computed, not sampled)."""
    edges = np.arange(-60, 61)
    true_p = np.diff(np.concatenate([[0.0], laws.dlap_cdf(1.0, edges), [1.0]]))
    alt_p = np.diff(np.concatenate([[0.0], laws.dlap_cdf(0.95, edges), [1.0]]))
    keep = alt_p * N >= 5
    lam = N * np.sum((true_p[keep] - alt_p[keep]) ** 2 / alt_p[keep])
    dof = int(keep.sum()) - 1
    critical = stats.chi2.isf(P_REJECT, dof)
    assert stats.ncx2.cdf(critical, dof, lam) < 1e-6
