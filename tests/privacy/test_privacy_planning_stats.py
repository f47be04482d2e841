"""Previews of the new statistics come from the same specs as the releases (deterministic)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.grouped_release import release_grouped_counts, release_grouped_sums
from dpportal.privacy.params import decimal_exponent
from dpportal.privacy.planning import statistic_halfwidth
from dpportal.privacy.planning_stats import (
    epsilon_for_target,
    grouped_halfwidth,
    spread_sd_halfwidth,
)
from dpportal.privacy.sensitivity import MAX_ROWS, rounding_gap, sum_granularity


@pytest.mark.parametrize(("mechanism", "delta"), [("laplace", 0), ("gaussian", "1e-6")])
@pytest.mark.parametrize("simultaneous", [False, True])
def test_grouped_previews_match_a_release(mechanism, delta, simultaneous, seeded):
    """The preview of a grouped count or sum equals the half-width read from a release
    (a sum's on the released-sum grid, its rounding bound included)."""
    kw = dict(mechanism=mechanism, epsilon="0.6", delta=delta, contribution_bound=3)
    counts = release_grouped_counts([5, 6, 7, 8], group_bound=2, rng=seeded(1), **kw)
    assert grouped_halfwidth(
        kind="grouped_count",
        confidence="0.95",
        groups=4,
        group_bound=2,
        simultaneous=simultaneous,
        **kw,
    ) == result_halfwidth(counts.to_dict(), confidence="0.95", simultaneous=simultaneous)
    gamma = sum_granularity(-10, 40, epsilon="0.6", contribution_bound=3, rows_bound=MAX_ROWS)
    sums = release_grouped_sums(
        [5, 6, 7], lower=-10, upper=40, granularity=gamma, rng=seeded(2), **kw
    )
    assert grouped_halfwidth(
        kind="grouped_sum",
        confidence="0.9",
        groups=3,
        lower=-10,
        upper=40,
        simultaneous=simultaneous,
        **kw,
    ) == result_halfwidth(sums.to_dict(), confidence="0.9", simultaneous=simultaneous)
    assert sums.spec.rounding_bound == MAX_ROWS * rounding_gap(-10, 40, gamma)


@pytest.mark.parametrize(("mechanism", "delta"), [("laplace", 0), ("gaussian", "1e-6")])
@pytest.mark.parametrize("simultaneous", [False, True])
def test_grouped_mean_preview_is_the_mean_pivot_preview(mechanism, delta, simultaneous):
    """A grouped mean's preview is the single mean's (planning) at L = 1, at beta/G per cell
    for all G cells at once."""
    common = dict(mechanism=mechanism, delta=delta, lower=0, upper=100, n_guess=500)
    grouped = grouped_halfwidth(
        kind="grouped_mean", epsilon=1, confidence="0.95", groups=4, simultaneous=simultaneous,
        **common,
    )  # fmt: skip
    single = statistic_halfwidth(
        kind="mean", epsilon=1, confidence="0.9875" if simultaneous else "0.95", **common
    )
    assert grouped == single


def test_mean_and_spread_previews_shrink_with_rows_and_epsilon():
    mean = dict(
        kind="grouped_mean",
        mechanism="laplace",
        confidence="0.95",
        groups=5,
        lower=0,
        upper=100,
        contribution_bound=2,
    )
    widths = [grouped_halfwidth(epsilon=1, n_guess=n, **mean) for n in (10, 100, 1000, 10**5)]
    assert widths == sorted(widths, reverse=True) and widths[0] == 100 and widths[-1] < 1
    spread = dict(mechanism="gaussian", delta="1e-6", confidence="0.95", lower=0, upper=100)
    sds = [spread_sd_halfwidth(epsilon=e, n_guess=5000, **spread) for e in ("0.1", "1", "10")]
    assert sds == sorted(sds, reverse=True) and 0 < sds[-1] < 1
    with pytest.raises(PrivacyParameterError):
        grouped_halfwidth(epsilon=1, **mean)  # no n_guess
    with pytest.raises(PrivacyParameterError):
        spread_sd_halfwidth(epsilon=1, n_guess=10, sd_guess=80, **spread)


def test_epsilon_for_target_is_the_smallest_3_digit_epsilon():
    def preview(eps):
        return grouped_halfwidth(
            kind="grouped_mean",
            mechanism="laplace",
            epsilon=eps,
            confidence="0.95",
            groups=5,
            lower=0,
            upper=100,
            contribution_bound=2,
            n_guess=2000,
        )

    eps = epsilon_for_target(preview, 2)
    assert preview(eps) <= 2
    assert preview(eps - Fraction(10) ** (decimal_exponent(eps) - 2)) > 2
    with pytest.raises(PrivacyParameterError):
        epsilon_for_target(preview, "0.000001")
