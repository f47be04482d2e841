"""Confidence intervals for quantiles, in the data's units, on a public grid.

Sources: the order-statistic intervals of Drechsler, Globus-Harris, McMillan,
Sarathy, Smith, "Nonparametric differentially private confidence intervals for
the median" (J. Survey Stat. Methodol. 2022; arXiv:2106.10333), whose ends are
private selections aimed at ranks shifted away from q n so that each end errs
on the safe side with high probability; adapted here to a PUBLIC grid
c_1 < ... < c_m (dpportal.privacy.quantile_grids) with exact permute-and-flip
(McKenna & Sheldon, NeurIPS 2020; dpportal.privacy.permute_flip) for each end.

What is covered. The data are n values clamped to [c_1, c_m], sorted
x_(1) <= ... <= x_(n). For q in [0, 1] let a = max(1, floor(q n)) and
b = min(n, ceil(q n) + 1). The interval [c_L, c_U] "contains the q-quantile"
when c_L <= x_(a) and x_(b) <= c_U: it then holds every value between those
order statistics, so both the inverse-CDF quantile and the interpolated one
(DuckDB quantile_cont, x_(1 + (n - 1) q) interpolated) are inside.
The guarantee: for EVERY dataset with n >= 1, P(contains) >= confidence, the
probability being over the mechanism's randomness only.

Ranks. r_j = #{x < c_j} of the clamped values; r_1 = 0 (every clamped value is
>= c_1) and for j >= 2 it equals the unclamped count, so the caller's
RankCounter counts serve once r_1 is set to 0. Then
    c_j <= x_(a)  iff  r_j <= a - 1,            (lower end j is good)
    x_(b) <= c_j  if   r_j >= b, or j = m       (upper end j is good; c_m >= every value).

Utilities (one-sided "cell distances"; dist(t, [lo, hi]) = max(lo - t, 0, t - hi)).
With s >= 0 an integer shift (below):
    lower end: tau_L = q n - 1 - s,  cell_j = [r_j, r_{j+1}], first cell (-inf, r_2],
               last cell [r_m, +inf);                       u_j = -dist(tau_L, cell_j);
    upper end: tau_U = q n + 1 + s,  cell_j = [r_{j-1}, r_j], first cell (-inf, r_1],
               last cell [r_{m-1}, +inf);                   u_j = -dist(tau_U, cell_j).
The cells of each end cover the whole line, so u* = max_j u_j = 0 for every dataset:
a coarse grid costs nothing in the utility, only in the width it shows.

Validity (each end misses with probability <= beta / 2, beta = 1 - confidence).
Lower: a bad end has r_j >= a. Since a >= floor(q n) > q n - 1 = tau_L + s, and
j >= 2 (r_1 = 0 < a), dist(tau_L, cell_j) >= r_j - tau_L > s, so u_j < u* - s.
Upper: a bad end has j < m and r_j <= b - 1 <= ceil(q n) < q n + 1 = tau_U - s,
so dist(tau_U, cell_j) >= tau_U - r_j > s and u_j < u* - s. In both cases every
bad candidate's acceptance probability is below p = exp(-eps_end s / (2 Delta)),
and permute-and-flip selects one with probability at most
worst_case_miss(p, m) (its exact worst case over all utility vectors,
permute_flip.worst_case_miss); `interval_shift` takes the smallest integer s
with worst_case_miss(p, m) <= beta / 2. By the union bound over the two ends the
interval misses with probability <= beta. (Drechsler et al. shift by the
exponential mechanism's union bound; the exact permute-and-flip tail is about
half as large, so s is smaller.) Releasing [min(c_L, c_U), max(c_L, c_U)] is
post-processing, and it never loses coverage: when both ends are good,
c_L <= x_(a) <= x_(b) <= c_U already.

Sensitivity (unbounded DP, a person is at most L rows). Write v_j = r_j - q n.
Adding or removing a person's rows moves each v_j by sum_i (1[y_i < c_j] - q)
(each term in [-q, 1 - q], for the clamped y_i; for j = 1 every term is -q), so
by at most max(q, 1 - q) L in absolute value. Each u_j is
-max(v_j + 1 + s, 0, -v_{j+1} - 1 - s) (lower; the upper end likewise, with
v_{j-1}, v_j), a maximum of 1-Lipschitz functions of the v's, hence

    Delta = max(q, 1 - q) L ranks,

the point estimate's (dpportal.privacy.quantiles); tests/privacy check it by
brute force. For q = p/d the utilities scaled by d are integers (s is an
integer): U_j = -max(d r_j - T, 0, T - d r_{j+1}) with T = p n - d (1 + s), and
Delta_U = max(p, d - p) L.

Privacy. Each end is one permute-and-flip selection, eps_end-DP (MS20 Thm 1);
the 2k ends of k quantiles compose sequentially (Dwork & Roth 2014, Thm 3.16):
eps = 2 k eps_end, delta = 0. Only the selected candidates are released; s is
a function of public parameters (eps_end, q, L, m, confidence) only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import (
    check_cells,
    check_confidence,
    check_contribution_bound,
    check_epsilon,
    exact_str,
)
from dpportal.privacy.permute_flip import permute_and_flip, utility_error_bound, worst_case_miss
from dpportal.privacy.quantile_grids import check_grid
from dpportal.privacy.quantiles import (
    check_quantile,
    quantile_scaled_sensitivity,
    quantile_sensitivity,
)
from dpportal.privacy.rng import RandomSource

__all__ = [
    "LOWER",
    "UPPER",
    "interval_shift",
    "interval_utilities",
    "QuantileInterval",
    "QuantileIntervals",
    "release_quantile_intervals",
    "interval_records",
    "planned_interval_rank_reach",
]

LOWER = "lower"
UPPER = "upper"


def _end_miss(epsilon_end: Fraction, sensitivity: Fraction, shift: int, m: int) -> float:
    """worst_case_miss at p = exp(-eps_end s / (2 Delta)): one end's largest miss rate."""
    return worst_case_miss(math.exp(-float(epsilon_end * shift / (2 * sensitivity))), m)


