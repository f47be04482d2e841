"""Quantile confidence intervals: validity, sensitivity, coverage, privacy audit.

False-failure rates (fixed seeds make each outcome reproducible; the rates say how
often a CORRECT implementation would fail with a fresh seed):
- validity lemma, sensitivity, shift, JSON: deterministic (0);
- coverage (C1): per test, one-sided binomial tests of the miss counts against
  Binomial(R, beta) (whole interval) and Binomial(R, beta / 2) (each end),
  Bonferroni over the test's checks, so each test fails falsely with
  probability <= 1e-6; six such tests: <= 6e-6 in all;
- power of the coverage test (shift forced to 0 must be rejected): the miss rate
  is then ~0.5 against beta = 0.05, a z-score above 60 (false failure << 1e-9);
- M2 audit: Clopper-Pearson over the events {index = i}, LB <= eps (1e-6);
  its power case (sensitivity halved: true loss 1.55 at index 4) gave LB 1.28-1.35
  over 3 seeds (the correct one 0.68-0.74): a miss is ~10 sd away (<< 1e-9);
- planned reach: one-sided binomial at 1e-6.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy import quantile_intervals as qi
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.permute_flip import (
    permute_and_flip,
    permute_and_flip_indices,
    worst_case_miss,
)
from dpportal.privacy.quantile_intervals import LOWER, UPPER
from dpportal.privacy.quantiles import RankCounter, candidate_grid, quantile_scaled_sensitivity

ALPHA = 1e-6

# ------------------------------------------------------------------ helpers


def _order_bounds(n: int, q: Fraction) -> tuple[int, int]:
    """(a, b): 1-based ranks of the order statistics the interval must hold."""
    return max(1, math.floor(q * n)), min(n, math.ceil(q * n) + 1)


def _draws(utilities, runs: int, eps, sens, rng) -> np.ndarray:
    """`runs` independent permute-and-flip selections on the same utilities."""
    tiled = np.tile(np.array(list(utilities), dtype=np.int64), (runs, 1))
    return permute_and_flip_indices(tiled, epsilon=eps, sensitivity=sens, rng=rng)


def _shift(eps_end, q, bound, m, confidence) -> int:
    return qi.interval_shift(
        epsilon_end=eps_end,
        quantile=q,
        contribution_bound=bound,
        candidates=m,
        confidence=confidence,
    )


def _ranks(values, grid) -> tuple[list[int], int]:
    counter = RankCounter(grid)
    counter.add(np.array(values, dtype=float))
    return counter.rank_counts().tolist(), counter.n


# ------------------------------------------------------------------ validity lemma (exhaustive)

GRID5 = [1, 2, 3, 4, 5]
VALUES = [0.5, 1, 1.5, 3, 4.5, 5, 6]  # below, at and between grid points, above
QS = [Fraction(0), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(9, 10), Fraction(1)]


def test_every_missing_end_scores_below_minus_s():
    """For every small dataset, q and s: a candidate above x_(a) has lower-end utility
    < -s, one below x_(b) (not the last) has upper-end utility < -s, and u* = 0."""
    for size in range(1, 6):
        for data in itertools.combinations_with_replacement(VALUES, size):
            ranks, n = _ranks(data, GRID5)
            xs = np.sort(np.clip(data, 1, 5))
            for q, s in itertools.product(QS, (0, 1, 3)):
                a, b = _order_bounds(n, q)
                d = q.denominator
                low = qi.interval_utilities(ranks, n, quantile=q, shift=s, side=LOWER)
                high = qi.interval_utilities(ranks, n, quantile=q, shift=s, side=UPPER)
                assert max(low) == 0 and max(high) == 0
                for j, c in enumerate(GRID5):
                    if c > xs[a - 1]:
                        assert low[j] < -d * s, (data, q, s, j)
                    if c < xs[b - 1]:
                        assert high[j] < -d * s, (data, q, s, j)


def test_the_covered_span_holds_both_quantile_definitions():
    """[x_(a), x_(b)] holds numpy's inverse-CDF and linear (quantile_cont) quantiles."""
    rng = np.random.default_rng(3)  # data, not noise
    for _ in range(300):
        n = int(rng.integers(1, 40))
        x = np.sort(rng.integers(0, 10, n)).astype(float)
        for q in QS:
            a, b = _order_bounds(n, q)
            for method in ("inverted_cdf", "linear"):
                value = np.quantile(x, float(q), method=method)
                assert x[a - 1] <= value <= x[b - 1], (x, q, method)


# ------------------------------------------------------------------ sensitivity (brute force)


