"""Mechanism results: explanations, float attack (F1), bad parameters, pipeline scale (M1).

M1 z-tests compare the mean |noise| of R = 20,000 draws with its exact
expectation at the intended scale, |z| <= 6: false failure ~2e-9 each.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.accounting import Cost, mean_budget_split
from dpportal.privacy.calibration import gaussian_sigma
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanisms import (
    release_argmax,
    release_counts,
    release_mean,
    release_sum,
)
from dpportal.privacy.noise import count_noise, mean_noise, sum_noise
from dpportal.privacy.sensitivity import sum_granularity, to_grid_units

CANARY = 987654


def _flat_strings(d) -> str:
    return json.dumps({k: v for k, v in d.items() if k not in ("values", "values_decimal")})


def test_count_result_explains_itself_without_the_truth(seeded):
    result = release_counts(
        CANARY, mechanism="laplace", epsilon="0.25", contribution_bound=2, rng=seeded(1)
    )
    d = result.to_dict()
    json.dumps(d)
    assert d["statistic"] == "count" and d["mechanism"] == "laplace"
    assert d["noise"] == "discrete_laplace"
    assert Fraction(d["scale"]) == 8 and d["scale_float"] == 8.0
    assert d["epsilon"] == "0.25" and d["delta"] == "0"
    assert d["l1_sensitivity"] == "2" and d["contribution_bound"] == 2
    assert d["granularity"] == "1" and d["cells"] == 1
    assert all(type(v) is int for v in d["values"])
    assert str(CANARY) not in _flat_strings(d)


def test_gaussian_histogram_records_sigma_and_rho(seeded):
    result = release_counts(
        [5, 0, 7],
        mechanism="gaussian",
        epsilon=1,
        delta="1e-6",
        contribution_bound=3,
        rng=seeded(2),
    )
    d = result.to_dict()
    json.dumps(d)
    sigma = Fraction(d["sigma"])
    assert Fraction(d["rho"]) == Fraction(9) / (2 * sigma * sigma)
    # L = 3 rows can move 3 cells; one cell moved by 3 is the worst case (issue 13.6a)
    assert d["calibration"] == "cks_thm7"
    assert Fraction(d["sigma"]) == gaussian_sigma(epsilon=1, delta="1e-6", l2_sensitivity=3).sigma
    assert d["delta_achieved"] <= 1e-6 and d["statistic"] == "histogram" and d["cells"] == 3


def test_sum_values_are_exact_grid_multiples(seeded):
    """F1: released sums are integers in grid units; the decimal string is exactly
    units * gamma; truths 0 and 1 (unit) give identical residues modulo the grid."""
    gamma = sum_granularity("-2.5", "7.25", epsilon="0.3", contribution_bound=2)
    assert gamma == Fraction(1, 2**18)
    for truth in (0, 1, 10**30):
        result = release_sum(
            truth,
            lower="-2.5",
            upper="7.25",
            granularity=gamma,
            mechanism="laplace",
            epsilon="0.3",
            contribution_bound=2,
            rng=seeded(truth % 7),
        )
        d = result.to_dict()
        json.dumps(d)
        (units,) = d["values"]
        assert type(units) is int
        assert Fraction(d["values_decimal"][0]) == units * gamma
        assert (Fraction(d["values_decimal"][0]) / gamma).denominator == 1
        assert d["unit"] == "grid" and Fraction(d["granularity"]) == gamma
        assert Fraction(d["l1_sensitivity"]) == 2 * Fraction("7.25") / gamma


def test_every_released_number_is_an_integer(seeded):
    """F1: counts, histogram cells, sums (units) and the argmax index are Python ints."""
    outs = [
        release_counts(3, mechanism="gaussian", epsilon=2, delta="1e-9", rng=seeded(1)).values,
        release_counts(np.arange(50), mechanism="laplace", epsilon="0.1", rng=seeded(2)).values,
        release_sum(
            77,
            lower=0,
            upper=1,
            granularity=Fraction(1, 1024),
            mechanism="gaussian",
            epsilon=1,
            delta="1e-6",
            rng=seeded(3),
        ).values,
    ]
    for values in outs:
        assert all(type(v) is int for v in values)
    assert type(release_argmax([1, 5, 3], epsilon=1, rng=seeded(4)).index) is int


def test_mean_result(seeded):
    gamma = sum_granularity(0, 100, epsilon="0.5")
    units = int(to_grid_units(np.full(1000, 42.0), lower=0, upper=100, granularity=gamma).sum())
    result = release_mean(
        units,
        1000,
        lower=0,
        upper=100,
        granularity=gamma,
        mechanism="laplace",
        epsilon=1,
        confidence="0.95",
        rng=seeded(5),
    )
    d = result.to_dict()
    json.dumps(d)
    assert d["epsilon"] == "1" and d["sum"]["epsilon"] == "0.5" and d["count"]["epsilon"] == "0.5"
    assert 0 <= d["interval"][0] <= d["estimate"] <= d["interval"][1] <= 100
    assert d["interval"][0] < 42 < d["interval"][1]
    assert str(units) not in json.dumps(d)


def test_mean_with_tiny_count_is_flagged(seeded):
    flagged = False
    for seed in range(40):
        r = release_mean(
            0,
            0,
            lower=0,
            upper=10,
            granularity=1,
            mechanism="laplace",
            epsilon="0.2",
            confidence="0.9",
            rng=seeded(seed),
        )
        if r.count_nonpositive:
            flagged = True
            assert r.estimate == 5 and 0 <= r.interval[0] <= r.interval[1] <= 10
    assert flagged  # Pr[noisy count <= 0] ~ 0.55 per run: never in 40 runs ~ 1e-14


def test_argmax_releases_only_the_index(seeded):
    result = release_argmax([10, 500, 20], epsilon=5, rng=seeded(6))
    d = result.to_dict()
    json.dumps(d)
    assert d["index"] == 1 and d["cells"] == 3 and d["tie_break"] == "lowest index"
    assert "values" not in d and Fraction(d["scale"]) == Fraction(1, 5)


BAD = [
    dict(epsilon=0),
    dict(epsilon=-1),
    dict(epsilon=float("nan")),
    dict(epsilon=float("inf")),
    dict(epsilon=Decimal("Infinity")),
    dict(epsilon="x"),
    dict(epsilon=True),
    dict(epsilon=1, contribution_bound=0),
    dict(epsilon=1, contribution_bound=1.5),
    dict(epsilon=1, delta="0.1"),  # Laplace refuses a delta it does not use
]


@pytest.mark.parametrize("kwargs", BAD)
def test_bad_parameters_raise_one_clear_error(kwargs):
    with pytest.raises(PrivacyParameterError) as info:
        release_counts(5, mechanism="laplace", **kwargs)
    assert isinstance(info.value, ValueError) and str(info.value)


@pytest.mark.parametrize("delta", [0, -0.1, 1, "1.5", float("nan")])
def test_gaussian_delta_must_be_in_open_unit_interval(delta):
    with pytest.raises(PrivacyParameterError, match="delta"):
        release_counts(5, mechanism="gaussian", epsilon=1, delta=delta)


def test_other_bad_parameters():
    common = dict(granularity=1, mechanism="laplace", epsilon=1)
    with pytest.raises(PrivacyParameterError, match="lower"):
        release_sum(1, lower=5, upper=1, **common)
    with pytest.raises(PrivacyParameterError, match="power of two"):
        release_sum(1, lower=0, upper=1, granularity="0.1", mechanism="laplace", epsilon=1)
    with pytest.raises(PrivacyParameterError, match="empty"):
        release_argmax([], epsilon=1)
    with pytest.raises(PrivacyParameterError):
        release_counts([], mechanism="laplace", epsilon=1)
    with pytest.raises(PrivacyParameterError, match="mechanism"):
        release_counts(1, mechanism="exponential", epsilon=1)
    for conf in (0, 1, "1.01", -0.5):
        with pytest.raises(PrivacyParameterError, match="confidence"):
            release_mean(1, 1, lower=0, upper=1, confidence=conf, **common)
    with pytest.raises(ValueError):
        release_sum(1.5, lower=0, upper=1, **common)
    with pytest.raises(ValueError):
        release_counts([1.5, 2.0], mechanism="laplace", epsilon=1)
    with pytest.raises(ValueError):
        release_counts([-1, 2], mechanism="laplace", epsilon=1)


# ------------------------------------------------------------------ M1 pipeline scale


def _check_scale(noise: np.ndarray, scale: float, stat, laws) -> None:
    mean, var = laws.dlap_abs_moments(scale)
    assert abs(stat.z_score(np.abs(noise.astype(np.float64)), mean, var)) <= 6


R = 20_000


def test_pipeline_scales(stat, laws, seeded):
    """M1: mean |noise| matches Delta * share / eps for count, 10-cell histogram,
    clipped sum on its grid, both mean parts, a 3-statistic split and L = 3
    (false failure ~2e-9 per z-test, 7 z-tests)."""
    eps = Fraction(1, 2)
    count = release_counts(
        np.zeros(R, dtype=np.int64), mechanism="laplace", epsilon=eps, rng=seeded(1)
    )
    _check_scale(np.array(count.values), 2.0, stat, laws)

    hist = release_counts(
        np.zeros(10 * R, dtype=np.int64), mechanism="laplace", epsilon=eps, rng=seeded(2)
    )
    _check_scale(np.array(hist.values), 2.0, stat, laws)

    gamma = sum_granularity(-3, 12, epsilon=eps)
    spec = sum_noise(lower=-3, upper=12, granularity=gamma, mechanism="laplace", epsilon=eps)
    _check_scale(spec.sample(R, seeded(3)), float(12 / gamma / eps), stat, laws)

    gamma = sum_granularity(0, 10, epsilon=eps * Fraction(3, 10))
    sum_spec, count_spec = mean_noise(
        lower=0,
        upper=10,
        granularity=gamma,
        mechanism="laplace",
        epsilon=eps,
        sum_share=Fraction(3, 10),
    )
    _check_scale(
        sum_spec.sample(R, seeded(4)), float(10 / gamma / (eps * Fraction(3, 10))), stat, laws
    )
    _check_scale(count_spec.sample(R, seeded(5)), float(1 / (eps * Fraction(7, 10))), stat, laws)

    thirds = [Cost(eps / 3)] * 3  # a release of three statistics sharing eps equally
    spec = count_noise(mechanism="laplace", epsilon=thirds[0].epsilon)
    _check_scale(spec.sample(R, seeded(6)), 6.0, stat, laws)

    spec = count_noise(mechanism="laplace", epsilon=eps, contribution_bound=3)
    _check_scale(spec.sample(R, seeded(7)), 6.0, stat, laws)


def test_mean_split_sums_back_to_the_budget():
    sum_part, count_part = mean_budget_split(epsilon="0.9", delta="1e-6", sum_share="0.7")
    assert sum_part + count_part == Cost(Fraction(9, 10), Fraction(1, 10**6))
    assert sum_part.epsilon == Fraction(63, 100)
    assert math.isclose(float(count_part.delta), 3e-7)
