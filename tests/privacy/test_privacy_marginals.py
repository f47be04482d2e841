"""Cross-tabulations: the residual strategy's privacy, optimality, consistency, variances.

False-failure rates:
- variance and coverage checks: fixed seeds (reproducible); a check whose true value is
  nominal fails with probability ~1.35e-3 (3 standard errors, normal approximation);
- the audit: LB <= eps fails with probability <= 1e-6 (conftest.audit_lower_bound).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.marginal_release import (
    _coordinate_weights,
    _residual_query,
    helmert,
    release_marginals,
)
from dpportal.privacy.marginal_workload import Workload, all_marginals
from dpportal.privacy.marginals import (
    _privacy_weight,
    baseline_total_error,
    epsilon_for_halfwidth,
    plan_marginals,
)
from dpportal.privacy.samplers import discrete_gaussian, discrete_gaussian_variance
from dpportal.privacy.tails import normal_upper_quantile

DELTA = Fraction(1, 10**6)


def _truth(full: np.ndarray, marginal: tuple[int, ...]) -> np.ndarray:
    drop = tuple(k for k in range(full.ndim) if k not in marginal)
    return full.sum(axis=drop) if drop else full


def _release(workload, full, plan, rng):
    counts = [_truth(full, m) for m in workload.maximal]
    return release_marginals(plan, counts, rng)


def test_workload_closure_maximal_and_limits():
    w = Workload.of((2, 3, 4), [(1, 0), (0,), (2,), ()])
    assert w.marginals == ((), (0,), (2,), (0, 1))
    assert w.closure == ((), (0,), (1,), (2,), (0, 1))
    assert w.maximal == ((2,), (0, 1))
    assert w.published_cells == 1 + 2 + 4 + 6
    assert w.measured_values == 1 + 1 + 2 + 3 + 2
    bad = [((2,) * 11, [(0,)]), ((1, 2), [(0,)]), ((2, 2), [(0, 0)]),
           ((2,) * 4, [(0, 1, 2, 3)]), ((2, 2), [(2,)]), ((2, 2), [])]  # fmt: skip
    for sizes, marginals in bad:
        with pytest.raises(PrivacyParameterError):
            Workload.of(sizes, marginals)


@pytest.mark.parametrize("n", [2, 3, 7, 10])
def test_helmert_contrasts_are_orthogonal_integer_and_sum_to_zero(n):
    h = helmert(n)
    gram = h @ h.T
    assert np.array_equal(gram, np.diag([j * (j + 1) for j in range(1, n)]))
    assert not (h @ np.ones(n, dtype=np.int64)).any()


def test_variance_sampler_is_the_sigma_sampler(seeded):
    """Same law, same algorithm (t = floor(sigma) + 1): identical draws for a rational sigma."""
    a = discrete_gaussian(Fraction(7, 3), 2000, seeded(5))
    b = discrete_gaussian_variance(Fraction(49, 9), 2000, seeded(5))
    assert np.array_equal(a, b)


def test_variance_sampler_matches_its_law(seeded, stat):
    variance = Fraction(13, 2)  # sigma = sqrt(6.5), irrational
    draws = discrete_gaussian_variance(variance, 200_000, seeded(6))
    y = np.arange(-40, 41)
    w = np.exp(-(y.astype(float) ** 2) / (2 * float(variance)))
    pmf = w / w.sum()
    assert abs(draws.mean()) < 6 * math.sqrt(float(variance) / draws.size)
    observed = np.array([(draws == v).sum() for v in y])
    chi2 = float(
        (((observed - pmf * draws.size) ** 2) / np.maximum(pmf * draws.size, 1e-9))[
            pmf * draws.size > 5
        ].sum()
    )
    assert chi2 < 120  # ~30 degrees of freedom: p < 1e-6 beyond ~90


def test_one_rows_shift_costs_exactly_rho(seeded):
    """Brute force over every cell: sum over coordinates of shift**2 / variance = 2 rho / L**2."""
    w = Workload.of((2, 3, 4), all_marginals(3, 2, total=True))
    plan = plan_marginals(w, epsilon=1, delta=DELTA, contribution_bound=2)
    for cell in itertools.product(range(2), range(3), range(4)):
        full = np.zeros((2, 3, 4), dtype=np.int64)
        full[cell] = 1
        cost = Fraction(0)
        for a, s in plan.variances.items():
            shift = _residual_query(_truth(full, a), a, w.sizes)
            weights = _coordinate_weights(a, w.sizes)
            cost += sum(
                Fraction(int(d) ** 2) / (s * int(v))
                for d, v in zip(np.ravel(shift), np.ravel(weights), strict=True)
            )
        assert cost == 2 * plan.rho / 4
    assert plan.rho <= plan.rho_charged
    assert plan.rho_charged * Fraction(999, 1000) < plan.rho


def test_the_strategy_is_optimal_and_beats_independent_tables():
    """The closed form: total error T**2/(2 rho); no reallocation at the same rho does better."""
    sizes = (2, 3, 4, 5, 6, 7, 8, 10)
    w = Workload.of(sizes, all_marginals(8, 2))
    plan = plan_marginals(w, epsilon=1, delta=DELTA)
    assert plan.total_error / baseline_total_error(w, plan.rho) <= Fraction(1, 2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        factors = {a: Fraction(float(rng.uniform(0.5, 2.0))) for a in plan.variances}
        moved = {a: s * factors[a] for a, s in plan.variances.items()}
        rho = sum(_privacy_weight(w, a) / (2 * s) for a, s in moved.items())
        moved = {a: s * rho / plan.rho for a, s in moved.items()}  # back to the same rho
        other = plan.__class__(w, plan.epsilon, plan.delta, 1, plan.sigma, moved)
        assert other.total_error > plan.total_error


WORKLOADS = [
    ((3, 4, 5), all_marginals(3, 3, total=True)),
    ((2, 3, 4, 5), all_marginals(4, 2)),
    ((6, 2, 3), [(0, 1), (1, 2), (0,)]),
]


@pytest.mark.parametrize(("sizes", "marginals"), WORKLOADS)
def test_published_tables_are_exactly_consistent(sizes, marginals, seeded):
    w = Workload.of(sizes, marginals)
    plan = plan_marginals(w, epsilon="0.5", delta=DELTA)
    full = np.random.default_rng(1).integers(0, 40, size=sizes)
    release = _release(w, full, plan, seeded(11))
    for low, high in itertools.permutations(w.marginals, 2):
        if not set(low) < set(high):
            continue
        d_high, n_high = release.exact(high)
        d_low, n_low = release.exact(low)
        drop = tuple(k for k, i in enumerate(high) if i not in low)
        summed = np.asarray(n_high.sum(axis=drop), dtype=object).ravel()
        assert [Fraction(int(x), d_high) for x in summed] == [
            Fraction(int(x), d_low) for x in np.ravel(n_low)
        ]
    for m in w.marginals:
        d, n = release.exact(m)
        exact = np.array([float(Fraction(int(x), d)) for x in np.ravel(n)])
        assert np.allclose(release.tables[m].values().ravel(), exact, rtol=1e-12, atol=1e-9)


def test_release_round_trips_and_keeps_no_true_value(seeded):
    w = Workload.of((3, 4), all_marginals(2, 2, total=True))
    plan = plan_marginals(w, epsilon=1, delta=DELTA)
    full = np.full((3, 4), 1234567, dtype=np.int64)
    release = _release(w, full, plan, seeded(12))
    data = release.to_dict()
    assert "1234567" not in repr(data) and str(12 * 1234567) not in repr(data)
    again = type(release).from_dict(data)
    for m in w.marginals:
        assert np.array_equal(again.tables[m].values(), release.tables[m].values())
        assert again.exact(m)[0] == release.exact(m)[0]


@pytest.mark.parametrize(("sizes", "marginals"), WORKLOADS[:2])
def test_cell_variances_and_interval_coverage(sizes, marginals, seeded):
    """600 releases: per-cell mean squared error within 12 % of the stated variance, and the
    90/95/99 % intervals cover at nominal within 3 standard errors (pooled over cells, the
    count of runs taken as the sample size: conservative, since cells are correlated)."""
    w = Workload.of(sizes, marginals)
    plan = plan_marginals(w, epsilon="0.3", delta=DELTA)
    full = np.random.default_rng(2).integers(0, 30, size=sizes)
    runs = 600
    rng = seeded(13)
    squared = {m: 0.0 for m in w.marginals}
    covered = {c: {m: 0 for m in w.marginals} for c in (0.9, 0.95, 0.99)}
    for _ in range(runs):
        release = _release(w, full, plan, rng)
        for m in w.marginals:
            err = release.tables[m].values() - _truth(full, m)
            squared[m] += float(np.mean(err**2))
            for c in covered:
                h = plan.halfwidth(m, Fraction(str(c)))
                covered[c][m] += float(np.mean(np.abs(err) <= h))
    for m in w.marginals:
        v = float(plan.cell_variance(m))
        assert abs(squared[m] / runs / v - 1) < 0.12, m
    for c, by in covered.items():
        se = math.sqrt(c * (1 - c) / runs)
        for m, hits in by.items():
            assert abs(hits / runs - c) <= 3 * se, (c, m, hits / runs)


def test_halfwidth_and_epsilon_for_a_target():
    w = Workload.of((4, 5, 6), all_marginals(3, 2))
    plan = plan_marginals(w, epsilon=1, delta=DELTA)
    m = (0, 1)
    assert plan.halfwidth(m, "0.95") == pytest.approx(
        normal_upper_quantile(0.025) * math.sqrt(plan.cell_variance(m))
    )
    eps = epsilon_for_halfwidth(w, target=20, delta=DELTA, confidence="0.95")
    widest = lambda e: max(  # noqa: E731
        plan_marginals(w, epsilon=e, delta=DELTA).halfwidth(x, "0.95") for x in w.marginals
    )
    assert widest(eps) <= 20 < widest(eps * Fraction(99, 100))


def test_refuses_a_pure_budget():
    w = Workload.of((2, 2), [(0, 1)])
    with pytest.raises(PrivacyParameterError):
        plan_marginals(w, epsilon=1, delta=0)


# ------------------------------------------------------------------ privacy audit

R = 100_000


def _audit_lb(stat, seeded, plan, w, shrink=Fraction(1)):
    """Releases on D and on D' = D plus one row in cell 0, projected on the likelihood-ratio
    direction of the Gaussian law; noise drawn per coordinate with the release's variances
    (shrunk by `shrink` for the power check)."""
    full = np.full(w.sizes, 5, dtype=np.int64)
    extra = np.zeros(w.sizes, dtype=np.int64)
    extra[(0,) * len(w.sizes)] = 1
    stats = []
    for data, seed in ((full, 91), (full + extra, 92)):
        rng = seeded(seed)
        total = np.zeros(R)
        for a, s in plan.variances.items():
            base = _residual_query(_truth(full, a), a, w.sizes)
            query = _residual_query(_truth(data, a), a, w.sizes)
            shift = _residual_query(_truth(extra, a), a, w.sizes)
            weights = _coordinate_weights(a, w.sizes)
            for q, b, d, v in zip(
                np.ravel(query), np.ravel(base), np.ravel(shift), np.ravel(weights), strict=True
            ):
                if d == 0:
                    continue
                variance = s * int(v) / shrink
                y = int(q) + discrete_gaussian_variance(variance, R, rng)
                total += (y - int(b)) * (float(d) / float(variance))
        stats.append(total)
    centre = float(np.median(stats[1]) / 2)
    spread = float(np.std(stats[0]))
    thresholds = sorted({centre + spread * u for u in np.linspace(-4, 4, 33)})
    return stat.audit_lower_bound(stats[0], stats[1], thresholds, delta=float(plan.delta))


def test_workload_release_audit_passes(stat, seeded):
    w = Workload.of((2, 3), all_marginals(2, 2, total=True))
    plan = plan_marginals(w, epsilon=1, delta=Fraction(1, 10**5))
    assert _audit_lb(stat, seeded, plan, w) <= 1


def test_audit_catches_noise_far_below_the_calibration(stat, seeded):
    """Power: variances 400 times too small (sigma 20 times) give an observed bound above eps."""
    w = Workload.of((2, 3), all_marginals(2, 2, total=True))
    plan = plan_marginals(w, epsilon=1, delta=Fraction(1, 10**5))
    assert _audit_lb(stat, seeded, plan, w, shrink=Fraction(400)) > 1