@pytest.mark.parametrize("side", [LOWER, UPPER])
def test_sensitivity_by_brute_force(side):
    """max |U_j(D) - U_j(D + person)| over small datasets equals max(p, d - p) L: bounded,
    and attained (so the constant is not loose) for q = 1/2 and 1/4."""
    values = [0.5, 1.5, 2.5, 4.5, 6]
    for q, bound in itertools.product([Fraction(1, 2), Fraction(1, 4), Fraction(1, 3)], (1, 2)):
        worst = 0
        for size in range(0, 5):
            for data in itertools.combinations_with_replacement(values, size):
                r0, n0 = _ranks(data, GRID5)
                u0 = qi.interval_utilities(r0, n0, quantile=q, shift=1, side=side)
                for person in itertools.combinations_with_replacement(values, bound):
                    r1, n1 = _ranks(data + person, GRID5)
                    u1 = qi.interval_utilities(r1, n1, quantile=q, shift=1, side=side)
                    worst = max(worst, max(abs(int(x) - int(y)) for x, y in zip(u0, u1)))
        sens = quantile_scaled_sensitivity(q, bound)
        assert worst <= sens
        if q.denominator in (2, 4):
            assert worst == sens


# ------------------------------------------------------------------ the shift


def _reference_shift(eps_end: float, sens: float, m: int, beta_half: float) -> int:
    """Independent: bisection on s for the closed form 1 - (1 - (1-p)^m) / (m p)."""

    def miss(s: int) -> float:
        p = math.exp(-eps_end * s / (2 * sens))
        return 1 - (1 - (1 - p) ** m) / (m * p)

    s = 0
    while miss(s) > beta_half:
        s += 1
    return s


@pytest.mark.parametrize(
    ("eps", "q", "bound", "m", "confidence"),
    [
        ("0.5", "0.5", 1, 401, "0.95"),
        ("0.1", "0.9", 2, 1001, "0.9"),
        ("2", "0.25", 3, 11, "0.99"),
        ("1/6", "0.5", 1, 100_000, "0.95"),
    ],
)
def test_interval_shift_is_the_smallest_valid(eps, q, bound, m, confidence):
    s = _shift(eps, q, bound, m, confidence)
    sens = float(max(Fraction(q), 1 - Fraction(q)) * bound)
    half = float(1 - Fraction(confidence)) / 2
    assert s == _reference_shift(float(Fraction(eps)), sens, m, half)
    p = math.exp(-float(Fraction(eps)) * s / (2 * sens))
    assert worst_case_miss(p, m) <= half


# ------------------------------------------------------------------ coverage (C1)

RUNS = 1000
EPS_TOTAL = Fraction(1)  # one quantile: eps / 2 per end


def _data(name: str, n: int) -> tuple[np.ndarray, tuple[Fraction, ...], int]:
    """(values, grid, L) of a named distribution: data, not noise."""
    rng = np.random.default_rng(n + len(name))
    if name == "lognormal":
        return rng.lognormal(0, 1, n), candidate_grid(0, 20, "0.05"), 1
    if name == "ties_at_grid":  # integer data, every value on a grid point
        return rng.poisson(4, n).astype(float), candidate_grid(0, 30, 1), 1
    if name == "one_cell":
        return rng.uniform(5.2, 5.8, n), candidate_grid(0, 10, 1), 1
    if name == "outside_grid":  # most values clamped to the ends
        return rng.normal(0, 10, n), candidate_grid(-5, 5, "0.25"), 2
    if name == "integer_half_grid":  # ties at every other grid point, the rest between
        return rng.integers(0, 100, n).astype(float), candidate_grid(0, 100, "2.5"), 1
    if name == "spread_dense":  # evenly spread, few ranks per cell: many near-ties in u
        return (np.arange(n) + 0.5) / n, candidate_grid(0, 1, "0.005"), 1
    raise ValueError(name)


def _misses(x, grid, q, bound, confidence, seeded, seed, runs=RUNS):
    """Miss counts (lower end, upper end, released interval) over `runs` releases."""
    ranks, n = _ranks(x, grid)
    eps_end = EPS_TOTAL / 2
    s = _shift(eps_end, q, bound, len(grid), confidence)
    sens = quantile_scaled_sensitivity(q, bound)
    ends = [
        _draws(
            qi.interval_utilities(ranks, n, quantile=q, shift=s, side=side),
            runs,
            eps_end,
            sens,
            seeded(seed + offset),
        )
        for offset, side in enumerate((LOWER, UPPER))
    ]
    g = np.array([float(c) for c in grid])
    xs = np.sort(np.clip(x, g[0], g[-1]))
    a, b = _order_bounds(n, Fraction(q))
    lo_val, hi_val = xs[a - 1], xs[b - 1]
    low, high = np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1])
    return (
        int(np.sum(g[ends[0]] > lo_val)),
        int(np.sum(g[ends[1]] < hi_val)),
        int(np.sum((g[low] > lo_val) | (g[high] < hi_val))),
    )


