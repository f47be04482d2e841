"""Finding what the owner cannot declare in advance: private bounds and keys found in the data.

Black-box audits (conftest.audit_*: each `LB <= eps` fails spuriously with probability
<= 1e-6) on worst-case neighbours, with a deliberately broken variant that the same audit
must catch; exact checks of the partition-selection thresholds and of the optimal policy's
DP inequalities; the one-person key released no more often than delta allows; and the
number of keys found on a Zipf workload against Gaussian thresholding as usually
implemented.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from bench.discovery import textbook_gaussian, zipf_counts
from dpportal.privacy import unbounded_bounds
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.partition_selection import (
    KeySelection,
    optimal_policy,
    plan_selection,
    select_keys,
)
from dpportal.privacy.unbounded_bounds import (
    MAX_STEPS,
    SearchGrid,
    bounds_records,
    estimate_bounds,
    outside_at_most,
)

GRID = SearchGrid.of(centre=0, unit=1, ratio=2, limit=1000)  # 0, 1, 3, 7, ..., 511 (9 steps)


def _cells(values, grid: SearchGrid) -> np.ndarray:
    edges = np.array(grid.edges())
    return np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)


# ------------------------------------------------------------------ the search grid


def test_the_grid_is_symmetric_bounded_and_round_trips():
    assert GRID.steps() == 9
    assert GRID.upward().tolist() == [0, 1, 3, 7, 15, 31, 63, 127, 255, 511]
    assert GRID.edges() == [
        -511,
        -255,
        -127,
        -63,
        -31,
        -15,
        -7,
        -3,
        -1,
        0,
        1,
        3,
        7,
        15,
        31,
        63,
        127,
        255,
        511,
    ]
    assert SearchGrid.from_dict(GRID.to_dict()) == GRID
    assert SearchGrid.of().steps() <= MAX_STEPS


@pytest.mark.parametrize(
    "kwargs",
    [
        {"unit": 0},
        {"ratio": 1},
        {"ratio": 3},
        {"limit": Fraction(1, 2)},
        {"centre": 10**15},
        {"ratio": Fraction(1001, 1000), "limit": 10**12},  # too many steps
        {"centre": "abc"},
    ],
)
def test_a_bad_grid_is_refused_with_a_message(kwargs):
    with pytest.raises(PrivacyParameterError) as caught:
        SearchGrid.of(**kwargs)
    assert caught.value.message


# ------------------------------------------------------------------ the estimate


def test_without_noise_each_end_stops_where_at_most_k_values_lie_beyond(seeded):
    """At epsilon 1e9 the noise is 0 with probability 1 - 1e-300: the search is exact."""
    values = np.array([-40, -5, -2, 2, 4, 5, 6, 20, 100, 300])
    est = estimate_bounds(
        _cells(values, GRID),
        grid=GRID,
        ends="both",
        outside=1,
        epsilon=10**9,
        contribution_bound=1,
        rng=seeded(1),
    )
    # upper: first u_i with #{x > u_i} <= 1: 127 (only 300 beyond)
    assert est.upper.value == 127 and not est.upper.reached_limit
    # lower: first l_i with #{x <= l_i} <= 1: -7 (only -40 at or below)
    assert est.lower.value == -7
    none = estimate_bounds(
        _cells(values, GRID),
        grid=GRID,
        ends="upper",
        outside=0,
        epsilon=10**9,
        contribution_bound=1,
        rng=seeded(2),
    )
    assert none.lower is None and none.upper.value == 511  # 300 <= 511: nothing beyond
    explanation = est.explanation()
    assert explanation["mechanism"] == "above_threshold"
    assert explanation["upper"]["value"] == "127.0"
    assert "values" not in explanation and "counts" not in str(explanation)


def test_a_search_past_everything_reports_its_limit(seeded):
    values = np.array([10**6] * 50)  # beyond the limit of 511
    est = estimate_bounds(
        _cells(values, GRID),
        grid=GRID,
        ends="upper",
        outside=0,
        epsilon=10**9,
        contribution_bound=1,
        rng=seeded(3),
    )
    assert est.upper.reached_limit and est.upper.value == 511


def test_the_records_and_the_accuracy_statement():
    assert [
        (r.kind, r.epsilon, r.count) for r in bounds_records(epsilon=Fraction(1, 10), ends="both")
    ] == [("generic_eps_delta", Fraction(1, 20), 2)]
    assert (
        unbounded_bounds.noise_scale(epsilon=Fraction(1, 10), ends="both", contribution_bound=3)
        == 120
    )
    loose = outside_at_most(
        epsilon=1, ends="upper", outside=5, steps=9, contribution_bound=1, confidence="0.95"
    )
    tight = outside_at_most(
        epsilon=10, ends="upper", outside=5, steps=9, contribution_bound=1, confidence="0.95"
    )
    assert 5 <= tight < loose
    with pytest.raises(PrivacyParameterError):
        estimate_bounds(
            [0] * 20, grid=GRID, ends="middle", outside=1, epsilon=1, contribution_bound=1
        )


@pytest.mark.parametrize("bound", [1, 2])
def test_the_accuracy_statement_holds(seeded, bound):
    """At most `outside_at_most` values beyond the upper bound in >= 95 % of runs.

    2,000 runs; the statement holds with probability >= 0.95 per run, so a miss rate
    above 0.95 + 6 sd of 2,000 Bernoulli draws fails with probability < 1e-8."""
    rng = np.random.default_rng(11)
    values = np.sort(rng.lognormal(3, 1, 3000))
    grid = SearchGrid.of(unit=Fraction(1, 10), ratio=Fraction(11, 10), limit=10**5)
    cells = _cells(values, grid)
    claim = outside_at_most(
        epsilon=1,
        ends="upper",
        outside=3,
        steps=grid.steps(),
        contribution_bound=bound,
        confidence="0.95",
    )
    misses = 0
    source = seeded(5)
    for _ in range(2000):
        est = estimate_bounds(
            cells,
            grid=grid,
            ends="upper",
            outside=3,
            epsilon=1,
            contribution_bound=bound,
            rng=source,
        )
        beyond = int((values > est.upper.value).sum())
        misses += beyond > claim
    assert misses / 2000 <= 0.05 + 6 * math.sqrt(0.05 * 0.95 / 2000)


# ------------------------------------------------------------------ audit of the search

R = 20_000
D = np.array([1, 1, 2, 2, 2, 10, 12, 20, 40, 100, 200])  # cell (3, 7] empty
D_PRIME = np.append(D, 5)  # one person with a value in that cell


def _upper_indices(values, seeded, seed: int) -> np.ndarray:
    cells = _cells(values, GRID)
    source = seeded(seed)
    out = np.empty(R, dtype=np.int64)
    for r in range(R):
        est = estimate_bounds(
            cells, grid=GRID, ends="upper", outside=1, epsilon=1, contribution_bound=1, rng=source
        )
        out[r] = est.upper.index
    return out


@pytest.fixture
def no_query_noise(monkeypatch):
    """The deliberate bug: AboveThreshold with threshold noise only (queries un-noised)."""
    real = unbounded_bounds.discrete_laplace

    def threshold_only(scale, size, rng=None):
        draws = real(scale, size, rng)
        return draws if size == 1 else np.zeros_like(draws)

    monkeypatch.setattr(unbounded_bounds, "discrete_laplace", threshold_only)


def test_the_bounds_search_audit_passes(stat, seeded):
    """LB <= eps (1, one end) over the events {index = i} (false failure <= 1e-6)."""
    a, b = _upper_indices(D, seeded, 1), _upper_indices(D_PRIME, seeded, 2)
    assert stat.audit_index_lower_bound(a, b, GRID.steps() + 1) <= 1


def test_the_bounds_audit_catches_unnoised_queries(stat, seeded, no_query_noise):
    """Without query noise the index past the empty cell is impossible on D and not on D':
    the audit's bound is far above eps (observed: > 3)."""
    a, b = _upper_indices(D, seeded, 1), _upper_indices(D_PRIME, seeded, 2)
    assert stat.audit_index_lower_bound(a, b, GRID.steps() + 1) > 1.5


