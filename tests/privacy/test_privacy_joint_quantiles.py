"""Joint quantiles (KSS recursion, exact permute-and-flip): law, privacy audit, rank bounds.

False-failure rates (fixed seeds make each outcome reproducible; the rates say how
often a CORRECT implementation would fail with a fresh seed):
- exact law: chi-square of 20,000 draws against the enumerated law, reject at p < 1e-6;
- power of the law test: the same draws must be rejected against the law with the
  levels' budgets unsplit (chi-square statistics in the thousands: a correct sampler
  passes it with probability far below 1e-9);
- M2 audit: Clopper-Pearson over the events {output tuple = t}, LB <= eps (1e-6);
  its power check (levels run at eps instead of eps / D, true loss 1.77 on an event
  of probability 0.027) measured LB 1.62-1.64 over three seed pairs, far above 1;
- rank bounds: miss rate <= beta + 4.75 SE per quantile and simultaneously (1e-6 each);
- reduced benchmark: joint / independent mean rank error <= 0.5; over 10 fresh seed
  sets at this size (40 data sets x 50 draws) the ratio had mean 0.454, SD 0.008 and
  maximum 0.464: a failure is 5.6 SD away (normal tail ~1e-8).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy import joint_quantiles as joint_module
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.joint_quantiles import (
    joint_epsilon_for_rank_error,
    joint_levels,
    joint_quantile_indices,
    joint_rank_error_bounds,
    joint_records,
    release_joint_quantiles,
)
from dpportal.privacy.params import decimal_exponent
from dpportal.privacy.permute_flip import permute_and_flip_indices
from dpportal.privacy.quantiles import (
    RankCounter,
    candidate_grid,
    quantile_rank_errors,
    quantile_scaled_sensitivity,
    quantile_utilities,
    rank_error_bound,
)

Z = 4.75  # one-sided normal tail 1.0e-6
GRID = [1, 2, 3, 4, 5]
QUARTILES = ("0.25", "0.5", "0.75")


# ------------------------------------------------------------------ reference law (independent)


def _pf_law(utilities, eps: float, delta: float) -> list[float]:
    """Pr[output = j] of permute-and-flip by enumerating all m! visiting orders."""
    top = max(utilities)
    p = [math.exp(eps * (u - top) / (2 * delta)) for u in utilities]
    out = [0.0] * len(p)
    for order in itertools.permutations(range(len(p))):
        survive = 1.0
        for j in order:
            out[j] += survive * p[j]
            survive *= 1 - p[j]
    return [v / math.factorial(len(p)) for v in out]


def _joint_law(data, grid, quantiles, eps: float, bound: int) -> dict[tuple, float]:
    """Pr[sorted output tuple] of the recursion, from the raw data values (floats)."""
    qs = sorted(Fraction(q) for q in quantiles)
    eps_level = eps / math.ceil(math.log2(len(qs) + 1))

    def node(first, stop, lo, hi, q_lo, q_hi):
        if first >= stop:
            return {(): 1.0}
        mid = first + (stop - first) // 2
        local_q = (qs[mid] - q_lo) / (q_hi - q_lo)
        rows = [x for x in data if (lo is None or x >= grid[lo]) and (hi is None or x < grid[hi])]
        cands = list(range(0 if lo is None else lo, (len(grid) - 1 if hi is None else hi) + 1))
        utilities = [
            -abs(sum(1 for x in rows if x < grid[j]) - float(local_q) * len(rows)) for j in cands
        ]
        law = _pf_law(utilities, eps_level, float(max(local_q, 1 - local_q)) * bound)
        out: dict[tuple, float] = {}
        for s, ps in zip(cands, law, strict=True):
            left = node(first, mid, lo, s, q_lo, qs[mid])
            right = node(mid + 1, stop, s, hi, qs[mid], q_hi)
            for (lt, pl), (rt, pr) in itertools.product(left.items(), right.items()):
                out[lt + (s,) + rt] = out.get(lt + (s,) + rt, 0.0) + ps * pl * pr
        return out

    return node(0, len(qs), None, None, Fraction(0), Fraction(1))


def _counts(data, grid=GRID):
    counter = RankCounter(grid)
    counter.add(np.array(data, dtype=float))
    return counter.rank_counts(), counter.n


def _chi2_against(draws: np.ndarray, law: dict[tuple, float]) -> float:
    """p-value of the draws' tuples against the law; cells below 5 expected are merged."""
    n = draws.shape[0]
    seen = Counter(map(tuple, draws.tolist()))
    assert set(seen) <= set(law), "a tuple outside the law's support was drawn"
    big = sorted((t for t in law if law[t] * n >= 5), key=lambda t: -law[t])
    probs, counts = [law[t] for t in big], [seen[t] for t in big]
    rest_p, rest_c = max(0.0, 1 - sum(probs)), n - sum(counts)
    if rest_p * n >= 5:
        probs, counts = [*probs, rest_p], [*counts, rest_c]
    else:  # too small for its own cell: merged into the smallest one
        probs[-1], counts[-1] = probs[-1] + rest_p, counts[-1] + rest_c
    expected = np.array(probs) / sum(probs) * n
    statistic = float(((np.array(counts) - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(statistic, len(probs) - 1))


LAW_CASES = [
    dict(data=[0.0, 1.5, 1.5, 2.5, 3.5, 3.5, 4.5, 9.0], quantiles=QUARTILES, eps=3, bound=1),
    dict(data=[0.0, 0.0, 1.5, 2.5, 2.5, 4.5, 9.0], quantiles=("1/3", "2/3"), eps=2, bound=2),
]


@pytest.mark.parametrize("case", LAW_CASES, ids=["quartiles", "tertiles_L2"])
def test_joint_draws_follow_the_enumerated_law(case, seeded):
    """20,000 draws vs the recursion's exact law (p >= 1e-6); rejected vs unsplit levels."""
    ranks, n = _counts(case["data"])
    draws = joint_quantile_indices(
        ranks,
        n,
        quantiles=case["quantiles"],
        epsilon=case["eps"],
        contribution_bound=case["bound"],
        runs=20_000,
        rng=seeded(11),
    )
    law = _joint_law(case["data"], GRID, case["quantiles"], case["eps"], case["bound"])
    assert sum(law.values()) == pytest.approx(1, abs=1e-12)
    assert _chi2_against(draws, law) >= 1e-6
    levels = joint_levels(len(case["quantiles"]))
    unsplit = _joint_law(case["data"], GRID, case["quantiles"], case["eps"] * levels, case["bound"])
    assert _chi2_against(draws, unsplit) < 1e-9


def test_tree_levels_targets_and_records():
    assert [joint_levels(k) for k in range(1, 10)] == [1, 2, 2, 3, 3, 3, 3, 4, 4]
    records = joint_records("1.2", 9)
    assert len(records) == 4 and {r.epsilon for r in records} == {Fraction(3, 10)}
    assert all(r.kind == "permute_and_flip" and r.delta == 0 for r in records)
    with pytest.raises(PrivacyParameterError):
        joint_quantile_indices([0, 1], 2, quantiles=["0.5", "1/2"], epsilon=1)


# ------------------------------------------------------------------ privacy audit (M2)

R_AUDIT = 100_000
# Found by enumerating small datasets with _joint_law: the exact loss of TIGHT is
# 1.000 = eps (the proof's bound is attained); in SPLIT the person's two rows fall
# into the two different nodes of level 1 whenever the root splits at 2 or 3 (exact
# loss 0.82, the largest found for such persons).
TIGHT = dict(data=[1.5, 1.5, 1.5, 3.5], person=[9.0, 9.0])
SPLIT = dict(data=[3.5, 9.0, 9.0, 9.0], person=[1.5, 3.5])
POWER = dict(data=[0.0, 1.5, 1.5, 1.5, 2.5, 2.5, 4.5, 4.5, 9.0, 9.0], person=[3.5, 3.5])


def _audit_lb(stat, seeded, data, person) -> float:
    outputs = []
    for seed, rows in ((31, data), (32, data + person)):
        ranks, n = _counts(rows)
        draws = joint_quantile_indices(
            ranks,
            n,
            quantiles=QUARTILES,
            epsilon=1,
            contribution_bound=2,
            runs=R_AUDIT,
            rng=seeded(seed),
        )
        outputs.append(draws @ np.array([25, 5, 1]))  # tuple -> one index < 125
    return stat.audit_index_lower_bound(outputs[0], outputs[1], 125)


@pytest.mark.parametrize("case", [TIGHT, SPLIT], ids=["tight", "rows_in_two_nodes"])
def test_joint_audit_passes(case, stat, seeded):
    """LB <= eps = 1 for one person's L = 2 rows added; false failure 1e-6."""
    law_d = _joint_law(case["data"], GRID, QUARTILES, 1, 2)
    law_p = _joint_law(case["data"] + case["person"], GRID, QUARTILES, 1, 2)
    assert max(abs(math.log(law_d[t] / law_p[t])) for t in law_d) <= 1 + 1e-9
    assert _audit_lb(stat, seeded, **case) <= 1


def test_joint_audit_catches_unsplit_levels(monkeypatch, stat, seeded):
    """Power: every level at eps (charged eps / D) has true loss 1.77 > 1 on POWER."""
    monkeypatch.setattr(
        joint_module, "joint_level_budgets", lambda eps, k: (Fraction(eps),) * joint_levels(k)
    )
    assert _audit_lb(stat, seeded, **POWER) > 1


# ------------------------------------------------------------------ release and explanation


def test_release_draws_what_the_batch_draws_and_explains_itself(seeded):
    grid = candidate_grid(0, 100, 5)
    counter = RankCounter(grid)
    counter.add(np.linspace(3, 97, 987))
    qs = ["0.75", "0.25", "0.5"]
    result = release_joint_quantiles(
        counter.rank_counts(),
        counter.n,
        candidates=grid,
        quantiles=qs,
        epsilon="1.5",
        contribution_bound=2,
        rng=seeded(70),
    )
    batch = joint_quantile_indices(
        counter.rank_counts(),
        counter.n,
        quantiles=qs,
        epsilon="1.5",
        contribution_bound=2,
        rng=seeded(70),
    )
    d = result.to_dict()
    assert str(counter.n) not in json.dumps(d)
    assert d["mechanism"] == "joint_permute_and_flip" and d["levels"] == 2
    assert d["epsilon"] == "1.5" and d["delta"] == "0" and d["candidates"] == 21
    assert [p["quantile"] for p in d["quantiles"]] == ["0.25", "0.5", "0.75"]
    assert [p["epsilon"] for p in d["quantiles"]] == ["0.75"] * 3
    assert [p["l1_sensitivity"] for p in d["quantiles"]] == ["1", "1", "1"]  # q' = 1/2
    assert [p["index"] for p in d["quantiles"]] == batch[0].tolist()
    for part in d["quantiles"]:
        assert Fraction(part["value"]) == grid[part["index"]]
    for simultaneous in (False, True):
        assert quantile_rank_errors(
            d, confidence="0.9", simultaneous=simultaneous
        ) == joint_rank_error_bounds(
            epsilon="1.5",
            quantiles=["0.25", "0.5", "0.75"],
            contribution_bound=2,
            candidates=21,
            confidence="0.9",
            simultaneous=simultaneous,
        )


def test_root_node_is_a_plain_permute_and_flip(seeded):
    """With one quantile the recursion is one permute-and-flip over all candidates."""
    ranks, n = _counts(TIGHT["data"])
    got = joint_quantile_indices(ranks, n, quantiles=["0.5"], epsilon=1, runs=50, rng=seeded(5))
    utilities = np.array(list(quantile_utilities(ranks, n, "0.5")), dtype=np.int64)
    expected = permute_and_flip_indices(
        np.tile(utilities, (50, 1)),
        epsilon=1,
        sensitivity=quantile_scaled_sensitivity("0.5", 1),
        rng=seeded(5),
    )
    assert got[:, 0].tolist() == expected.tolist()


def test_joint_selection_needs_the_csprng(monkeypatch):
    """R1: with os.urandom patched to raise, a release raises."""

    def broken(n):
        raise OSError("urandom disabled by the test")

    monkeypatch.setattr(os, "urandom", broken)
    with pytest.raises(OSError, match="urandom disabled"):
        release_joint_quantiles(
            [0, 1, 2], 3, candidates=[1, 2, 3], quantiles=["0.25", "0.5"], epsilon=1
        )


# ------------------------------------------------------------------ rank-error bounds


def test_rank_bounds_reference_values(laws):
    """C2: quartiles, eps = 1 (levels 1/2), L = 1, m = 50, beta = 0.1. The root (q' = 1/2)
    alone on its path; each child (q' = 1/2, sensitivity 1/2) shares beta with the root
    and adds half the root's bound; simultaneous: beta / 3 for every node."""
    m, beta = 50, 0.1
    per = joint_rank_error_bounds(epsilon=1, quantiles=QUARTILES, candidates=m, confidence="0.9")
    root = laws.pf_tail(0.5, 0.5, m, beta)
    child = laws.pf_tail(0.5, 0.5, m, beta / 2) * 1.5
    assert per == pytest.approx([child, root, child], rel=1e-6)
    together = joint_rank_error_bounds(
        epsilon=1, quantiles=QUARTILES, candidates=m, confidence="0.9", simultaneous=True
    )
    root = laws.pf_tail(0.5, 0.5, m, beta / 3)
    assert together == pytest.approx([1.5 * root, root, 1.5 * root], rel=1e-6)
    alone = joint_rank_error_bounds(epsilon="0.3", quantiles=["0.1"], candidates=m, confidence=0.9)
    assert alone == [rank_error_bound(epsilon="0.3", quantile="0.1", candidates=m, confidence=0.9)]


def test_epsilon_for_a_target_rank_error_inverts_the_bounds():
    common = dict(quantiles=QUARTILES, contribution_bound=2, candidates=101, confidence="0.95")
    for simultaneous in (False, True):
        eps = joint_epsilon_for_rank_error(rank_error=40, simultaneous=simultaneous, **common)
        assert max(joint_rank_error_bounds(epsilon=eps, simultaneous=simultaneous, **common)) <= 40
        less = eps - Fraction(10) ** (decimal_exponent(eps) - 2)  # one unit of the 3rd digit
        assert max(joint_rank_error_bounds(epsilon=less, simultaneous=simultaneous, **common)) > 40


def _paths_resolution(ranks: np.ndarray, n: int, qs, draws: np.ndarray) -> np.ndarray:
    """P_i per draw: the path-weighted distance from each node's actual target rank to
    the nearest candidate rank (joint_quantile_tree's statement), computed from the
    draws with an independent walk of the tree."""
    qs = sorted(Fraction(q) for q in qs)
    out = np.zeros(draws.shape, dtype=np.float64)
    ranks_f = ranks.astype(np.float64)

    def walk(first, stop, lo, hi):
        if first >= stop:
            return
        mid = first + (stop - first) // 2
        q_lo = qs[lo] if lo is not None else Fraction(0)
        q_hi = qs[hi] if hi is not None else Fraction(1)
        w = float((qs[mid] - q_lo) / (q_hi - q_lo))
        base = ranks_f[draws[:, lo]] if lo is not None else np.zeros(draws.shape[0])
        top = ranks_f[draws[:, hi]] if hi is not None else np.full(draws.shape[0], float(n))
        target = base + w * (top - base)
        rho = np.abs(ranks_f[None, :] - target[:, None]).min(axis=1)
        out[:, mid] = rho
        if lo is not None:
            out[:, mid] += (1 - w) * out[:, lo]
        if hi is not None:
            out[:, mid] += w * out[:, hi]
        walk(first, mid, lo, mid)
        walk(mid + 1, stop, mid, hi)

    walk(0, len(qs), None, None)
    return out


CLUMPS = np.arange(10, 90, 10.0)  # values clump exactly at these candidates and just below
CLUMPED = np.concatenate([np.repeat(CLUMPS, 150), np.repeat(CLUMPS - 1e-9, 60), np.arange(320.0)])


@pytest.mark.parametrize("quantiles", [QUARTILES, tuple(f"0.{i}" for i in range(1, 10))])
def test_rank_bounds_hold_on_clumped_data(quantiles, seeded):
    """C1: n = 2,000 values clumped at and just below candidates of a 100-point grid (and
    320 over [0, 320), most beyond it), L = 2, eps = 1, R = 2,000 draws: each quantile's
    miss rate of t_i + P_i at 90 % is <= 10 % + 4.75 SE, and P[any miss] <= 10 % + 4.75 SE
    for the simultaneous t. Power: with min_j |r_j - q n| in place of P_i the first
    quartile misses in ~70 % of the draws (measured), so the propagation is needed."""
    ranks, n = _counts(CLUMPED, candidate_grid(0, 99, 1))
    runs = 2_000
    draws = joint_quantile_indices(
        ranks, n, quantiles=quantiles, epsilon=1, contribution_bound=2, runs=runs, rng=seeded(9)
    )
    qs = sorted(Fraction(q) for q in quantiles)
    targets = np.array([float(q) * n for q in qs])
    errors = np.abs(ranks[draws] - targets)
    slack = _paths_resolution(ranks, n, qs, draws) + 1e-9
    limit = 0.1 + Z * math.sqrt(0.1 * 0.9 / runs)
    common = dict(epsilon=1, quantiles=qs, contribution_bound=2, candidates=100, confidence="0.9")
    per = np.array(joint_rank_error_bounds(**common))
    assert (np.mean(errors > per + slack, axis=0) <= limit).all()
    together = np.array(joint_rank_error_bounds(**common, simultaneous=True))
    assert np.mean((errors > together + slack).any(axis=1)) <= limit
    if len(qs) == 3:
        plain = np.abs(ranks[:, None] - targets[None, :]).min(axis=0)
        assert np.mean(errors > per + plain, axis=0).max() > limit