def _too_many(misses: int, runs: int, rate: float, alpha: float) -> bool:
    """One-sided binomial test: P(Binomial(runs, rate) >= misses) < alpha."""
    return misses > 0 and stats.binom.sf(misses - 1, runs, rate) < alpha


NAMES = [
    "lognormal",
    "ties_at_grid",
    "one_cell",
    "outside_grid",
    "integer_half_grid",
    "spread_dense",
]
CONFIDENCES = [Fraction(9, 10), Fraction(95, 100), Fraction(99, 100)]
SIZES = [100, 1000, 100_000]
QUANTILES = [Fraction(1, 2), Fraction(1, 10), Fraction(9, 10)]


@pytest.mark.parametrize("name", NAMES)
def test_coverage_is_nominal_for_every_dataset(name, seeded):
    """Misses <= beta (interval) and <= beta / 2 (each end), binomial at 1e-6 per test."""
    checks = len(SIZES) * len(CONFIDENCES) * len(QUANTILES) * 3
    alpha = ALPHA / checks
    seed = 100 * NAMES.index(name)
    for n, confidence, q in itertools.product(SIZES, CONFIDENCES, QUANTILES):
        x, grid, bound = _data(name, n)
        seed += 2
        low, high, both = _misses(x, grid, q, bound, confidence, seeded, seed)
        beta = float(1 - confidence)
        case = (name, n, str(confidence), str(q), low, high, both)
        assert not _too_many(low, RUNS, beta / 2, alpha), case
        assert not _too_many(high, RUNS, beta / 2, alpha), case
        assert not _too_many(both, RUNS, beta, alpha), case


def test_coverage_test_catches_a_missing_shift(monkeypatch, seeded):
    """Power: with s = 0 both ends sit at q n -+ 1 and, on one rank per cell, the
    interval misses ~50 % of the time; the binomial test must reject it."""
    monkeypatch.setattr(qi, "interval_shift", lambda **kwargs: 0)
    x, grid, bound = _data("spread_dense", 1000)
    low, high, both = _misses(x, grid, Fraction(1, 2), bound, Fraction(95, 100), seeded, 7)
    assert _too_many(both, RUNS, 0.05, ALPHA)


# ------------------------------------------------------------------ privacy audit (M2)

R_AUDIT = 100_000
# Found by exhaustive search over small datasets (exact permute-and-flip law): the
# median's lower end at s = 2, L = 2; D = {4.5, 6, 6, 6} has scaled utilities
# [0, -2, -2, -2, -4], D + {4.5, 4.5} has [0, 0, 0, 0, -6]; the exact loss at
# index 4 is 0.83 <= eps = 1 (1.55 if Delta_U were halved). Privacy holds for every s.
AUDIT = dict(data=[4.5, 6, 6, 6], person=[4.5, 4.5], q=Fraction(1, 2), bound=2, shift=2)


def _audit_lb(stat, seeded, sensitivity_factor=Fraction(1)) -> float:
    outputs = []
    for seed, rows in ((31, AUDIT["data"]), (32, AUDIT["data"] + AUDIT["person"])):
        ranks, n = _ranks(rows, GRID5)
        u = qi.interval_utilities(ranks, n, quantile=AUDIT["q"], shift=AUDIT["shift"], side=LOWER)
        sens = quantile_scaled_sensitivity(AUDIT["q"], AUDIT["bound"]) * sensitivity_factor
        outputs.append(_draws(u, R_AUDIT, 1, sens, seeded(seed)))
    return stat.audit_index_lower_bound(outputs[0], outputs[1], len(GRID5))


def test_interval_end_audit_passes(stat, seeded):
    """LB <= eps on the search's worst neighbours; false failure 1e-6."""
    assert _audit_lb(stat, seeded) <= 1


def test_interval_end_audit_catches_a_halved_sensitivity(stat, seeded):
    """Power: the same neighbours under Delta_U / 2 (true loss 1.55) exceed eps = 1."""
    assert _audit_lb(stat, seeded, Fraction(1, 2)) > 1


# ------------------------------------------------------------------ the release