def interval_shift(
    *,
    epsilon_end: object,
    quantile: object,
    contribution_bound: object,
    candidates: object,
    confidence: object,
) -> int:
    """The integer shift s (ranks) of both ends: the smallest integer s with
    worst_case_miss(exp(-eps_end s / (2 Delta)), m) <= (1 - confidence) / 2,
    Delta = max(q, 1 - q) L (module docstring). Public parameters only.
    """
    eps = check_epsilon(epsilon_end)
    m = check_cells(candidates, "candidates")
    half_beta = float(1 - check_confidence(confidence)) / 2
    sens = quantile_sensitivity(quantile, contribution_bound)
    t = utility_error_bound(epsilon=eps, sensitivity=sens, candidates=m, beta=half_beta)
    s = max(0, math.ceil(t))
    while _end_miss(eps, sens, s, m) > half_beta:  # guards the float bisection
        s += 1
    while s > 0 and _end_miss(eps, sens, s - 1, m) <= half_beta:
        s -= 1
    return s


def _clamped_ranks(rank_counts: object, n: int, m: int) -> list[int]:
    ranks = [int(r) for r in np.asarray(rank_counts).reshape(-1).tolist()]
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError("n must be a non-negative integer")
    if len(ranks) != m:
        raise ValueError("one rank count per candidate is needed")
    if ranks[0] < 0 or ranks[-1] > n or any(a > b for a, b in zip(ranks, ranks[1:], strict=False)):
        raise ValueError("rank counts must be non-decreasing integers in [0, n]")
    ranks[0] = 0  # clamping: no value lies below c_1
    return ranks


def interval_utilities(
    rank_counts: object, n: int, *, quantile: object, shift: int, side: str
) -> np.ndarray:
    """Scaled integer utilities U_j = d u_j of one end (object array of Python ints).

    rank_counts[j] = #{x < c_j} over the unclamped values (RankCounter); the
    first is set to 0 here (clamping). side is LOWER or UPPER; shift is s.
    Sensitivity: quantile_scaled_sensitivity(q, L). The maximum is always 0.
    """
    q = check_quantile(quantile)
    if isinstance(shift, bool) or int(shift) != shift or shift < 0:
        raise ValueError("shift must be a non-negative integer")
    m = np.asarray(rank_counts).size
    if m == 0:
        raise PrivacyParameterError(gettext_noop("the candidate grid must not be empty"))
    r = _clamped_ranks(rank_counts, n, m)
    p, d = q.numerator, q.denominator
    inf = None
    if side == LOWER:
        target = p * int(n) - d * (1 + int(shift))
        cells = [(r[j], r[j + 1] if j + 1 < m else inf) for j in range(m)]
        cells[0] = (inf, cells[0][1])
    elif side == UPPER:
        target = p * int(n) + d * (1 + int(shift))
        cells = [(r[j - 1] if j > 0 else inf, r[j]) for j in range(m)]
        cells[-1] = (cells[-1][0], inf)
    else:
        raise ValueError("side must be 'lower' or 'upper'")
    out = []
    for lo, hi in cells:
        below = d * lo - target if lo is not None else 0
        above = target - d * hi if hi is not None else 0
        out.append(-max(below, 0, above))
    return np.array(out, dtype=object)


@dataclass(frozen=True)
class QuantileInterval:
    """One quantile's interval [low, high] on the grid, with its ends' indices and shift."""

    quantile: Fraction
    shift: int
    low_index: int
    low: Fraction
    high_index: int
    high: Fraction

    def to_dict(self) -> dict[str, Any]:
        """The released ends (exact strings), without the shift (stated once per release)."""
        return {
            "quantile": exact_str(self.quantile),
            "low_index": self.low_index,
            "low": exact_str(self.low),
            "high_index": self.high_index,
            "high": exact_str(self.high),
        }


