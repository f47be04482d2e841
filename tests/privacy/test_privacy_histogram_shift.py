"""Issue 13.6a: a Gaussian histogram with L rows per person is calibrated for ONE cell moved
by L, and that is the worst shift pattern (dpportal.privacy.calibration).

The exact delta of a shift pattern v (k_i rows in cell i) is computed here
independently of dpportal.privacy: the privacy loss is
(||v||^2 - 2 sum k_i Y_i) / (2 sigma^2), Y_i iid discrete Gaussian, so
delta(eps) = sum_s Pr[sum k_i Y_i = s] (1 - exp(eps - loss(s)))_+ over the exact
law of sum k_i Y_i (convolution of the pmf, truncated at 14 sigma: < 1e-40 lost).
Deterministic: no statistical assertion.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.calibration import cdp_delta, gaussian_sigma, zcdp_rho
from dpportal.privacy.noise import count_noise


def partitions(n: int, parts: int, largest: int | None = None):
    """Partitions of n into at most `parts` positive parts (non-increasing)."""
    largest = n if largest is None else largest
    if n == 0:
        yield ()
        return
    if parts == 0:
        return
    for k in range(min(n, largest), 0, -1):
        for rest in partitions(n - k, parts - 1, k):
            yield (k, *rest)


def pattern_delta(sigma: float, pattern: tuple[int, ...], epsilon: float) -> float:
    """Exact hockey-stick divergence of N_Z(0, s^2 I) against N_Z(v, s^2 I), v = pattern."""
    reach = math.ceil(14 * sigma) + 2
    ys = np.arange(-reach, reach + 1, dtype=np.float64)
    log_pmf = -(ys**2) / (2 * sigma**2)
    pmf = np.exp(log_pmf - np.logaddexp.reduce(log_pmf))
    law, offset = np.array([1.0]), 0
    for k in pattern:
        spread = np.zeros(2 * k * reach + 1)
        spread[::k] = pmf
        law, offset = np.convolve(law, spread), offset - k * reach
    s = np.arange(law.size) + offset
    loss = (sum(k * k for k in pattern) - 2.0 * s) / (2 * sigma**2)
    return float(np.sum(law * np.clip(-np.expm1(epsilon - loss), 0.0, None)))


def exact_one_cell_sigma(bound: int, epsilon: float, delta: float) -> float:
    """The smallest sigma (1e-6 relative) with pattern_delta(sigma, (L,), eps) <= delta."""
    lo, hi = 0.05, 10.0 * bound * math.sqrt(2 * math.log(1.25 / delta)) / epsilon + 1
    while hi - lo > 1e-6 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pattern_delta(mid, (bound,), epsilon) <= delta else (mid, hi)
    return hi


@pytest.mark.parametrize("bound", range(2, 11))
@pytest.mark.parametrize(("epsilon", "delta"), [(1, 1e-6), (0.3, 1e-5), (4, 1e-9)])
def test_histogram_sigma_is_the_exact_worst_case_calibration(bound, epsilon, delta):
    """Chosen sigma = exact one-cell calibration within 0.5 % (rounded up to 4 digits),
    and valid: the one-cell delta at the chosen sigma is within the target."""
    spec = count_noise(
        mechanism="gaussian", epsilon=Fraction(epsilon), delta=Fraction(delta),
        contribution_bound=bound, cells=12, statistic="histogram",
    )  # fmt: skip
    exact = exact_one_cell_sigma(bound, epsilon, delta)
    chosen = float(spec.sigma)
    assert exact * (1 - 1e-5) <= chosen <= exact * 1.005
    assert pattern_delta(chosen, (bound,), epsilon) <= delta
    # the old zCDP calibration asked for 6-11 % more noise than this
    old = gaussian_sigma(epsilon=epsilon, delta=delta, l2_sensitivity=bound, multivariate=True)
    assert float(old.sigma) >= 1.04 * chosen
    assert cdp_delta(zcdp_rho(old.sigma, bound), epsilon) <= delta


@pytest.mark.parametrize("bound", range(2, 7))
@pytest.mark.parametrize("cells", [2, 3, 12])
@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.1, 1e-5), (1, 1e-6), (1, 1e-9), (10, 1e-6), (50, 1e-6)]
)
def test_every_shift_pattern_is_within_delta_at_the_chosen_sigma(bound, cells, epsilon, delta):
    """All partitions of every m <= L into at most `cells` parts: delta <= target, and the
    single cell moved by L is the largest (the claim the calibration rests on)."""
    spec = count_noise(
        mechanism="gaussian", epsilon=Fraction(epsilon), delta=Fraction(delta),
        contribution_bound=bound, cells=cells, statistic="histogram",
    )  # fmt: skip
    sigma = float(spec.sigma)
    single = pattern_delta(sigma, (bound,), epsilon)
    for m in range(1, bound + 1):
        for pattern in partitions(m, cells):
            value = pattern_delta(sigma, pattern, epsilon)
            assert value <= delta, (pattern, value)
            assert value <= single, (pattern, value, single)


def test_pattern_delta_matches_the_one_dimensional_formula():
    """Sanity of the independent reference: one cell equals CKS Thm 7 (calibration module)."""
    from dpportal.privacy.calibration import discrete_gaussian_delta

    for sigma, sens, eps in [(4.231, 1, 1.0), (12.9, 3, 1.0), (2.5, 5, 10.0)]:
        assert pattern_delta(sigma, (sens,), eps) == pytest.approx(
            discrete_gaussian_delta(Fraction(sigma), eps, sens), rel=1e-6
        )


def laplace_pattern_profile(scale: float, pattern: tuple[int, ...], eps: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of discrete Laplace noise (scale b) per cell against a shift pattern.

    A cell moved by k contributes the loss (|y - k| - |y|)/b: k/b when y <= 0
    (probability 1/(1+a), a = e^(-1/b)), (k - 2y)/b for 0 < y < k, -k/b when y >= k;
    cells are independent, so the loss (in units of 1/b, integers) is their convolution.
    """
    a = math.exp(-1 / scale)
    law, low = np.array([1.0]), 0
    for k in pattern:
        cell = np.zeros(2 * k + 1)  # index j <-> loss j - k
        cell[2 * k] = 1 / (1 + a)
        cell[0] = a**k / (1 + a)
        for y in range(1, k):
            cell[k - 2 * y + k] += (1 - a) / (1 + a) * a**y
        law, low = np.convolve(law, cell), low - k
    loss = (np.arange(law.size) + low) / scale
    return np.array([np.sum(law * np.clip(-np.expm1(e - loss), 0, None)) for e in eps])


