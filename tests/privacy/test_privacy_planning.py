"""Planning and sensitivity properties (hypothesis, derandomized): half-width falls as eps
grows, the inverse recovers eps, sensitivities and scales grow linearly with L."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpportal.privacy.accuracy import discrete_gaussian_halfwidth, laplace_halfwidth
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.noise import argmax_noise, count_noise, sum_noise
from dpportal.privacy.params import round_down_sig, round_up_sig
from dpportal.privacy.planning import (
    epsilon_for_halfwidth,
    laplace_epsilon_for_halfwidth,
    sigma_for_halfwidth,
    statistic_halfwidth,
)
from dpportal.privacy.sensitivity import (
    MAX_ROWS,
    count_sensitivity,
    grid_bounds,
    histogram_sensitivity,
    sum_granularity,
    sum_sensitivity,
    sum_sensitivity_units,
    to_grid_units,
)

FAST = settings(derandomize=True, deadline=None, max_examples=100)

eps_3sf = st.integers(10, 999).flatmap(
    lambda m: st.integers(-3, 0).map(lambda e: Fraction(m, 100) * Fraction(10) ** e)
)
confidences = st.sampled_from(["0.9", "0.95", "0.99"])


@st.composite
def plans(draw):
    kind = draw(st.sampled_from(["count", "histogram", "sum", "mean", "argmax"]))
    mechanism = "laplace" if kind == "argmax" else draw(st.sampled_from(["laplace", "gaussian"]))
    return dict(
        kind=kind,
        mechanism=mechanism,
        delta="1e-6" if mechanism == "gaussian" else 0,
        confidence=draw(confidences),
        contribution_bound=draw(st.integers(1, 5)),
        cells=draw(st.integers(1, 200)),
        lower=-10,
        upper=draw(st.sampled_from([1, 50, 1000])),
        n_guess=draw(st.integers(50, 10**6)),
        simultaneous=draw(st.booleans()),
    )


@FAST
@given(plans(), eps_3sf, eps_3sf)
def test_halfwidth_decreases_as_epsilon_grows(plan, e1, e2):
    assume(e1 != e2)
    small, large = min(e1, e2), max(e1, e2)
    assert statistic_halfwidth(epsilon=large, **plan) <= statistic_halfwidth(epsilon=small, **plan)


@FAST
@given(plans(), eps_3sf)
def test_inverse_recovers_epsilon(plan, eps):
    """The inverse returns the smallest 3-significant-digit eps meeting the half-width:
    at most the eps that produced it, meeting it, and the next smaller value does not."""
    h = statistic_halfwidth(epsilon=eps, **plan)
    assume(h < float(plan["upper"] - plan["lower"]))  # a mean capped at the range says nothing
    found = epsilon_for_halfwidth(halfwidth=h, **plan)
    assert found <= eps
    assert statistic_halfwidth(epsilon=found, **plan) <= h
    assert round_up_sig(found, 3) == found
    below = round_down_sig(found * Fraction(999_999, 10**6), 3)  # the next smaller 3-digit value
    if below >= Fraction(1, 10**6):
        assert statistic_halfwidth(epsilon=below, **plan) > h


@FAST
@given(
    st.fractions(min_value=Fraction(1, 100), max_value=1000),
    confidences,
    st.integers(1, 10**4),
    st.integers(1, 10),
)
def test_continuous_laplace_inverse_is_exact(scale, conf, k, sens):
    h = laplace_halfwidth(scale, conf, k)
    eps = laplace_epsilon_for_halfwidth(h, conf, sens, k)
    assert eps == pytest.approx(sens / float(scale), rel=1e-12)


@FAST
@given(st.integers(1, 100), st.sampled_from([("-3", "7"), ("0", "1e6"), ("-0.5", "0.25")]), eps_3sf)
def test_sensitivities_and_scales_scale_with_L(bound, bounds, eps):
    lower, upper = bounds
    assert count_sensitivity(bound) == bound * count_sensitivity(1)
    assert histogram_sensitivity(bound) == (bound, bound)
    assert sum_sensitivity(lower, upper, bound) == bound * sum_sensitivity(lower, upper, 1)
    gamma = sum_granularity(lower, upper, epsilon=1)
    assert sum_sensitivity_units(lower, upper, gamma, bound) == bound * sum_sensitivity_units(
        lower, upper, gamma, 1
    )
    one = count_noise(mechanism="laplace", epsilon=eps)
    assert count_noise(mechanism="laplace", epsilon=eps, contribution_bound=bound).scale == (
        bound * one.scale
    )
    assert argmax_noise(epsilon=eps, contribution_bound=bound).scale == bound * one.scale
    base = sum_noise(lower=lower, upper=upper, granularity=gamma, mechanism="laplace", epsilon=eps)
    many = sum_noise(
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism="laplace",
        epsilon=eps,
        contribution_bound=bound,
    )
    assert many.scale == bound * base.scale


def test_sum_granularity_rule():
    """gamma = largest power of two <= min(M, L M / eps) / 2**20; public parameters only."""
    assert sum_granularity(0, 100, epsilon=1) == Fraction(1, 2**14)  # 100/2**20 = 9.5e-5
    assert sum_granularity(0, 100, epsilon=50) == Fraction(1, 2**19)  # L M / eps = 2
    assert sum_granularity(-1, "0.5", epsilon="0.01", contribution_bound=3) == Fraction(1, 2**20)
    for lower, upper, eps in (("0", "1e9", "0.001"), ("-7.3", "2", "3"), ("0.001", "0.002", 1)):
        gamma = sum_granularity(lower, upper, epsilon=eps)
        m = max(abs(Fraction(lower)), abs(Fraction(upper)))
        target = min(m, m / Fraction(eps)) / 2**20
        assert gamma <= target < 2 * gamma
        assert math.log2(gamma) == int(math.log2(gamma))


def test_to_grid_units_clips_and_rounds():
    gamma = Fraction(1, 4)
    values = np.array([-100.0, -2.13, 0.1, 0.125, 0.375, 2.0, 2.9, np.inf, -np.inf])
    units = to_grid_units(values, lower="-2.1", upper="2.9", granularity=gamma)
    assert units.dtype == np.int64
    assert grid_bounds("-2.1", "2.9", gamma) == (-8, 11)
    assert units.tolist() == [-8, -8, 0, 0, 2, 8, 11, 11, -8]  # 0.125 -> 0.5 unit: half to even
    assert all(Fraction("-2.1") <= u * gamma <= Fraction("2.9") for u in units.tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 1e308 / 2**-10 is past float range: no warning
        huge = to_grid_units(np.array([1e308, -1e308]), lower=0, upper=10, granularity=2**-10)
    assert huge.tolist() == [10 * 2**10, 0]
    with pytest.raises(ValueError, match="NaN"):
        to_grid_units(np.array([1.0, np.nan]), lower=0, upper=1, granularity=gamma)
    with pytest.raises(PrivacyParameterError):
        to_grid_units(values, lower=0, upper=1, granularity="0.3")
    with pytest.raises(PrivacyParameterError):
        grid_bounds("0.1", "0.2", 1)


def test_planning_errors():
    base = dict(mechanism="laplace", epsilon=1, confidence="0.9")
    with pytest.raises(PrivacyParameterError):
        statistic_halfwidth(kind="sum", **base)  # no bounds
    with pytest.raises(PrivacyParameterError):
        statistic_halfwidth(kind="mean", lower=0, upper=1, **base)  # no n_guess
    with pytest.raises(PrivacyParameterError):
        statistic_halfwidth(kind="median", **base)
    with pytest.raises(PrivacyParameterError):
        statistic_halfwidth(kind="histogram", cells=0, **base)
    with pytest.raises(PrivacyParameterError):
        epsilon_for_halfwidth(kind="count", mechanism="laplace", halfwidth=-1, confidence="0.9")
    with pytest.raises(PrivacyParameterError, match="not reachable"):
        epsilon_for_halfwidth(
            kind="mean",
            mechanism="laplace",
            halfwidth="1e-9",
            confidence="0.9",
            lower=0,
            upper=1,
            n_guess=10,
        )


def test_planning_matches_a_release_explanation():
    """The preview equals the half-width recomputed from a release's stored explanation."""
    from dpportal.privacy.accuracy import result_halfwidth
    from dpportal.privacy.mechanisms import release_counts, release_sum

    preview = statistic_halfwidth(
        kind="histogram",
        mechanism="gaussian",
        epsilon="0.7",
        delta="1e-7",
        confidence="0.95",
        cells=12,
        contribution_bound=2,
        simultaneous=True,
    )
    result = release_counts(
        np.arange(12), mechanism="gaussian", epsilon="0.7", delta="1e-7", contribution_bound=2
    )
    assert preview == result_halfwidth(result.to_dict(), confidence="0.95", simultaneous=True)

    gamma = sum_granularity(-1, 4, epsilon="0.2", rows_bound=MAX_ROWS)  # a released sum's grid
    preview = statistic_halfwidth(
        kind="sum", mechanism="laplace", epsilon="0.2", confidence="0.9", lower=-1, upper=4
    )
    result = release_sum(
        10, lower=-1, upper=4, granularity=gamma, mechanism="laplace", epsilon="0.2"
    )
    assert preview == result_halfwidth(result.to_dict(), confidence="0.9")


@FAST
@given(st.integers(1, 10**9), confidences, st.integers(1, 1000))
def test_sigma_for_halfwidth_is_the_largest_4_digit_sigma(h, conf, k):
    sigma = sigma_for_halfwidth(h, conf, k)
    assert round_down_sig(sigma, 4) == sigma
    assert discrete_gaussian_halfwidth(sigma, conf, k) <= h
    above = round_up_sig(sigma * Fraction(1_000_001, 10**6), 4)  # the next 4-digit value
    assert discrete_gaussian_halfwidth(above, conf, k) > h