# ------------------------------------------------------------------ partition selection


@pytest.mark.parametrize("epsilon", [Fraction(1, 2), 1, 2])
@pytest.mark.parametrize("delta", [Fraction(1, 10**6), Fraction(1, 1000)])
@pytest.mark.parametrize("keys", [1, 3])
def test_laplace_thresholds_are_the_smallest_that_keep_new_keys_within_delta(epsilon, delta, keys):
    sel = KeySelection(
        "laplace_threshold",
        Fraction(epsilon),
        delta,
        keys,
        True,
        threshold=None,
        scale=Fraction(keys) / Fraction(epsilon),
    )
    from dpportal.privacy.partition_thresholds import laplace_threshold as _laplace_threshold

    tau = _laplace_threshold(Fraction(epsilon), delta, keys)
    sel = KeySelection("laplace_threshold", sel.epsilon, delta, keys, True, tau, sel.scale)
    b = float(sel.scale)
    a = math.exp(-1 / b)

    def new_key(t: int) -> float:  # P[1 + Y >= t] = P[Y >= t - 1], independent formula
        m = t - 1
        p = math.exp(-m / b) / (1 + a) if m >= 1 else 1 - math.exp(-(1 - m) / b) / (1 + a)
        return 1 - (1 - p) ** keys

    assert new_key(tau) <= float(delta) < new_key(tau - 1)
    assert sel.release_probability(1) == pytest.approx(
        1 - (1 - new_key(tau)) ** (1 / keys), rel=1e-9
    )


