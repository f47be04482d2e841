"""Rows per person: the public buckets, the trade-off table and the suggested L."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.accuracy import discrete_laplace_halfwidth
from dpportal.privacy.mechanisms import release_counts
from dpportal.privacy.rng import SeededTestRandom
from dpportal.privacy.rows_per_person import (
    Bucket,
    bucket_index,
    buckets,
    limit_tradeoff,
    share_range,
    suggest_limit,
)


def _true_share(rows_per_person: np.ndarray, limit: int) -> Fraction:
    return Fraction(int(np.minimum(rows_per_person, limit).sum()), int(rows_per_person.sum()))


def _counts(rows_per_person: np.ndarray, cap: int) -> list[int]:
    out = [0] * len(buckets(cap))
    for r in rows_per_person.tolist():
        out[bucket_index(int(r), cap)] += 1
    return out


def test_buckets_are_exact_to_16_then_geometric_to_the_cap():
    got = buckets(100)
    assert [(b.low, b.high) for b in got[:16]] == [(k, k) for k in range(1, 17)]
    # round(16 * 2**(j/4)): 19.03, 22.63, 26.91, 32, 38.05, 45.25, 53.82, 64, 76.1, 90.5
    assert [(b.low, b.high) for b in got[16:]] == [
        (17, 19), (20, 23), (24, 27), (28, 32), (33, 38), (39, 45), (46, 54),
        (55, 64), (65, 76), (77, 91), (92, 100), (101, None),
    ]  # fmt: skip


@pytest.mark.parametrize("cap", [1, 2, 15, 16, 17, 19, 20, 1000, 100000])
def test_buckets_partition_the_row_counts(cap):
    got = buckets(cap)
    assert got[0].low == 1 and got[-1] == Bucket(cap + 1, None)
    for a, b in zip(got, got[1:], strict=False):
        assert a.high is not None and b.low == a.high + 1 and a.low <= a.high
    # a geometric step never shrinks below the previous one (distinct integer edges)
    widths = [b.high - b.low + 1 for b in got[:-1]]
    assert all(w >= 1 for w in widths)


def test_bucket_count_grows_with_the_log_of_the_cap():
    assert len(buckets(1000)) == 41
    # 16 exact, round(16 * 2**(j/4)) for j = 1..50 (below 100000), 100000, more than it
    assert len(buckets(100000)) == 16 + 50 + 1 + 1


def test_buckets_refuse_a_bad_cap():
    for cap in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            buckets(cap)


def test_tradeoff_exact_small_example():
    # cap 4: buckets [1], [2], [3], [4], 5+ (counted as 4 rows: a floor)
    b = buckets(4)
    counts = [10, 5, 0, 2, 0]  # total = 10 + 10 + 0 + 8 = 28 rows
    rows = limit_tradeoff(counts, b, 0)
    assert [r.limit for r in rows] == [1, 2, 3, 4]
    assert [r.share for r in rows] == [
        Fraction(17, 28),  # 10 + 5 + 2
        Fraction(24, 28),  # 10 + 10 + 4
        Fraction(26, 28),  # 10 + 10 + 6
        Fraction(1),
    ]
    assert all(r.share_low == r.share == r.share_high for r in rows)
    assert [r.noise_factor for r in rows] == [1, 2, 3, 4]
    assert suggest_limit(rows, Fraction(95, 100)).limit == 4
    assert suggest_limit(rows, Fraction(9, 10)).limit == 3
    assert suggest_limit(rows, Fraction(1, 2)).limit == 1


def test_tradeoff_in_a_wide_bucket_uses_its_low_end_for_kept_and_high_for_total():
    b = buckets(20)  # ..., [16], [17, 19], [20], 21+
    counts = [0] * len(b)
    counts[16] = 3  # three persons with 17 to 19 rows
    rows = limit_tradeoff(counts, b, 0)
    by_limit = {r.limit: r.share for r in rows}
    assert by_limit[17] == Fraction(17, 19)  # kept >= 17 each, total <= 19 each
    assert by_limit[20] == Fraction(17, 19)  # the low end, whatever L above it
    assert by_limit[5] == Fraction(5, 19)


def test_range_moves_every_count_the_worst_way_and_clamps_at_zero():
    b = buckets(2)  # [1], [2], 3+ (counted as 2)
    rows = limit_tradeoff([10, 10, -3], b, 2)
    (one, two) = rows
    # L = 1: kept = c1 + c2 + c3, total = c1 + 2 c2 + 2 c3; lowest: c1 at 8, c2 and c3 up
    assert one.share == Fraction(20, 30)
    assert one.share_low == Fraction(8 + 12 + 0, 8 + 24 + 0)
    assert one.share_high == Fraction(12 + 8, 12 + 16)
    assert two.share_low == two.share_high == 1


def test_share_range_brute_force_agrees():
    rng = np.random.default_rng(3)
    for _ in range(200):
        k = int(rng.integers(1, 6))
        counts = [Fraction(int(x)) for x in rng.integers(-3, 12, k)]
        weights = []
        for _ in range(k):
            t = int(rng.integers(1, 9))
            weights.append((int(rng.integers(1, t + 1)), t))
        h = Fraction(int(rng.integers(0, 5)))
        corners = []
        for mask in range(1 << k):
            c = [max(Fraction(0), x + h if mask >> i & 1 else x - h) for i, x in enumerate(counts)]
            total = sum(ci * t for ci, (_, t) in zip(c, weights, strict=True))
            if total > 0:
                corners.append(sum(ci * a for ci, (a, _) in zip(c, weights, strict=True)) / total)
        low, high = share_range(counts, weights, h)
        assert (low, high) == ((min(corners), max(corners)) if corners else (0, 1))


def test_suggestion_keeps_at_least_the_share_without_noise():
    rng = np.random.default_rng(11)
    for _ in range(50):
        rpp = np.minimum(rng.zipf(1.7, int(rng.integers(50, 400))), 900)
        rows = limit_tradeoff(_counts(rpp, 1000), buckets(1000), 0)
        for target in (Fraction(1, 2), Fraction(9, 10), Fraction(95, 100), Fraction(99, 100)):
            pick = suggest_limit(rows, target)
            assert _true_share(rpp, pick.limit) >= pick.share  # never overstated
            if pick.share < target:  # wide buckets: low/high caps the estimate below 1
                assert pick is rows[-1] and all(r.share < target for r in rows)
                continue
            smaller = [r for r in rows if r.limit < pick.limit]
            assert all(r.share < target for r in smaller)


def test_suggest_refuses_a_share_outside_0_1():
    rows = limit_tradeoff([1, 0], buckets(1), 0)
    for share in (0, Fraction(3, 2), -1):
        with pytest.raises(ValueError):
            suggest_limit(rows, share)


def test_with_noise_the_true_share_at_the_suggestion_is_within_the_stated_range():
    """A long-tailed dataset (2,000 persons, Zipf rows, none past the cap), noise at
    epsilon 1, the range from the simultaneous half-width at confidence 1 - 1e-9. The
    range holds whenever every count is within its half-width, which fails with
    probability <= 1e-9 per run (union bound over the buckets), so the 200 seeded runs
    fail falsely with probability <= 2e-7. Asserted: true share >= the range's low end
    (which implies true share >= target minus (estimate - low))."""
    data = np.random.default_rng(5)
    rpp = np.minimum(data.zipf(1.6, 2000), 1000)
    cap = 1000
    truth = _counts(rpp, cap)
    b = buckets(cap)
    confidence = Fraction(1) - Fraction(1, 10**9)
    h = discrete_laplace_halfwidth(Fraction(1), confidence, len(b))
    target = Fraction(95, 100)
    widths = []
    for seed in range(200):
        noisy = release_counts(
            np.array(truth), mechanism="laplace", epsilon=1, rng=SeededTestRandom(seed)
        ).values
        rows = limit_tradeoff(list(noisy), b, h)
        pick = suggest_limit(rows, target)
        true = _true_share(rpp, pick.limit)
        assert true >= pick.share_low
        assert true >= target - (pick.share - pick.share_low)
        widths.append(float(pick.share_high - pick.share_low))
    assert max(widths) < 0.2  # the range says something at this size