def test_release_draws_what_the_tests_draw(seeded):
    """release_quantile_intervals = interval_shift + interval_utilities + permute-and-flip,
    lower end then upper end, sorted; the first rank is clamped to 0."""
    x, grid, _ = _data("lognormal", 1000)
    x = np.concatenate([x, [-1.0, -1.0, -1.0]])  # below c_1: counted in every raw r_j
    raw, n = _ranks(x, grid)
    ranks, _ = _ranks(np.clip(x, 0, 20), grid)  # the ranks of the clamped values
    assert ranks[0] == 0 and raw[0] == 3 and ranks[1:] == raw[1:]
    result = qi.release_quantile_intervals(
        raw,
        n,
        candidates=grid,
        quantiles=["0.5", "0.9"],
        epsilon="0.8",
        confidence="0.95",
        rng=seeded(50),
    )
    rng = seeded(50)
    for part, q in zip(result.intervals, ["0.5", "0.9"], strict=True):
        s = _shift("0.2", q, 1, len(grid), "0.95")
        ends = [
            permute_and_flip(
                qi.interval_utilities(ranks, n, quantile=q, shift=s, side=side),
                epsilon="0.2",
                sensitivity=quantile_scaled_sensitivity(q, 1),
                rng=rng,
            )
            for side in (LOWER, UPPER)
        ]
        assert (part.low_index, part.high_index) == (min(ends), max(ends))
        assert (part.low, part.high) == (grid[min(ends)], grid[max(ends)])
        assert part.shift == s


def test_to_dict_is_exact_json_and_records_add_up(seeded):
    grid = candidate_grid(0, 10, "0.1")
    ranks, n = _ranks(np.linspace(0, 10, 500), grid)
    result = qi.release_quantile_intervals(
        ranks,
        n,
        candidates=grid,
        quantiles=["0.25", "0.5", "0.75"],
        epsilon="0.3",
        contribution_bound=2,
        confidence="0.9",
        rng=seeded(60),
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert data["mechanism"] == "permute_and_flip_interval"
    assert Fraction(data["epsilon_per_end"]) * 6 == Fraction(data["epsilon"]) == Fraction(3, 10)
    assert data["confidence"] == "0.9" and data["delta"] == "0"
    assert len(data["shift"]) == len(data["ends"]) == 3
    for end, part in zip(data["ends"], result.intervals, strict=True):
        assert Fraction(end["low"]) == grid[end["low_index"]] == part.low
        assert Fraction(end["high"]) == grid[end["high_index"]] == part.high
        assert end["low_index"] <= end["high_index"]
    records = qi.interval_records("0.3", 3)
    assert records == [MechanismRecord.permute_and_flip(epsilon=Fraction(1, 20))] * 6
    assert sum(r.epsilon for r in records) == Fraction(3, 10)


@pytest.mark.parametrize(
    ("ranks", "quantiles", "confidence", "error"),
    [
        ([0, 1], ["0.5"], "0.9", ValueError),  # one rank count per candidate
        ([0, 2, 1], ["0.5"], "0.9", ValueError),  # non-decreasing
        ([0, 1, 2], [], "0.9", PrivacyParameterError),
        ([0, 1, 2], ["0.5"], 1, PrivacyParameterError),
    ],
)
def test_release_refuses_bad_inputs(ranks, quantiles, confidence, error):
    with pytest.raises(error):
        qi.release_quantile_intervals(
            ranks, 2, candidates=[1, 2, 3], quantiles=quantiles, epsilon=1, confidence=confidence
        )
    with pytest.raises(ValueError, match="side"):
        qi.interval_utilities([0, 1, 2], 2, quantile="0.5", shift=0, side="middle")


# ------------------------------------------------------------------ planned reach


def test_planned_reach_is_a_median_bound(seeded):
    """On one rank per cell (near the worst case), the lower end's upper neighbour has
    rank >= q n - reach in at least half of the runs (binomial, 1e-6), for the median."""
    x, grid, _ = _data("spread_dense", 1000)
    ranks, n = _ranks(x, grid)
    (reach,) = qi.planned_interval_rank_reach(
        epsilon=EPS_TOTAL, quantiles=["0.5"], candidates=len(grid), confidence="0.95"
    )
    s = _shift(EPS_TOTAL / 2, "0.5", 1, len(grid), "0.95")
    u = qi.interval_utilities(ranks, n, quantile="0.5", shift=s, side=LOWER)
    idx = _draws(u, RUNS, EPS_TOTAL / 2, 1, seeded(70))
    above = np.array(ranks + [n])[np.minimum(idx + 1, len(grid))]
    short = int(np.sum(above < n / 2 - reach))
    assert not _too_many(short, RUNS, 0.5, ALPHA)
    wider = qi.planned_interval_rank_reach(
        epsilon=EPS_TOTAL / 2, quantiles=["0.5", "0.9"], candidates=len(grid), confidence="0.95"
    )
    assert wider[0] > reach and wider[1] > wider[0]
