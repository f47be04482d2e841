"""How many rows each person has: public buckets, and the per-person limit L they suggest.

The statistic. With a person unit (an ID column), each person p has r_p >= 1 rows.
The statistic counts persons per PUBLIC bucket of r_p: 1, 2, ..., 16 exactly, then
geometric edges of ratio 2**(1/4) rounded to distinct integers up to a public cap,
then "more than cap" (`buckets`). It counts ALL of a person's rows, before any
per-person limit L is applied: it describes the raw distribution that L is chosen from.

Privacy (unbounded DP, the unit a person). Adding or removing one person p adds or
removes r_p rows, all of them p's own: no other person's row count changes, so no
other person changes bucket. p lands in exactly one bucket (the buckets partition
the integers >= 1), whatever L is, so exactly one count moves, by 1. The L1 (and L2)
sensitivity of the vector of counts is therefore 1, and discrete Laplace noise of
scale 1/epsilon on every count is pure epsilon-DP (Dwork & Roth 2014, Thm 3.6; the
discrete law: Canonne, Kamath, Steinke 2020). L does not multiply this sensitivity:
the bound only limits which rows other statistics read, and a person's bucket is
decided by the person's rows alone. Rows without an ID belong to no person and are
not counted.

The trade-off (`limit_tradeoff`, `suggest_limit`) is post-processing of the noisy
counts and public constants only: it costs nothing more.

For a candidate L, the share of rows kept is kept(L) / total with
    kept(L) = sum_b c_b min(low_b, L),    total = sum_b c_b high_b
over the counts c_b clamped at 0. A person in bucket b has between low_b and high_b
rows, so keeps at least min(low_b, L) of them, and has at most high_b: from the
true counts the estimated share never exceeds the true share. The last bucket
("more than cap") has no upper end; it is counted as cap rows in both sums, so
the total is then a floor and the share may be overstated for those persons: the
surfaces say so. The range states the noise: every count moved by the half-width h
in the direction that lowers (raises) the share most, clamped at 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isqrt

__all__ = [
    "DEFAULT_CAP",
    "EXACT_UP_TO",
    "Bucket",
    "Row",
    "bucket_index",
    "buckets",
    "limit_tradeoff",
    "share_range",
    "suggest_limit",
]

#: buckets 1, 2, ..., EXACT_UP_TO hold one row count each
EXACT_UP_TO = 16
#: the default "most rows per person to resolve"
DEFAULT_CAP = 1000


@dataclass(frozen=True)
class Bucket:
    """Persons with low <= rows <= high; high None for "more than cap" (low = cap + 1)."""

    low: int
    high: int | None

    @property
    def open(self) -> bool:
        return self.high is None


def _nearest_geometric(j: int) -> int:
    """round(16 * 2**(j/4)) exactly: the integer nearest x with x**4 = 16**4 * 2**j.

    n = floor(x) is the integer 4th root of N = 65536 * 2**j; x rounds up when
    x >= n + 1/2, i.e. 16 N >= (2n + 1)**4 (x is irrational for j not divisible
    by 4, so no tie is ever met).
    """
    big = 65536 << j
    n = isqrt(isqrt(big))
    while (n + 1) ** 4 <= big:
        n += 1
    while n**4 > big:
        n -= 1
    return n + 1 if 16 * big >= (2 * n + 1) ** 4 else n


def buckets(cap: int) -> list[Bucket]:
    """The public buckets for a cap (the most rows per person to resolve, >= 1).

    [1,1], [2,2], ..., [16,16] (only up to cap), then (e_{j-1}, e_j] for the distinct
    integers e_j = round(16 * 2**(j/4)) below cap, then (e_last, cap], then
    [cap + 1, None) "more than cap". The buckets partition the integers >= 1.
    """
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError("cap must be an integer >= 1")
    out = [Bucket(k, k) for k in range(1, min(cap, EXACT_UP_TO) + 1)]
    previous = min(cap, EXACT_UP_TO)
    j = 1
    while previous < cap:
        edge = min(_nearest_geometric(j), cap)
        j += 1
        if edge > previous:
            out.append(Bucket(previous + 1, edge))
            previous = edge
    out.append(Bucket(cap + 1, None))
    return out


def bucket_index(rows: int, cap: int) -> int:
    """The index in `buckets(cap)` of a person with `rows` rows (for the numpy oracle)."""
    for i, b in enumerate(buckets(cap)):
        if rows >= b.low and (b.high is None or rows <= b.high):
            return i
    raise ValueError("rows must be >= 1")


@dataclass(frozen=True)
class Row:
    """One candidate L: the estimated share of rows kept, its range, the noise factor.

    share: kept(L)/total from the noisy counts clamped at 0 (None when they sum to no
    row); share_low/share_high: the range with every count moved by the half-width;
    noise_factor: the noise a count or a sum gets at this L relative to L = 1 (= L:
    sensitivities grow linearly in L).
    """

    limit: int
    share: Fraction | None
    share_low: Fraction
    share_high: Fraction
    noise_factor: int


def _weights(bucket_list: list[Bucket], cap: int, limit: int) -> list[tuple[int, int]]:
    """(rows kept at least, rows at most) per bucket; the open bucket counts as cap rows."""
    out = []
    for b in bucket_list:
        high = cap if b.high is None else b.high
        low = cap if b.high is None else b.low
        out.append((min(low, limit), high))
    return out


def _cap_of(bucket_list: list[Bucket]) -> int:
    last = bucket_list[-1]
    if last.high is not None:
        raise ValueError("the last bucket must be 'more than cap'")
    return last.low - 1


def _share(counts: list[Fraction], weights: list[tuple[int, int]]) -> Fraction | None:
    total = sum((c * t for c, (_, t) in zip(counts, weights, strict=True)), Fraction(0))
    if total <= 0:
        return None
    kept = sum((c * a for c, (a, _) in zip(counts, weights, strict=True)), Fraction(0))
    return kept / total


def share_range(
    counts: list[Fraction], weights: list[tuple[int, int]], halfwidth: Fraction
) -> tuple[Fraction, Fraction]:
    """The least and greatest kept/total with each count anywhere in
    [max(0, c - h), max(0, c + h)].

    A ratio of two linear functions over a box is extreme at a corner; moving one
    count up lowers the ratio exactly when its own a_b/t_b is below the ratio. So the
    minimum puts the buckets of the k lowest a_b/t_b at their top, the rest at their
    bottom, for some k (the maximum: the k highest at their top); every k is tried.
    Corners with no row at all are skipped (0 and 1 when every corner is one).
    """
    h = Fraction(halfwidth)
    low_c = [max(Fraction(0), c - h) for c in counts]
    high_c = [max(Fraction(0), c + h) for c in counts]
    order = sorted(range(len(counts)), key=lambda i: Fraction(weights[i][0], weights[i][1]))
    base_kept = sum((c * a for c, (a, _) in zip(low_c, weights, strict=True)), Fraction(0))
    base_total = sum((c * t for c, (_, t) in zip(low_c, weights, strict=True)), Fraction(0))
    ends: list[Fraction] = []
    for lowest, direction in ((True, order), (False, order[::-1])):
        kept, total = base_kept, base_total
        found: list[Fraction] = [kept / total] if total > 0 else []
        for i in direction:  # the corner with one more bucket at its top
            step = high_c[i] - low_c[i]
            kept += step * weights[i][0]
            total += step * weights[i][1]
            if total > 0:
                found.append(kept / total)
        if found:
            ends.append(min(found) if lowest else max(found))
        else:
            ends.append(Fraction(0) if lowest else Fraction(1))
    return ends[0], ends[1]


def limit_tradeoff(
    noisy_counts: list[int] | list[Fraction],
    bucket_list: list[Bucket],
    halfwidth: object,
) -> list[Row]:
    """For each candidate L (each bounded bucket's low end): the share of rows kept.

    noisy_counts: one per bucket of `bucket_list` (`buckets(cap)`); halfwidth: the
    noise's half-width in persons (use the simultaneous one, for all buckets at once,
    so that the range holds with the stated confidence). Post-processing only.
    """
    if len(noisy_counts) != len(bucket_list):
        raise ValueError("one count per bucket")
    cap = _cap_of(bucket_list)
    clamped = [max(Fraction(0), Fraction(c)) for c in noisy_counts]
    h = Fraction(str(halfwidth)) if isinstance(halfwidth, float) else Fraction(halfwidth)
    if h < 0:
        raise ValueError("halfwidth must be >= 0")
    rows = []
    for b in bucket_list:
        if b.high is None:
            continue
        weights = _weights(bucket_list, cap, b.low)
        low, high = share_range([Fraction(c) for c in noisy_counts], weights, h)
        rows.append(
            Row(
                limit=b.low,
                share=_share(clamped, weights),
                share_low=low,
                share_high=high,
                noise_factor=b.low,
            )
        )
    return rows


def suggest_limit(rows: list[Row], share: object) -> Row:
    """The smallest L whose estimated share is >= `share` (a fraction in (0, 1]);
    the largest candidate when none reaches it."""
    target = Fraction(str(share)) if isinstance(share, float) else Fraction(share)
    if not 0 < target <= 1:
        raise ValueError("share must be in (0, 1]")
    if not rows:
        raise ValueError("no candidate")
    for row in rows:
        if row.share is not None and row.share >= target:
            return row
    return rows[-1]
