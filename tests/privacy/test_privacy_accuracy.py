"""C2 reference values of the half-widths, and C1 coverage of every mechanism's interval.

Coverage: R = 20,000 releases per case. The miss rate must be <= beta + 4.75 SE
(a correct interval fails this with probability <= 1e-6, since its true miss
rate is <= beta) and >= its exact miss probability - 4.75 SE (the interval is
not looser than stated; false failure <= 1e-6). Half-widths are minimal: at
m - 1 the exact miss probability exceeds beta/k (deterministic check).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy.accuracy import (
    discrete_gaussian_halfwidth,
    discrete_laplace_halfwidth,
    gaussian_halfwidth,
    laplace_halfwidth,
    mean_interval,
    mean_interval_from_parts,
    noise_halfwidth,
    result_halfwidth,
)
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanisms import release_counts, release_mean, release_sum
from dpportal.privacy.noise import count_noise, mean_noise, sum_noise
from dpportal.privacy.sensitivity import sum_granularity

R = 20_000
Z = 4.75  # one-sided normal tail 1.0e-6


def _dlap_miss(scale: float, m: int) -> float:
    a = math.exp(-1 / scale)
    return 2 * math.exp(-(m + 1) / scale) / (1 + a)


def _dgauss_miss(sigma: float, m: int, laws) -> float:
    if sigma > 5000:  # midpoint rule: sum_{|y| > m} pmf = 2 Q((m + 1/2) / sigma) (1 + O(sigma**-2))
        return float(2 * stats.norm.sf((m + 0.5) / sigma))
    support, pmf = laws.dgauss_pmf_table(sigma)
    return float(pmf[np.abs(support) > m].sum())


# ------------------------------------------------------------------ reference values


def test_laplace_halfwidth_closed_form():
    assert laplace_halfwidth(2, "0.95") == pytest.approx(2 * math.log(20), rel=1e-12)
    assert laplace_halfwidth("0.5", "0.9", k=10) == pytest.approx(0.5 * math.log(100), rel=1e-12)


def test_gaussian_halfwidth_closed_form():
    assert gaussian_halfwidth(3, "0.95") == pytest.approx(3 * stats.norm.isf(0.025), rel=1e-9)
    assert gaussian_halfwidth(3, "0.99", k=1000) == pytest.approx(
        3 * stats.norm.isf(0.01 / 2000), rel=1e-9
    )


@pytest.mark.parametrize("scale", ["0.3", "1", "10/3", "25", "1000", "123456.789", "1e12"])
@pytest.mark.parametrize(("conf", "k"), [("0.95", 1), ("0.9", 10), ("0.99", 1000)])
def test_discrete_laplace_halfwidth_is_smallest_exact(scale, conf, k):
    """m is the smallest integer with 2 a**(m+1)/(1+a) <= beta/k (independent float check),
    within one unit of the continuous b ln(k/beta)."""
    m = discrete_laplace_halfwidth(scale, conf, k)
    b, target = float(Fraction(scale)), (1 - float(Fraction(conf))) / k
    assert _dlap_miss(b, m) <= target * (1 + 1e-9)
    if m > 0:
        assert _dlap_miss(b, m - 1) > target * (1 - 1e-9)
    assert abs(m - laplace_halfwidth(scale, conf, k)) <= 1 + 1e-9 * b


@pytest.mark.parametrize("sigma", ["0.5", "1", "4.231", "30", "150", "999.9"])
@pytest.mark.parametrize(("conf", "k"), [("0.95", 1), ("0.9", 10), ("0.99", 1000)])
def test_discrete_gaussian_halfwidth_is_smallest_exact(sigma, conf, k, laws):
    m = discrete_gaussian_halfwidth(sigma, conf, k)
    s, target = float(Fraction(sigma)), (1 - float(Fraction(conf))) / k
    assert _dgauss_miss(s, m, laws) <= target * (1 + 1e-9)
    if m > 0:
        assert _dgauss_miss(s, m - 1, laws) > target * (1 - 1e-9)


def test_discrete_gaussian_halfwidth_large_sigma_is_close_to_continuous():
    for sigma in ("1e6", "3.3e11"):
        m = discrete_gaussian_halfwidth(sigma, "0.95", 10)
        assert abs(m - gaussian_halfwidth(sigma, "0.95", 10)) <= 1.0


@pytest.mark.parametrize(
    ("kwargs"),
    [
        dict(scale=1, confidence=0),
        dict(scale=1, confidence=1),
        dict(scale=1, confidence="1.5"),
        dict(scale=1, confidence="0.9", k=0),
        dict(scale=0, confidence="0.9"),
    ],
)
def test_bad_accuracy_parameters(kwargs):
    with pytest.raises(PrivacyParameterError):
        laplace_halfwidth(**kwargs)
    with pytest.raises(PrivacyParameterError):
        discrete_laplace_halfwidth(**kwargs)


# ------------------------------------------------------------------ coverage (C1)


def _check_rate(misses: int, n: int, beta: float, exact: float) -> None:
    rate = misses / n
    assert rate <= beta + Z * math.sqrt(beta * (1 - beta) / n), (rate, beta)
    assert rate >= exact - Z * math.sqrt(max(exact * (1 - exact), 1e-12) / n), (rate, exact)


def _exact_miss(spec, m: int, laws) -> float:
    if spec.mechanism == "laplace":
        return _dlap_miss(float(spec.scale), m)
    return _dgauss_miss(float(spec.sigma), m, laws)


COUNT_CASES = [
    ("laplace", "0.5", 0, 1, 1),
    ("laplace", "1", 0, 3, 1),
    ("gaussian", "1", "1e-6", 1, 1),
    ("laplace", "0.7", 0, 1, 10),
    ("gaussian", "0.7", "1e-6", 2, 10),
    ("laplace", "1", 0, 1, 1000),
    ("gaussian", "1", "1e-6", 1, 1000),
]


@pytest.mark.parametrize(("mechanism", "eps", "delta", "bound", "k"), COUNT_CASES)
def test_count_and_histogram_coverage(mechanism, eps, delta, bound, k, laws, seeded):
    """Per-cell and simultaneous coverage of result_halfwidth at 95 %, from a real
    release's explanation; R = 20,000 releases of k cells (false failure <= 4e-6 total:
    four one-sided 4.75-SE checks)."""
    truth = np.arange(k, dtype=np.int64) * 7
    release = release_counts(
        truth if k > 1 else 42,
        mechanism=mechanism,
        epsilon=eps,
        delta=delta,
        contribution_bound=bound,
        rng=seeded(1),
    )
    explanation = release.to_dict()
    spec = count_noise(
        mechanism=mechanism,
        epsilon=eps,
        delta=delta,
        contribution_bound=bound,
        cells=k,
        statistic=release.spec.statistic,
    )
    assert spec == release.spec
    beta = 0.05
    per_cell = result_halfwidth(explanation, confidence="0.95")
    together = result_halfwidth(explanation, confidence="0.95", simultaneous=True)
    noise = np.abs(spec.sample((R, k), seeded(2)))
    _check_rate(int((noise > per_cell).sum()), R * k, beta, _exact_miss(spec, int(per_cell), laws))
    if k > 1:
        exact_cell = _exact_miss(spec, int(together), laws)
        exact_any = 1 - (1 - exact_cell) ** k
        _check_rate(int((noise > together).any(axis=1).sum()), R, beta, exact_any)


@pytest.mark.parametrize(("mechanism", "delta"), [("laplace", 0), ("gaussian", "1e-7")])
def test_sum_coverage(mechanism, delta, laws, seeded):
    """Sum interval in value units (grid units x granularity): R = 20,000, 90 % and 99 %
    (false failure <= 4e-6)."""
    lower, upper, eps = Fraction(-20), Fraction(50), Fraction(1, 2)
    gamma = sum_granularity(lower, upper, epsilon=eps, contribution_bound=2)
    release = release_sum(
        12345,
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=eps,
        delta=delta,
        contribution_bound=2,
        rng=seeded(3),
    )
    spec = sum_noise(
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=eps,
        delta=delta,
        contribution_bound=2,
    )
    assert spec == release.spec
    noise = np.abs(spec.sample(R, seeded(4)).astype(np.float64)) * float(gamma)
    for conf, beta in (("0.9", 0.1), ("0.99", 0.01)):
        h = result_halfwidth(release.to_dict(), confidence=conf)
        units = round(h / float(gamma))
        assert units * float(gamma) == h
        _check_rate(int((noise > h).sum()), R, beta, _exact_miss(spec, units, laws))


@pytest.mark.parametrize(("mechanism", "delta"), [("laplace", 0), ("gaussian", "1e-6")])
def test_mean_coverage(mechanism, delta, seeded):
    """Mean interval (interval arithmetic, each part at 1 - beta/2, clamped): R = 20,000.
    Miss rate <= beta + 4.75 SE (false failure <= 1e-6). It is conservative by design,
    but not vacuous: miss rate >= 0.001 (observed ~0.003-0.008, i.e. >= 60 misses
    expected; fewer than 20 has probability < 1e-9)."""
    lower, upper, n = Fraction(0), Fraction(100), 400
    gamma = sum_granularity(lower, upper, epsilon=Fraction(1, 2))
    sum_units = int(Fraction(4250, 100) * n / gamma) + 3
    true_mean = sum_units * gamma / n
    release = release_mean(
        sum_units,
        n,
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=1,
        delta=delta,
        confidence="0.95",
        rng=seeded(5),
    )
    explanation = release.to_dict()
    estimate, low, high = mean_interval(explanation, confidence="0.95")
    assert (low, high) == (float(release.interval[0]), float(release.interval[1]))
    assert estimate == float(release.estimate)
    sum_spec, count_spec = mean_noise(
        lower=lower, upper=upper, granularity=gamma, mechanism=mechanism, epsilon=1, delta=delta
    )
    assert (sum_spec, count_spec) == (release.sum.spec, release.count.spec)
    part = Fraction(39, 40)
    hs = noise_halfwidth(
        noise=sum_spec.noise, parameter=sum_spec.scale or sum_spec.sigma, confidence=part
    )
    hc = noise_halfwidth(
        noise=count_spec.noise, parameter=count_spec.scale or count_spec.sigma, confidence=part
    )
    misses = 0
    for zs, zc in zip(
        sum_spec.sample(R, seeded(6)).tolist(),
        count_spec.sample(R, seeded(7)).tolist(),
        strict=True,
    ):
        _, lo, hi, _ = mean_interval_from_parts(
            noisy_sum_units=sum_units + zs,
            sum_halfwidth_units=hs,
            noisy_count=n + zc,
            count_halfwidth=hc,
            granularity=gamma,
            lower=lower,
            upper=upper,
        )
        misses += not lo <= true_mean <= hi
    assert misses / R <= 0.05 + Z * math.sqrt(0.05 * 0.95 / R)
    assert misses / R >= 0.001


def test_mean_with_nonpositive_noisy_count_is_uninformative():
    est, lo, hi, flag = mean_interval_from_parts(
        noisy_sum_units=-50,
        sum_halfwidth_units=30,
        noisy_count=-2,
        count_halfwidth=1,
        granularity=Fraction(1),
        lower=Fraction(0),
        upper=Fraction(10),
    )
    assert flag and est == 5 and (lo, hi) == (0, 10)
    est, lo, hi, flag = mean_interval_from_parts(
        noisy_sum_units=40,
        sum_halfwidth_units=10,
        noisy_count=0,
        count_halfwidth=8,
        granularity=Fraction(1),
        lower=Fraction(0),
        upper=Fraction(10),
    )
    assert flag and est == 5 and lo == Fraction(30, 8) and hi == 10