@pytest.mark.parametrize("epsilon", [Fraction(1, 10), 1])
@pytest.mark.parametrize("delta", [Fraction(1, 10**6), Fraction(1, 1000)])
def test_the_optimal_policy_keeps_both_dp_inequalities_exactly(epsilon, delta):
    """pi(n) <= e^eps pi(n-1) + delta and 1 - pi(n-1) <= e^eps (1 - pi(n)) + delta, checked
    with a rational LOWER bound on e^eps (a margin other than the code's), and pi is
    within 1e-9 of the float recursion (optimality)."""
    policy = [Fraction(p, 1 << 64) for p in optimal_policy(epsilon, delta, 10**5)]
    e_low = Fraction(math.exp(float(epsilon))) * (1 - Fraction(1, 1 << 45))
    assert policy[0] == 0 and policy[1] <= delta
    for n in range(1, len(policy)):
        assert policy[n] <= e_low * policy[n - 1] + delta
        assert 1 - policy[n - 1] <= e_low * (1 - policy[n]) + delta
        assert policy[n] >= policy[n - 1]
    reference = [0.0]
    for _ in range(len(policy) - 1):
        q = reference[-1]
        e = math.exp(float(epsilon))
        reference.append(min(e * q + float(delta), 1 + (q + float(delta) - 1) / e, 1.0))
    assert max(abs(float(p) - r) for p, r in zip(policy, reference, strict=True)) < 1e-9


def test_policy_draws_follow_the_policy(stat, seeded):
    """Each count c in 1..25 over 20,000 keys: the publication frequency is within the
    Wilson interval at 6 sd of pi(c) (each check fails spuriously w.p. < 2e-9)."""
    sel = plan_selection(epsilon=1, delta=Fraction(1, 1000), keys_per_person=1, with_counts=False)
    assert sel.mechanism == "optimal_policy"
    for c in range(1, 26, 4):
        got = select_keys({f"k{i}": c for i in range(20_000)}, sel, seeded(c))
        low, high = stat.wilson_interval(len(got), 20_000)
        assert low - 1e-12 <= sel.release_probability(c) <= high + 1e-12
        assert all(v is None for v in got.values())


@pytest.mark.parametrize("with_counts", [True, False])
@pytest.mark.parametrize("keys", [1, 5])
def test_a_key_held_by_one_person_is_published_no_more_often_than_delta_allows(
    seeded, with_counts, keys
):
    """10,000 keys each held by one person (independent draws: 10,000 runs of a one-key
    dataset) at delta 1e-6. Each is published with probability <= 1e-6 (per key at most
    1 - (1 - 1e-6)^(1/keys)): P[more than 3 of 10,000] < C(10^4, 4) 1e-24 < 5e-10.
    At delta 1e-2 (100,000 keys) the frequency stays within 6 sd of the allowance."""
    sel = plan_selection(
        epsilon=1, delta=Fraction(1, 10**6), keys_per_person=keys, with_counts=with_counts
    )
    assert sel.release_probability(1) <= 1 - (1 - 1e-6) ** (1 / keys) + 1e-15
    got = select_keys({f"solo{i}": 1 for i in range(10_000)}, sel, seeded(keys))
    assert len(got) <= 3
    loose = plan_selection(
        epsilon=1, delta=Fraction(1, 100), keys_per_person=keys, with_counts=with_counts
    )
    allowance = 1 - (1 - 0.01) ** (1 / keys)
    n = 100_000
    got = select_keys({f"solo{i}": 1 for i in range(n)}, loose, seeded(10 + keys))
    assert len(got) / n <= allowance + 6 * math.sqrt(allowance / n)


