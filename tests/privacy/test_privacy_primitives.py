"""S4: the exact integer primitives (uniform U(n), Bernoulli(a/b), Bernoulli(exp(-g))).

Wilson intervals at z = 6 over N = 1e6 draws: a correct primitive falls outside
with probability ~2e-9 per assertion. Chi-square at p < 1e-6 for uniformity.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpportal.privacy.exact import (
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_one,
    geometric_exp_one,
    uniform_below,
)
from dpportal.privacy.rng import SystemRandom

N = 1_000_000


def _ratio_array(num: int, size: int) -> np.ndarray:
    if num < 2**63:
        return np.full(size, num, dtype=np.int64)
    return np.array([num] * size, dtype=object)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, 3),
        (2, 7),
        (999_999, 1_000_000),
        (2**63 + 5, 2**64 - 3),  # near the top of the one-word range
        (10**30, 3 * 10**30 + 1),  # beyond 2**64: multi-word rejection
        (0, 5),
        (5, 5),
    ],
)
def test_bernoulli_rational(a, b, seeded, stat):
    """Bernoulli(a/b) frequency inside the z = 6 Wilson interval (false failure ~2e-9)."""
    hits = int(bernoulli(_ratio_array(a, N), b, seeded(a % 1000)).sum())
    p = a / b
    if p in (0.0, 1.0):
        assert hits == p * N
        return
    lo, hi = stat.wilson_interval(hits, N)
    assert lo <= p <= hi


@pytest.mark.parametrize(
    "g",
    [
        Fraction(0),
        Fraction(1, 2),
        Fraction(1),
        Fraction(7, 3),
        Fraction(10),
        Fraction(10**40 + 1, 10**40),
        Fraction(2**70, 3 * 2**68 + 1),
    ],
)
def test_bernoulli_exp(g, seeded, stat):
    """Bernoulli(exp(-g)) frequency inside the z = 6 Wilson interval (false failure ~2e-9)."""
    hits = int(bernoulli_exp(_ratio_array(g.numerator, N), g.denominator, seeded(7)).sum())
    p = math.exp(-float(g))
    if g == 0:
        assert hits == N
        return
    lo, hi = stat.wilson_interval(hits, N)
    assert lo <= p <= hi


def test_bernoulli_exp_one_and_geometric_on_the_csprng(stat):
    """exp(-1) and the geometric count's law on the real CSPRNG (false failure <= 1e-6)."""
    hits = int(bernoulli_exp_one(N, SystemRandom()).sum())
    lo, hi = stat.wilson_interval(hits, N)
    assert lo <= math.exp(-1) <= hi
    v = geometric_exp_one(N, SystemRandom())
    counts = np.bincount(v, minlength=12)[:12]
    q = math.exp(-1)
    expected = np.array([(1 - q) * q**k for k in range(12)]) * N
    observed = np.append(counts[:11], N - counts[:11].sum())
    expected = np.append(expected[:11], N - expected[:11].sum())
    assert stats.chisquare(observed, expected).pvalue >= 1e-6


@pytest.mark.parametrize("n", [3, 10, 2**63 + 1, 3 * 2**64 + 1, 2**130 - 1, 2**40])
def test_uniform_below_is_uniform(n, seeded):
    """U(n) in 16 equal-probability blocks: chi-square p >= 1e-6 (false failure 1e-6).

    n = 2**63 + 1 rejects about half of all words: a modulo shortcut would be
    visibly biased there. Blocks: floor(16 u / n) (u mod 16 for small n)."""
    u = uniform_below(n, 400_000, seeded(n % 97))
    values = [int(x) for x in u] if u.dtype == object else u
    assert all(0 <= int(x) < n for x in values[:1000])
    if n <= 16:
        blocks = np.asarray(values, dtype=np.int64)
        probs = np.full(n, 1 / n)
    else:
        blocks = np.array([(int(x) * 16) // n for x in values], dtype=np.int64)
        sizes = [((k + 1) * n + 15) // 16 - (k * n + 15) // 16 for k in range(16)]
        probs = np.array([float(Fraction(size, n)) for size in sizes])
    observed = np.bincount(blocks, minlength=probs.size)
    assert stats.chisquare(observed, probs * blocks.size).pvalue >= 1e-6
