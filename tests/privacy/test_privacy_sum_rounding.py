"""Issue 13.6c: a released sum's interval covers the CLIPPED sum, not only the grid-rounded one.

Rounding n rows to the grid moves a sum by up to n r (r = sensitivity.rounding_gap).
The released-sum grid (sum_granularity with rows_bound=MAX_ROWS) makes MAX_ROWS r
about 2**-11 of the noise scale, and that bound is added to the half-width.
Tested at 1e7 rows, all equal to 12.3 (the issue's example, scaled up), through the
functions the compute readers call (to_grid_units, exact_grid_sum).

Coverage: R = 20,000 noise draws; miss rate <= beta + 4.75 SE (false failure
<= 1e-6 for a correct interval). The old coarse grid is shown to fail the same
check (its rounding shift is 1.2 noise scales at 1e7 rows).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.mechanisms import release_sum
from dpportal.privacy.noise import sum_noise
from dpportal.privacy.planning import statistic_halfwidth
from dpportal.privacy.rng import SeededTestRandom
from dpportal.privacy.sensitivity import (
    MAX_ROWS,
    exact_grid_sum,
    rounding_gap,
    sum_granularity,
    to_grid_units,
)

ROWS = 10_000_000
LOWER, UPPER, EPS = Fraction(0), Fraction(100), Fraction(1)
R = 20_000


def grid_sum(gamma: Fraction) -> int:
    values = np.full(ROWS, 12.3)
    return exact_grid_sum(to_grid_units(values, lower=LOWER, upper=UPPER, granularity=gamma))


def miss_rate(gamma: Fraction, confidence: str, seed: int) -> tuple[float, float]:
    units = grid_sum(gamma)
    clipped = ROWS * Fraction(12.3)  # the exact clipped sum of the float values
    spec = sum_noise(lower=LOWER, upper=UPPER, granularity=gamma, mechanism="laplace", epsilon=EPS)
    release = release_sum(
        units, lower=LOWER, upper=UPPER, granularity=gamma, mechanism="laplace", epsilon=EPS,
        rng=SeededTestRandom(seed),
    )  # fmt: skip
    h = result_halfwidth(release.to_dict(), confidence=confidence)
    noise = spec.sample(R, SeededTestRandom(seed + 1)).astype(object)
    errors = np.array([float((units + int(y)) * gamma - clipped) for y in noise])
    return float(np.mean(np.abs(errors) > h)), h


def test_the_released_sum_grid_keeps_rounding_far_below_the_noise():
    gamma = sum_granularity(LOWER, UPPER, epsilon=EPS, rows_bound=MAX_ROWS)
    spec = sum_noise(lower=LOWER, upper=UPPER, granularity=gamma, mechanism="laplace", epsilon=1)
    scale_value = spec.scale * gamma  # 100, in the data's units
    assert spec.rounding_bound == MAX_ROWS * rounding_gap(LOWER, UPPER, gamma)
    assert spec.rounding_bound <= scale_value / 2**10
    units = grid_sum(gamma)
    assert abs(units * gamma - ROWS * Fraction(12.3)) <= spec.rounding_bound
    # the preview shows the same half-width the stored result gives
    h = result_halfwidth(spec.describe(), confidence="0.95")
    assert statistic_halfwidth(
        kind="sum", mechanism="laplace", epsilon=EPS, confidence="0.95", lower=LOWER, upper=UPPER
    ) == pytest.approx(h, rel=1e-12)


@pytest.mark.parametrize(("confidence", "beta"), [("0.9", 0.1), ("0.99", 0.01)])
def test_sum_interval_covers_the_clipped_sum_at_1e7_rows(confidence, beta):
    gamma = sum_granularity(LOWER, UPPER, epsilon=EPS, rows_bound=MAX_ROWS)
    rate, _ = miss_rate(gamma, confidence, seed=61)
    assert rate <= beta + 4.75 * math.sqrt(beta * (1 - beta) / R)


def test_the_old_grid_missed_the_clipped_sum_at_1e7_rows():
    """The defect this fixes: on the coarse grid (no row bound) the stored spec has no
    rounding bound, and 1e7 rows of 12.3 shift the grid sum by ~1.2 noise scales."""
    gamma = sum_granularity(LOWER, UPPER, epsilon=EPS)
    assert (
        sum_noise(
            lower=LOWER, upper=UPPER, granularity=gamma, mechanism="laplace", epsilon=EPS
        ).rounding_bound
        is None
    )
    rate, _ = miss_rate(gamma, "0.9", seed=71)
    assert rate > 0.1 + 4.75 * math.sqrt(0.1 * 0.9 / R)


def test_exact_grid_sum_never_overflows():
    top = 2**52 - 1
    units = np.array([top] * 5000 + [-top] * 1000 + [12345], dtype=np.int64)
    assert exact_grid_sum(units) == 4000 * top + 12345
    assert exact_grid_sum(np.array([], dtype=np.int64)) == 0