@dataclass(frozen=True)
class QuantileIntervals:
    """Intervals of k quantiles of one column: 2k selections, eps = 2 k eps_end, delta = 0."""

    intervals: tuple[QuantileInterval, ...]
    epsilon: Fraction
    epsilon_per_end: Fraction
    confidence: Fraction
    contribution_bound: int
    candidates: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable, exact: public parameters and the released ends only."""
        return {
            "statistic": "quantile_intervals",
            "mechanism": "permute_and_flip_interval",
            "unit": "data",
            "confidence": exact_str(self.confidence),
            "epsilon": exact_str(self.epsilon),
            "delta": "0",
            "epsilon_per_end": exact_str(self.epsilon_per_end),
            "contribution_bound": self.contribution_bound,
            "candidates": self.candidates,
            "shift": [part.shift for part in self.intervals],
            "ends": [part.to_dict() for part in self.intervals],
        }


def release_quantile_intervals(
    rank_counts: object,
    n: int,
    *,
    candidates: Sequence[object],
    quantiles: Sequence[object],
    epsilon: object,
    contribution_bound: object = 1,
    confidence: object,
    rng: RandomSource | None = None,
) -> QuantileIntervals:
    """Confidence intervals [low, high] on the grid for quantiles q_1..q_k of one column.

    rank_counts[j] = #{x < candidates[j]} and n = #{x} over the same
    contribution-bounded rows (RankCounter). epsilon is the TOTAL for all 2k
    ends (eps / (2k) each); the release is eps-DP with delta = 0, and each
    interval holds the clamped data's q-quantile with probability >= confidence
    for every dataset (module docstring). Neither ranks nor n are returned.
    """
    grid = check_grid(candidates)
    bound = check_contribution_bound(contribution_bound)
    level = check_confidence(confidence)
    qs = tuple(check_quantile(q) for q in quantiles)
    if not qs:
        raise PrivacyParameterError(gettext_noop("name at least one quantile"))
    total = check_epsilon(epsilon)
    eps_end = total / (2 * len(qs))
    ranks = _clamped_ranks(rank_counts, n, len(grid))
    parts = []
    for q in qs:
        s = interval_shift(
            epsilon_end=eps_end,
            quantile=q,
            contribution_bound=bound,
            candidates=len(grid),
            confidence=level,
        )
        sens = quantile_scaled_sensitivity(q, bound)
        ends = []
        for side in (LOWER, UPPER):
            utilities = interval_utilities(ranks, n, quantile=q, shift=s, side=side)
            ends.append(permute_and_flip(utilities, epsilon=eps_end, sensitivity=sens, rng=rng))
        low_index, high_index = min(ends), max(ends)  # post-processing (module docstring)
        parts.append(
            QuantileInterval(q, s, low_index, grid[low_index], high_index, grid[high_index])
        )
    return QuantileIntervals(tuple(parts), total, eps_end, level, bound, len(grid))


def interval_records(epsilon: object, k: int) -> list[MechanismRecord]:
    """The ledger records of k quantiles' intervals at total eps: 2k permute-and-flip
    selections at eps / (2k) each (pure DP)."""
    total = check_epsilon(epsilon)
    count = check_cells(k, "number of quantiles")
    eps_end = total / (2 * count)
    return [MechanismRecord.permute_and_flip(epsilon=eps_end) for _ in range(2 * count)]


def planned_interval_rank_reach(
    *,
    epsilon: object,
    quantiles: Sequence[object],
    contribution_bound: object = 1,
    candidates: object,
    confidence: object,
) -> list[float]:
    """A planning figure per quantile, in ranks, from public parameters only:
    reach = 1 + s + t_half, where s = interval_shift(...) and t_half =
    utility_error_bound(..., beta=1/2) is permute-and-flip's worst-case MEDIAN
    utility error.

    Meaning: for every dataset, with probability >= 1/2, the lower end's cell
    reaches rank q n - reach (its upper neighbour has at least that many values
    below it), and the upper end's cell reaches q n + reach. So on a grid finer
    than the data the interval typically spans at most about 2 reach ranks; a
    coarser grid adds up to one grid cell at each end. It is a conservative
    median (real data are far from permute-and-flip's worst case), never a
    guarantee about the true n, which is not used.
    """
    qs = [check_quantile(q) for q in quantiles]
    if not qs:
        raise PrivacyParameterError(gettext_noop("name at least one quantile"))
    eps_end = check_epsilon(epsilon) / (2 * len(qs))
    m = check_cells(candidates, "candidates")
    out = []
    for q in qs:
        s = interval_shift(
            epsilon_end=eps_end,
            quantile=q,
            contribution_bound=contribution_bound,
            candidates=m,
            confidence=confidence,
        )
        sens = quantile_sensitivity(q, contribution_bound)
        half = utility_error_bound(epsilon=eps_end, sensitivity=sens, candidates=m, beta=0.5)
        out.append(1 + s + half)
    return out