@pytest.mark.parametrize("bound", range(2, 7))
@pytest.mark.parametrize("epsilon", [0.1, 1, 5])
def test_laplace_one_cell_dominates_every_pattern(bound, epsilon):
    """The accountant records a Laplace histogram as one cell moved by L
    (dpportal.privacy.mechanism_records): its whole privacy profile must be >= every
    pattern's (a dominating pair), checked on a fine grid of eps in [0, L/b]."""
    scale = bound / epsilon
    grid = np.linspace(0, epsilon, 201)
    single = laplace_pattern_profile(scale, (bound,), grid)
    for m in range(1, bound + 1):
        for pattern in partitions(m, bound):
            assert np.all(laplace_pattern_profile(scale, pattern, grid) <= single + 1e-15)


@pytest.mark.parametrize("bound", range(7, 11))
@pytest.mark.parametrize(("epsilon", "delta"), [(1, 1e-6), (4, 1e-9), (10, 1e-6)])
def test_every_shift_pattern_up_to_ten_rows(bound, epsilon, delta):
    """The same exhaustive check for L = 7..10 (every partition of every m <= L, 12 cells),
    at epsilon 1, 4 and 10 (epsilon 0.3 at L = 10 takes 45 s; L <= 6 covers 0.1 above)."""
    spec = count_noise(
        mechanism="gaussian", epsilon=Fraction(epsilon), delta=Fraction(delta),
        contribution_bound=bound, cells=12, statistic="histogram",
    )  # fmt: skip
    sigma = float(spec.sigma)
    single = pattern_delta(sigma, (bound,), epsilon)
    assert single <= delta
    for m in range(1, bound + 1):
        for pattern in partitions(m, 12):
            assert pattern_delta(sigma, pattern, epsilon) <= single, pattern
