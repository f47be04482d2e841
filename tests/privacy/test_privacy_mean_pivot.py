"""The mean's pivot interval (dpportal.privacy.mean_pivot): its quantiles against an
independent exact double sum, its fallback, its edge cases, and preview == result.

Deterministic (no statistical assertion): coverage through the compute path is
tests/test_releases_mean_coverage.py.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.accuracy import mean_interval
from dpportal.privacy.mean_pivot import (
    NoiseLaw,
    mean_pivot_halfwidth,
    mean_pivot_interval,
    pivot_quantile,
)
from dpportal.privacy.mechanisms import release_mean
from dpportal.privacy.noise import mean_noise
from dpportal.privacy.planning import statistic_halfwidth
from dpportal.privacy.rng import SeededTestRandom
from dpportal.privacy.sensitivity import rounding_gap, sum_granularity


def dlap_pmf(scale: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
    ys = np.arange(-reach, reach + 1)
    a = math.exp(-1 / scale)
    return ys, (1 - a) / (1 + a) * a ** np.abs(ys)


def exact_coverage(q: float, sum_scale: float, count_scale: float, g: float, c: float, w: float):
    """Pr[|g Y_s - c Y_c| + w |Y_c| <= q] by brute force over both supports."""
    ys, ps = dlap_pmf(sum_scale, int(40 * sum_scale))
    yc, pc = dlap_pmf(count_scale, int(40 * count_scale))
    total = 0.0
    for y, p in zip(yc.tolist(), pc.tolist(), strict=True):
        inside = np.abs(g * ys - c * y) + w * abs(y) <= q
        total += p * float(ps[inside].sum())
    return total


@pytest.mark.parametrize(("c", "w", "beta"), [(10, 0.5, "0.05"), (0, 2, "0.1"), (40, 1, "0.01")])
def test_pivot_quantile_is_valid_and_nearly_smallest(c, w, beta):
    sum_law = NoiseLaw("discrete_laplace", Fraction(4000))
    count_law = NoiseLaw("discrete_laplace", Fraction(3))
    g = Fraction(1, 80)
    q = pivot_quantile(sum_law, count_law, g, Fraction(c), Fraction(w), Fraction(beta))
    args = (4000.0, 3.0, 1 / 80, float(c), float(w))
    assert exact_coverage(float(q), *args) >= 1 - float(beta)
    # the margins (point masses of 1/8000 at each end) cost little: 3 % less q misses
    assert exact_coverage(0.97 * float(q), *args) < 1 - float(beta)


def test_huge_count_noise_falls_back_to_the_union_bound():
    sum_law = NoiseLaw("discrete_laplace", Fraction(10**7))
    count_law = NoiseLaw("discrete_laplace", Fraction(10**5))
    q = pivot_quantile(sum_law, count_law, Fraction(1), Fraction(5), Fraction(1), Fraction(1, 20))
    expected = (10**7 + 6 * 10**5) * math.log(40)  # b ln(2/(beta/2)) per part, continuous
    assert q == pytest.approx(expected, rel=1e-4)


def _mean_case(mechanism="laplace", delta=0):
    lower, upper = Fraction(0), Fraction(100)
    gamma = sum_granularity(lower, upper, epsilon=Fraction(1, 2))
    sum_spec, count_spec = mean_noise(
        lower=lower, upper=upper, granularity=gamma, mechanism=mechanism, epsilon=1, delta=delta
    )
    return dict(
        sum_law=NoiseLaw.of_spec(sum_spec),
        count_law=NoiseLaw.of_spec(count_spec),
        granularity=gamma,
        lower=lower,
        upper=upper,
    )


def test_interval_contains_the_estimate_and_is_clamped():
    case = _mean_case()
    gamma = case["granularity"]
    for sum_units, count in [(int(30 * 400 / gamma), 400), (int(99.9 * 50 / gamma), 50)]:
        est, low, high, flag = mean_pivot_interval(
            noisy_sum_units=sum_units, noisy_count=count, confidence="0.95", **case
        )
        assert not flag and case["lower"] <= low <= est <= high <= case["upper"]
    est, low, high, flag = mean_pivot_interval(
        noisy_sum_units=-5, noisy_count=-3, confidence="0.95", **case
    )
    assert flag and est == 50 and low <= est <= high


def test_preview_equals_the_interval_at_the_expectations():
    """At N^ = n and S^ = n * (top of the bounds), the released interval's half-width
    below the estimate is the preview's (same quantile, same rounding gap)."""
    case = _mean_case("gaussian", Fraction(1, 10**6))
    n = 5000
    gamma = case["granularity"]
    top = int(case["upper"] / gamma)
    est, low, high, _ = mean_pivot_interval(
        noisy_sum_units=top * n, noisy_count=n, confidence="0.9", **case
    )
    preview = mean_pivot_halfwidth(n=Fraction(n), confidence="0.9", **case)
    assert high == case["upper"] and est - low == preview
    assert float(preview) == (
        statistic_halfwidth(
            kind="mean",
            mechanism="gaussian",
            epsilon=1,
            delta=Fraction(1, 10**6),
            confidence="0.9",
            lower=0,
            upper=100,
            n_guess=n,
        )  # fmt: skip
    )
    assert rounding_gap(0, 100, gamma) == gamma / 2


def test_a_stored_mean_is_read_back_with_the_same_interval():
    release = release_mean(
        int(42 * 300 / _mean_case()["granularity"]), 300, lower=0, upper=100,
        granularity=_mean_case()["granularity"], mechanism="laplace", epsilon=1,
        confidence="0.95", rng=SeededTestRandom(3),
    )  # fmt: skip
    stored = release.to_dict()
    assert mean_interval(stored, confidence="0.95") == (
        float(release.estimate),
        float(release.interval[0]),
        float(release.interval[1]),
    )
    assert stored["interval"] == [float(release.interval[0]), float(release.interval[1])]
