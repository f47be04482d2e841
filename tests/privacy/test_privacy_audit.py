"""M2/M3: empirical privacy audits on worst-case neighbours, and proof that they have power.

For neighbours D, D' (D' = D plus one person with L rows, the worst case for
each statistic) we draw 200,000 outputs per side through the same NoiseSpec
builders the mechanisms use (tests below check release_* uses exactly these
specs), then compute a Clopper-Pearson lower confidence bound LB on
ln(Pr[M(D) in S] / Pr[M(D') in S]) over threshold events S (both orders,
Bonferroni over all events). Soundness: if M is eps-DP, LB > eps has probability
<= 1e-6 (conftest.audit_lower_bound), so each `LB <= eps` assertion fails
spuriously with probability <= 1e-6.

Power: the same audit must FAIL (LB > eps) on deliberately broken variants:
noise scale 10 % too small, epsilon not split between a release's statistics,
sensitivity ignoring L. Over 8 independent runs of this file's cases (eps = 1)
the broken variants gave LB (mean +- sd): count 10 % small 1.085 +- 0.003,
histogram 10 % small 1.079 +- 0.003, sum 10 % small 1.071 +- 0.004, unsplit
mean 1.53 +- 0.007, ignoring L 1.94-2.93 +- 0.013; i.e. >= 16 sd above eps, so
a missed detection has probability far below 1e-6. The correct variants gave
0.49-0.97 (the count's 0.97 shows the audit is tight: its true loss is exactly eps).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy import noise as noise_module
from dpportal.privacy.accounting import Cost
from dpportal.privacy.calibration import laplace_scale
from dpportal.privacy.mechanisms import (
    release_argmax,
    release_counts,
    release_mean,
    release_sum,
    report_noisy_max_indices,
)
from dpportal.privacy.noise import argmax_noise, count_noise, mean_noise, sum_noise
from dpportal.privacy.sensitivity import sum_granularity, sum_sensitivity_units

R = 200_000
EPS = Fraction(1)


def _grid(centre: int, unit: float, lo: float, hi: float, shift: int = 0) -> list[float]:
    """Integer thresholds centre + unit * u, u in [lo, hi] (24 points), plus
    centre + shift * j / 2 for j = 0..6 (where the likelihood ratio first peaks)."""
    points = list(centre + unit * np.linspace(lo, hi, 24))
    points += [centre + shift * j / 2 for j in range(7)]
    return sorted({float(np.ceil(p)) for p in points})


@pytest.fixture
def broken(monkeypatch):
    """Switch on one deliberate bug in dpportal.privacy.noise (undone after the test)."""

    def apply(kind: str) -> None:
        if kind == "scale_10pct_small":
            monkeypatch.setattr(
                noise_module, "laplace_scale", lambda l1, e: laplace_scale(l1, e) * Fraction(9, 10)
            )
        elif kind == "ignore_L":
            monkeypatch.setattr(noise_module, "count_sensitivity", lambda bound: 1)
            monkeypatch.setattr(noise_module, "histogram_sensitivity", lambda bound: (1, 1))
            monkeypatch.setattr(noise_module, "argmax_sensitivity", lambda bound: 1)
            monkeypatch.setattr(
                noise_module,
                "sum_sensitivity_units",
                lambda lo, hi, g, bound: sum_sensitivity_units(lo, hi, g, 1),
            )
        elif kind == "no_split":
            monkeypatch.setattr(
                noise_module,
                "mean_budget_split",
                lambda *, epsilon, delta, sum_share: (Cost(epsilon, delta), Cost(epsilon, delta)),
            )
        else:
            raise AssertionError(kind)

    return apply


# ------------------------------------------------------------------ count


def _count_lb(stat, bound: int, seeded) -> float:
    spec = count_noise(mechanism="laplace", epsilon=EPS, contribution_bound=bound)
    x = 50
    d = x + spec.sample(R, seeded(1))
    d_prime = x + bound + spec.sample(R, seeded(2))
    scale = float(spec.scale)
    return stat.audit_lower_bound(d, d_prime, _grid(x, scale, -3, 4, bound))


@pytest.mark.parametrize("bound", [1, 3])
def test_count_audit_passes(bound, stat, seeded):
    """LB <= eps for the count (false failure <= 1e-6)."""
    assert _count_lb(stat, bound, seeded) <= EPS


@pytest.mark.parametrize(("bug", "bound"), [("scale_10pct_small", 1), ("ignore_L", 3)])
def test_count_audit_catches_bugs(bug, bound, broken, stat, seeded):
    """The audit fails a count with 10 % too little noise, or noised for L = 1 when a
    person has 3 rows (LB ~ 1.085 and ~ 2.93)."""
    broken(bug)
    assert _count_lb(stat, bound, seeded) > EPS


# ------------------------------------------------------------------ histogram


def _histogram_lb(stat, seeded, spread: bool) -> float:
    bound = 2
    spec = count_noise(
        mechanism="laplace", epsilon=EPS, contribution_bound=bound, cells=4, statistic="histogram"
    )
    truth = np.array([10, 20, 30, 40])
    person = np.array([1, 1, 0, 0]) if spread else np.array([2, 0, 0, 0])
    d = truth + spec.sample((R, 4), seeded(3))
    d_prime = truth + person + spec.sample((R, 4), seeded(4))
    scale = float(spec.scale)
    if spread:  # the person's rows are in cells 0 and 1: audit their total
        return stat.audit_lower_bound(
            d[:, 0] + d[:, 1], d_prime[:, 0] + d_prime[:, 1], _grid(30, scale, -4, 6)
        )
    return stat.audit_lower_bound(d[:, 0], d_prime[:, 0], _grid(10, scale, -3, 4, bound))


@pytest.mark.parametrize("spread", [False, True])
def test_histogram_audit_passes(spread, stat, seeded):
    """LB <= eps for a 4-cell histogram, L = 2, the person's 2 rows in one cell or two
    (false failure <= 1e-6)."""
    assert _histogram_lb(stat, seeded, spread) <= EPS


@pytest.mark.parametrize("bug", ["scale_10pct_small", "ignore_L"])
def test_histogram_audit_catches_bugs(bug, broken, stat, seeded):
    broken(bug)
    assert _histogram_lb(stat, seeded, spread=False) > EPS


# ------------------------------------------------------------------ clipped sum


def _sum_lb(stat, seeded) -> float:
    lower, upper, bound = Fraction(-5), Fraction(10), 2
    gamma = sum_granularity(lower, upper, epsilon=EPS, contribution_bound=bound)
    spec = sum_noise(
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism="laplace",
        epsilon=EPS,
        contribution_bound=bound,
    )
    x = 123_456
    person = bound * int(upper / gamma)  # L rows at the upper bound
    d = x + spec.sample(R, seeded(5))
    d_prime = x + person + spec.sample(R, seeded(6))
    return stat.audit_lower_bound(d, d_prime, _grid(x, float(spec.scale), -3, 4, person))


def test_sum_audit_passes(stat, seeded):
    """LB <= eps for a sum clipped to [-5, 10] on its grid, L = 2 (false failure <= 1e-6)."""
    assert _sum_lb(stat, seeded) <= EPS


@pytest.mark.parametrize("bug", ["scale_10pct_small", "ignore_L"])
def test_sum_audit_catches_bugs(bug, broken, stat, seeded):
    broken(bug)
    assert _sum_lb(stat, seeded) > EPS


# ------------------------------------------------------------------ argmax (M3)


def _argmax_lb(stat, seeded, bound: int) -> float:
    truth = np.tile(np.array([20, 20, 20]), (R, 1))
    person = np.array([bound, 0, 0])
    d = report_noisy_max_indices(truth, epsilon=EPS, contribution_bound=bound, rng=seeded(7))
    d_prime = report_noisy_max_indices(
        truth + person, epsilon=EPS, contribution_bound=bound, rng=seeded(8)
    )
    return stat.audit_index_lower_bound(d, d_prime, 3)


@pytest.mark.parametrize("bound", [1, 3])
def test_argmax_audit_passes(bound, stat, seeded):
    """LB <= eps over the events {index = i} (false failure <= 1e-6)."""
    assert _argmax_lb(stat, seeded, bound) <= EPS


def test_argmax_audit_catches_ignored_contribution_bound(broken, stat, seeded):
    broken("ignore_L")
    assert _argmax_lb(stat, seeded, 3) > EPS


# ------------------------------------------------------------------ a release of two statistics


def _mean_lb(stat, seeded) -> float:
    """Joint audit of the mean's two statistics (sum and count) on the normalised total
    z = sum / Delta_sum + count / Delta_count; neighbours differ by one row at `upper`."""
    lower, upper = Fraction(0), Fraction(10)
    gamma = sum_granularity(lower, upper, epsilon=EPS / 2)
    sum_spec, count_spec = mean_noise(
        lower=lower, upper=upper, granularity=gamma, mechanism="laplace", epsilon=EPS
    )
    n = R
    hi_units = int(upper / gamma)
    sums = 5000 * hi_units + sum_spec.sample(n, seeded(9))
    counts = 9000 + count_spec.sample(n, seeded(10))
    sums_p = 5000 * hi_units + hi_units + sum_spec.sample(n, seeded(11))
    counts_p = 9001 + count_spec.sample(n, seeded(12))
    z = (sums - 5000 * hi_units) / hi_units + (counts - 9000)
    z_p = (sums_p - 5000 * hi_units) / hi_units + (counts_p - 9000)
    return stat.audit_lower_bound(z, z_p, list(np.linspace(-4, 8, 25)))


def test_mean_release_audit_passes(stat, seeded):
    """LB <= eps for the pair (noisy sum, noisy count) with eps split in half
    (false failure <= 1e-6)."""
    assert _mean_lb(stat, seeded) <= EPS


def test_mean_release_audit_catches_unsplit_epsilon(broken, stat, seeded):
    """Giving both statistics the full eps makes the pair 2 eps-DP: the audit fails."""
    broken("no_split")
    assert _mean_lb(stat, seeded) > EPS


# ------------------------------------------------------------------ Gaussian (eps, delta)


def test_gaussian_count_audit_passes(stat, seeded):
    """(eps, delta) audit: LB of ln((p - delta)/q) <= eps (false failure <= 1e-6)."""
    spec = count_noise(mechanism="gaussian", epsilon=EPS, delta="1e-5")
    d = 7 + spec.sample(R, seeded(13))
    d_prime = 8 + spec.sample(R, seeded(14))
    lb = stat.audit_lower_bound(d, d_prime, _grid(7, float(spec.sigma), -3, 4), delta=1e-5)
    assert lb <= EPS


# ------------------------------------------------------------------ audited specs are the real ones


def test_releases_use_exactly_the_audited_specs(seeded):
    """release_* build the same NoiseSpec as the audits, and add exactly its noise."""
    count = release_counts(
        50, mechanism="laplace", epsilon=EPS, contribution_bound=3, rng=seeded(20)
    )
    spec = count_noise(mechanism="laplace", epsilon=EPS, contribution_bound=3)
    assert count.spec == spec
    assert count.values == (50 + int(spec.sample(1, seeded(20))[0]),)

    gamma = sum_granularity(-5, 10, epsilon=EPS, contribution_bound=2)
    total = release_sum(
        99,
        lower=-5,
        upper=10,
        granularity=gamma,
        mechanism="laplace",
        epsilon=EPS,
        contribution_bound=2,
        rng=seeded(21),
    )
    spec = sum_noise(
        lower=-5,
        upper=10,
        granularity=gamma,
        mechanism="laplace",
        epsilon=EPS,
        contribution_bound=2,
    )
    assert total.spec == spec
    assert total.values == (99 + int(spec.sample(1, seeded(21))[0]),)

    mean = release_mean(
        500,
        9,
        lower=0,
        upper=10,
        granularity=gamma,
        mechanism="laplace",
        epsilon=EPS,
        confidence="0.9",
        rng=seeded(22),
    )
    parts = mean_noise(lower=0, upper=10, granularity=gamma, mechanism="laplace", epsilon=EPS)
    assert (mean.sum.spec, mean.count.spec) == parts

    arg = release_argmax([4, 9, 1], epsilon=EPS, rng=seeded(23))
    assert arg.spec == argmax_noise(epsilon=EPS, cells=3)
    assert arg.index == int(
        report_noisy_max_indices(np.array([4, 9, 1]), epsilon=EPS, rng=seeded(23))
    )
