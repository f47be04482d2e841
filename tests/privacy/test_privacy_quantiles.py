"""Quantiles by exact permute-and-flip: sampler law, sensitivity, privacy audit, rank error.

False-failure rates (fixed seeds make each outcome reproducible; the rates say
how often a CORRECT implementation would fail with a fresh seed):
- S1 sampler law: chi-square at N = 100,000 draws, reject at p < 1e-6 (per test 1e-6);
- S3 power: the same samples must be rejected against the exponential mechanism's
  law and against a sampler that forgot the factor 2 (a correct sampler fails these
  with a probability far below 1e-9: the chi-square statistics are ~10**3-10**4);
- M2 audit: Clopper-Pearson over the events {index = i}, LB <= eps (1e-6);
- rank-error bound: miss rate <= beta + 4.75 SE (1e-6 each), and not absurdly below
  its exact value (>= exact - 4.75 SE, 1e-6).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy import quantiles as quantiles_module
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.params import decimal_exponent
from dpportal.privacy.permute_flip import permute_and_flip_indices, uniform_orders
from dpportal.privacy.quantiles import (
    RankCounter,
    candidate_grid,
    quantile_rank_errors,
    quantile_scaled_sensitivity,
    quantile_sensitivity,
    quantile_utilities,
    quantiles_budget_split,
    quantiles_epsilon_for_rank_error,
    rank_error_bound,
    rank_error_percent,
    release_quantiles,
)

N_DRAWS = 100_000
Z = 4.75  # one-sided normal tail 1.0e-6


# ------------------------------------------------------------------ reference law (independent)


def _pf_law(utilities, eps: float, delta: float) -> np.ndarray:
    """Pr[output = j] of permute-and-flip by enumerating all m! visiting orders."""
    top = max(utilities)
    p = [math.exp(eps * (u - top) / (2 * delta)) for u in utilities]
    out = np.zeros(len(p))
    for order in itertools.permutations(range(len(p))):
        survive = 1.0
        for j in order:
            out[j] += survive * p[j]
            survive *= 1 - p[j]
    return out / math.factorial(len(p))


def _em_law(utilities, eps: float, delta: float) -> np.ndarray:
    w = np.exp(eps * (np.array(utilities, float) - max(utilities)) / (2 * delta))
    return w / w.sum()


def _chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = probs * counts.sum()
    assert expected.min() >= 5
    statistic = float(((counts - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(statistic, probs.size - 1))


CASES = [
    # utilities, eps, sensitivity: integers; a rational case with ties; a wide gap
    ([0, -1, -2, -3, -4], Fraction(1), Fraction(1)),
    ([-3, 0, -3, -1], Fraction(7, 10), Fraction(3, 2)),
    ([-7, 0, -2, -1, -12], Fraction(5, 4), Fraction(2)),
]


@pytest.mark.parametrize(("utilities", "eps", "sens"), CASES)
def test_permute_and_flip_matches_its_exact_law(utilities, eps, sens, seeded):
    """S1 + S3: N = 1e5 draws fit the enumerated law (p >= 1e-6) and are rejected
    against the exponential mechanism and against a missing factor 2."""
    runs = np.tile(np.array(utilities, dtype=np.int64), (N_DRAWS, 1))
    idx = permute_and_flip_indices(runs, epsilon=eps, sensitivity=sens, rng=seeded(11))
    counts = np.bincount(idx, minlength=len(utilities)).astype(float)
    law = _pf_law(utilities, float(eps), float(sens))
    assert _chi2_p(counts, law) >= 1e-6
    assert _chi2_p(counts, _em_law(utilities, float(eps), float(sens))) < 1e-6
    assert _chi2_p(counts, _pf_law(utilities, float(eps), float(sens) / 2)) < 1e-6


def test_huge_rational_exponents_stay_exact(seeded):
    """A float epsilon (denominator 2**54) and a large Delta give exponent denominators
    beyond int64: the Python-int path must give the same law (N = 20,000, p >= 1e-6)."""
    utilities, eps, sens = [0, -6300, -12600, -3], Fraction(0.37), Fraction(12600)
    runs = np.tile(np.array(utilities, dtype=np.int64), (20_000, 1))
    idx = permute_and_flip_indices(runs, epsilon=eps, sensitivity=sens, rng=seeded(12))
    counts = np.bincount(idx, minlength=4).astype(float)
    assert _chi2_p(counts, _pf_law(utilities, float(eps), float(sens))) >= 1e-6


def test_one_candidate_and_the_best_is_always_accepted(seeded):
    assert permute_and_flip_indices([5], epsilon=1, sensitivity=1, rng=seeded(1)).tolist() == [0]
    far = np.tile(np.array([0, -(10**40)], dtype=object), (1000, 1))
    out = permute_and_flip_indices(far, epsilon=1, sensitivity=1, rng=seeded(2))
    assert (out == 0).all()  # exp(-5e39): never the second


def test_orders_are_uniform_permutations(seeded):
    """All 24 orders of 4 candidates equally likely: chi-square at N = 1e5 (p >= 1e-6)."""
    orders = uniform_orders(N_DRAWS, 4, seeded(3))
    assert (np.sort(orders, axis=1) == np.arange(4)).all()
    codes = orders @ np.array([64, 16, 4, 1])
    counts = np.unique(codes, return_counts=True)[1].astype(float)
    assert counts.size == 24
    assert _chi2_p(counts, np.full(24, 1 / 24)) >= 1e-6


def test_permute_and_flip_refuses_non_integer_utilities():
    with pytest.raises(ValueError):
        permute_and_flip_indices([0.5, 1.0], epsilon=1, sensitivity=1)
    with pytest.raises(PrivacyParameterError):
        permute_and_flip_indices([], epsilon=1, sensitivity=1)
    with pytest.raises(PrivacyParameterError):
        permute_and_flip_indices([1, 2], epsilon=0, sensitivity=1)


# ------------------------------------------------------------------ sensitivity (brute force)


def _utilities_ranks(data: list[int], grid: list[float], q: Fraction) -> list[Fraction]:
    n = len(data)
    return [-abs(sum(x < c for x in data) - q * n) for c in grid]


@pytest.mark.parametrize("bound", [1, 2, 3])
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 4), Fraction(9, 10), Fraction(0)])
def test_utility_sensitivity_is_max_q_one_minus_q_times_L(bound, q):
    """Over every dataset of <= 3 values in {0..3} and every added person with
    1..L rows: max |u_j(D') - u_j(D)| == max(q, 1 - q) L (never above, attained)."""
    grid = [0.5, 1.5, 2.5]
    values = range(4)
    worst = Fraction(0)
    for size in range(4):
        for data in itertools.combinations_with_replacement(values, size):
            base = _utilities_ranks(list(data), grid, q)
            for rows in range(1, bound + 1):
                for person in itertools.combinations_with_replacement(values, rows):
                    moved = _utilities_ranks(list(data) + list(person), grid, q)
                    worst = max(worst, *(abs(a - b) for a, b in zip(base, moved, strict=True)))
    assert worst == quantile_sensitivity(q, bound) == max(q, 1 - q) * bound
    assert quantile_scaled_sensitivity(q, bound) == worst * q.denominator


def test_scaled_utilities_are_the_rank_utilities_times_the_denominator():
    ranks, n = [0, 3, 7, 7, 10], 10
    for q in (Fraction(1, 2), Fraction(1, 3), Fraction(37, 100)):
        scaled = quantile_utilities(ranks, n, q)
        assert [Fraction(int(u), q.denominator) for u in scaled] == [-abs(r - q * n) for r in ranks]
    with pytest.raises(ValueError):
        quantile_utilities([3, 2], 5, "0.5")  # not monotone
    with pytest.raises(ValueError):
        quantile_utilities([3, 6], 5, "0.5")  # above n


def test_rank_counter_streams_exact_ranks():
    rng = np.random.default_rng(5)  # data, not noise
    x = np.round(rng.normal(10, 3, 5003), 1)
    grid = candidate_grid("0", "20", "0.5")
    counter = RankCounter(grid)
    for chunk in np.array_split(x, 7):
        counter.add(chunk)
    assert counter.n == x.size
    expected = [(x < float(c)).sum() for c in grid]
    assert counter.rank_counts().tolist() == expected
    with pytest.raises(ValueError, match="NaN"):
        counter.add(np.array([1.0, np.nan]))
    with pytest.raises(PrivacyParameterError):
        RankCounter([1, 1, 2])
    assert len(candidate_grid(0, 1, "0.25")) == 5


# ------------------------------------------------------------------ privacy audit (M2)

R_AUDIT = 100_000


def _audit_lb(stat, seeded, data, person, grid, q, bound, eps) -> float:
    outputs = []
    for seed, rows in ((31, data), (32, data + person)):
        counter = RankCounter(grid)
        counter.add(np.array(rows, dtype=float))
        utilities = quantile_utilities(counter.rank_counts(), counter.n, q)
        runs = np.tile(np.array(list(utilities), dtype=np.int64), (R_AUDIT, 1))
        outputs.append(
            permute_and_flip_indices(
                runs,
                epsilon=eps,
                sensitivity=quantiles_module.quantile_scaled_sensitivity(q, bound),
                rng=seeded(seed),
            )
        )
    return stat.audit_index_lower_bound(outputs[0], outputs[1], len(grid))


# The median's tight case: in D the first candidate is exact and the others one rank
# off; adding the person's L = 2 rows above the grid swaps that (each u moves by
# exactly Delta_u = 1). The exact log ratio at index 0 is 0.99 <= eps = 1.
TIGHT = dict(
    data=[0.0] * 5 + [1.5] + [9.0] * 4,
    person=[9.0, 9.0],
    grid=[1, 2, 3, 4, 5],
    q=Fraction(1, 2),
    bound=2,
)
SKEWED = dict(
    data=[0.5, 1.5, 1.5, 2.5, 3.5, 3.5, 4.5, 6.0],
    person=[0.2, 0.2, 0.2],
    grid=[1, 2, 3, 4, 5],
    q=Fraction(1, 4),
    bound=3,
)


@pytest.mark.parametrize("case", [TIGHT, SKEWED], ids=["median_tight", "quartile_L3"])
def test_quantile_audit_passes(case, stat, seeded):
    """LB <= eps on worst-case neighbours (one person with L rows added); false failure 1e-6."""
    assert _audit_lb(stat, seeded, eps=Fraction(1), **case) <= 1


def test_quantile_audit_catches_a_halved_sensitivity(monkeypatch, stat, seeded):
    """Power: with Delta_U halved (the exponent eps (u - u*) / Delta) the true loss at
    index 0 is 1.89: the audit must exceed eps = 1. Over 4 independent seeds the
    broken LB was 1.82 +- 0.02 (a miss is > 40 sd away), the correct one 0.92 +- 0.01."""
    real = quantiles_module.quantile_scaled_sensitivity
    monkeypatch.setattr(
        quantiles_module,
        "quantile_scaled_sensitivity",
        lambda q, bound: Fraction(real(q, bound), 2),
    )
    assert _audit_lb(stat, seeded, eps=Fraction(1), **TIGHT) > 1


def test_release_uses_the_audited_utilities_and_sensitivity(seeded):
    """release_quantiles draws exactly what the audit draws (same inputs, same seed)."""
    grid = [1, 2, 3, 4, 5]
    counter = RankCounter(grid)
    counter.add(np.array(TIGHT["data"]))
    result = release_quantiles(
        counter.rank_counts(),
        counter.n,
        candidates=grid,
        quantiles=["0.5"],
        epsilon=1,
        contribution_bound=2,
        rng=seeded(40),
    )
    expected = permute_and_flip_indices(
        np.array(list(quantile_utilities(counter.rank_counts(), counter.n, "0.5")), np.int64),
        epsilon=1,
        sensitivity=quantile_scaled_sensitivity("0.5", 2),
        rng=seeded(40),
    )
    assert result.parts[0].index == int(expected[0])


# ------------------------------------------------------------------ rank-error bound


def _miss_rate(utilities, eps, sens_ranks, q, t, seeded, seed, runs):
    d = Fraction(q).denominator
    arr = np.tile(np.array(utilities, dtype=np.int64), (runs, 1))
    idx = permute_and_flip_indices(arr, epsilon=eps, sensitivity=sens_ranks * d, rng=seeded(seed))
    errors = (max(utilities) - arr[0][idx]) / d  # ranks beyond the best candidate
    return float(np.mean(errors > t))


def test_rank_error_bound_holds_and_is_nearly_tight(seeded):
    """One exact candidate and m - 1 = 19 candidates just beyond t ranks (the worst case
    the exact tail is computed for): the miss rate must be <= beta + 4.75 SE and
    >= its exact value - 4.75 SE (exact just below beta:
    P = 1 - (1/m) sum_{j<m} (1 - p)**j, p = exp(-eps (t+1) / (2 Delta)));
    with t halved it must exceed beta (the test has power). R = 20,000 (1e-6 each)."""
    m, eps, q, bound, beta, runs = 20, Fraction(1, 2), Fraction(1, 2), 1, 0.05, 20_000
    t = rank_error_bound(
        epsilon=eps, quantile=q, contribution_bound=bound, candidates=m, confidence="0.95"
    )
    sens = quantile_sensitivity(q, bound)
    gap = math.floor(t) + 1  # ranks: just outside the bound
    utilities = [0] + [-2 * gap] * (m - 1)  # scaled by d = 2
    rate = _miss_rate(utilities, eps, sens, q, t, seeded, 50, runs)
    p = math.exp(-float(eps) * gap / (2 * float(sens)))
    exact = 1 - sum((1 - p) ** j for j in range(m)) / m
    se = math.sqrt(beta * (1 - beta) / runs)
    assert rate <= beta + Z * se
    assert rate >= exact - Z * math.sqrt(exact * (1 - exact) / runs)
    half = [0] + [-2 * (math.floor(t / 2) + 1)] * (m - 1)
    assert _miss_rate(half, eps, sens, q, t / 2, seeded, 51, runs) > beta + Z * se


@pytest.mark.parametrize("q", ["0.25", "0.5", "0.9"])
def test_rank_error_bound_on_data(q, seeded):
    """On n = 2,000 normal values and a grid of 101 candidates, L = 2, eps = 0.2: the
    released candidate's rank error (beyond the grid's best) is <= t at 95 % in
    >= 95 % - 4.75 SE of R = 2,000 seeded releases (false failure 1e-6)."""
    x = np.random.default_rng(7).normal(50, 15, 2000)  # data, not noise
    grid = candidate_grid(0, 100, 1)
    counter = RankCounter(grid)
    counter.add(x)
    utilities = np.array(list(quantile_utilities(counter.rank_counts(), counter.n, q)), np.int64)
    t = rank_error_bound(
        epsilon="0.2", quantile=q, contribution_bound=2, candidates=101, confidence="0.95"
    )
    sens = quantile_sensitivity(q, 2)
    rate = _miss_rate(utilities, Fraction(1, 5), sens, Fraction(q), t, seeded, 60, 2000)
    assert rate <= 0.05 + Z * math.sqrt(0.05 * 0.95 / 2000)


# ------------------------------------------------------------------ release, explanation, budget


def test_release_explains_itself_without_ranks_or_n(seeded, laws):
    grid = candidate_grid(0, 100, 5)
    counter = RankCounter(grid)
    counter.add(np.linspace(3, 97, 987_653 // 1000))
    result = release_quantiles(
        counter.rank_counts(),
        counter.n,
        candidates=grid,
        quantiles=["0.25", "0.5", "0.75"],
        epsilon="1.5",
        contribution_bound=2,
        rng=seeded(70),
    )
    d = result.to_dict()
    text = json.dumps(d)
    assert str(counter.n) not in text
    assert d["statistic"] == "quantiles" and d["delta"] == "0" and d["candidates"] == 21
    assert sum(Fraction(p["epsilon"]) for p in d["quantiles"]) == Fraction(3, 2)
    assert [p["l1_sensitivity"] for p in d["quantiles"]] == ["1.5", "1", "1.5"]
    for part in d["quantiles"]:
        assert Fraction(part["value"]) == grid[part["index"]]
    per, together = (
        quantile_rank_errors(d, confidence="0.9", simultaneous=s) for s in (False, True)
    )
    assert per[1] == pytest.approx(laws.pf_tail(0.5, 1, 21, 0.1), rel=1e-6)
    assert together[0] == pytest.approx(laws.pf_tail(0.5, 1.5, 21, 0.1 / 3), rel=1e-6)
    assert per[1] < 2 * 1 / 0.5 * math.log(21 / 0.1)  # below the union bound
    assert rank_error_percent(per[1], 200) == pytest.approx(per[1] / 2)
    assert rank_error_percent(per[1], 0) is None


def test_budget_split_and_its_inverse():
    assert quantiles_budget_split("0.9", 3) == (Fraction(3, 10),) * 3
    assert quantiles_budget_split(1, 2, ["0.25", "0.75"]) == (Fraction(1, 4), Fraction(3, 4))
    with pytest.raises(PrivacyParameterError):
        quantiles_budget_split(1, 2, ["0.5", "0.6"])
    qs = ["0.25", "0.5", "0.75"]
    eps = quantiles_epsilon_for_rank_error(
        rank_error=40, quantiles=qs, contribution_bound=2, candidates=101, confidence="0.95"
    )
    widths = [
        rank_error_bound(
            epsilon=eps / 3, quantile=q, contribution_bound=2, candidates=101, confidence="0.95"
        )
        for q in qs
    ]
    assert max(widths) <= 40
    smaller = eps - Fraction(10) ** (decimal_exponent(eps) - 2)  # one unit of the 3rd digit
    assert (
        max(
            rank_error_bound(
                epsilon=smaller / 3,
                quantile=q,
                contribution_bound=2,
                candidates=101,
                confidence="0.95",
            )
            for q in qs
        )
        > 40
    )


def test_quantile_selection_needs_the_csprng(monkeypatch):
    """R1: with os.urandom patched to raise, a release raises."""

    def broken(n):
        raise OSError("urandom disabled by the test")

    monkeypatch.setattr(os, "urandom", broken)
    with pytest.raises(OSError, match="urandom disabled"):
        release_quantiles([0, 1, 2], 3, candidates=[1, 2, 3], quantiles=["0.5"], epsilon=1)