def _selection_outputs(sel: KeySelection, counts: dict[str, int], seeded, seed: int, runs: int):
    """(noisy count of "a" or -10**6 when not published, "b" published) per run."""
    values = np.empty(runs)
    b_out = np.zeros(runs, dtype=bool)
    source = seeded(seed)
    for r in range(runs):
        got = select_keys(counts, sel, source)
        values[r] = got["a"] if "a" in got else -(10**6)
        b_out[r] = "b" in got
    return values, b_out


@pytest.mark.parametrize("delta", [Fraction(1, 100), Fraction(1, 20)])
@pytest.mark.parametrize("keys", [1, 2])
def test_the_selection_audit_holds_along_its_delta_curve(stat, seeded, delta, keys):
    """The (eps, delta) guarantee at several delta: D holds key "a" at a count near the
    threshold, D' adds one person holding "a" and (keys = 2) a new key "b". Over events
    {y >= t}, {y < t} of a's published value (absent = far below), and the same with b's
    publication folded in, the audit's bound ln((P - delta) / Q) stays <= eps (false
    failure <= 1e-6 each)."""
    sel = plan_selection(epsilon=1, delta=delta, keys_per_person=keys, with_counts=True)
    c = sel.threshold
    d_counts = {"a": c}
    d_prime = {"a": c + 1, **({"b": 1} if keys == 2 else {})}
    a_d, _ = _selection_outputs(sel, d_counts, seeded, 1, 10_000)
    a_p, b_p = _selection_outputs(sel, d_prime, seeded, 2, 10_000)
    thresholds = [-(10**6) + 1] + list(range(c - 6, c + 12, 2))
    assert stat.audit_lower_bound(a_d, a_p, thresholds, delta=float(delta)) <= 1
    folded = np.where(b_p, 10**6, a_p)  # "b published" joins the top event
    assert stat.audit_lower_bound(a_d, folded, thresholds, delta=float(delta)) <= 1


def test_a_gaussian_selection_publishes_counts_with_its_sigma():
    sel = plan_selection(epsilon=1, delta=Fraction(1, 10**6), keys_per_person=5, with_counts=True)
    assert sel.mechanism == "gaussian_threshold"
    spec = sel.noise_spec()
    assert spec.noise == "discrete_gaussian" and spec.sigma == sel.sigma
    assert KeySelection.from_dict(sel.to_dict()) == sel
    assert [r.kind for r in sel.records()] == ["generic_eps_delta"]
    with pytest.raises(PrivacyParameterError):
        plan_selection(epsilon=1, delta=0, keys_per_person=1, with_counts=True)
    with pytest.raises(PrivacyParameterError):
        plan_selection(epsilon=1, delta=Fraction(1, 10**6), keys_per_person=0, with_counts=True)


@pytest.mark.parametrize("keys", [1, 5])
def test_more_keys_than_gaussian_thresholding_on_zipf(keys):
    """Zipf keys (10,000 distinct, 1M rows), epsilon 1, delta 1e-6: the expected number of
    keys the product publishes (exact release probabilities) is at least that of Gaussian
    thresholding as usually implemented, with counts and without."""
    from scipy.stats import norm

    counts = zipf_counts(10_000, 1_000_000, keys, np.random.default_rng(7))
    counts = counts[counts > 0]
    tau, sigma = textbook_gaussian(1.0, 1e-6, keys)
    baseline = float(np.sum(norm.sf((tau - counts) / sigma)))
    for with_counts in (True, False):
        sel = plan_selection(
            epsilon=1, delta=Fraction(1, 10**6), keys_per_person=keys, with_counts=with_counts
        )
        ours = sum(sel.release_probability(int(c)) for c in counts)
        assert ours >= baseline
