"""Private bounds for a numeric column whose range nobody may look up: AboveThreshold
walking outward on a geometric grid (Durfee, "Unbounded differentially private quantile
and maximum estimation", NeurIPS 2023).

The search. From a public start point c (a value the owner knows lies inside the range
without looking at the data), the upper search visits u_i = c + s (r^i - 1), i = 0, 1, ...
(s the first step's unit, r > 1 the ratio: steps grow geometrically, so a range of any
magnitude is reached in O(log) steps) and stops at the first point beyond which at most
about k values lie. The lower search is its mirror image, l_i = c - s (r^i - 1). Both stop
at a public limit |t - c| <= limit (MAX_STEPS points per side at most).

The mechanism (one search, epsilon_end). Queries q_i = -f_i with f_i = #{x > u_i} (upper)
or #{x <= l_i} (lower), threshold T = -k; noise rho ~ DLap(b) once, nu_i ~ DLap(b) per
query, b = 2 Delta / epsilon_end with Delta = L (one person's L rows); output the first i
with q_i + nu_i >= T + rho, i.e. k - f_i + nu_i >= rho, or the limit when none does.

Privacy (AboveThreshold with monotone queries; Lyu, Su, Li, "Understanding the sparse
vector technique", VLDB 2017, Thm 4 with c = 1, ported to discrete noise). Adding one
person moves every f_i by a value in [0, L], all in the same direction, so the queries of
neighbouring datasets satisfy q'_i = q_i + s_i with every s_i in [-L, 0] (or every s_i in
[0, L]). Write P[I = j] = sum_r P[rho = r] prod_{i<j} P[nu_i < T + r - q_i]
P[nu_j >= T + r - q_j]. For s_i in [-L, 0] the substitution r = u - L turns each factor
of D' into the factor of D at u with an argument moved by L - |s_i| >= 0 in the
direction that can only lower the "below" factors, and raises the last by at most
e^(epsilon_end / 2) (an integer shift m <= L of a discrete Laplace of scale b moves any
tail by at most e^(m / b)), while P[rho = u - L] <= e^(epsilon_end / 2) P[rho = u]: so
P'[I = j] <= e^epsilon_end P[I = j]. The other direction and the other sign are the same
argument with the roles swapped, and the "limit" outcome drops the last factor. Both
searches of one statistic compose: epsilon_end = epsilon / 2 each (epsilon for one end).
The noise is exact (dpportal.privacy.samplers.discrete_laplace, integer counts, integer
thresholds), so no floating-point comparison decides the output.

Accuracy (`outside_at_most`). The search stops at j with f_j <= k + nu_j - rho. With
probability >= 1 - beta both rho >= -m and max_{i <= steps} nu_i <= m, where m is the
smallest integer with P[rho < -m] <= beta / 2 and (steps + 1) P[nu > m] <= beta / 2 (the
exact discrete Laplace tail): then at most k + 2m values lie beyond the returned bound.
No such statement holds when the search reached its limit; the result says so.

What the estimate is not: at a small epsilon a bound cannot see the few most extreme
values (changing them costs almost nothing in privacy). It lands where about k + O(1/eps)
values lie beyond; a search that passes the largest value goes on for a few steps (each
a factor r) before the noise stops it, rarely further.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import check_epsilon
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.samplers import discrete_laplace
from dpportal.privacy.search_grid import (
    DEFAULT_RATIO,
    MAX_STEPS,
    SearchGrid,
    exact_text,
    fraction_of,
)
from dpportal.privacy.tails import dlap_tail

__all__ = [
    "ENDS",
    "check_contribution_bound",
    "MAX_STEPS",
    "DEFAULT_OUTSIDE",
    "DEFAULT_RATIO",
    "BoundsEstimate",
    "SearchGrid",
    "bounds_records",
    "end_epsilon",
    "estimate_bounds",
    "first_crossing",
    "noise_scale",
    "outside_at_most",
]

#: the defaults a request starts from (bench/discovery.py --sweep shows how they compare)
DEFAULT_OUTSIDE = 5
#: which ends a request estimates
ENDS = ("both", "upper", "lower")
#: the draws of nu made at once (a search rarely needs more)
_BATCH = 64


def _check_ends(ends: str) -> str:
    if ends not in ENDS:
        raise PrivacyParameterError(
            gettext_noop("ends must be one of both, upper, lower; got %(value)s"), value=repr(ends)
        )
    return ends


def _check_outside(outside: object) -> int:
    if isinstance(outside, bool) or not isinstance(outside, int) or outside < 0:
        raise PrivacyParameterError(
            gettext_noop(
                "the values allowed beyond a bound must be a whole number >= 0, got %(value)s"
            ),
            value=repr(outside),
        )
    return outside


def check_contribution_bound(contribution_bound: object) -> int:
    """L as a whole number >= 1, or a PrivacyParameterError."""
    if (
        isinstance(contribution_bound, bool)
        or not isinstance(contribution_bound, int)
        or contribution_bound < 1
    ):
        raise PrivacyParameterError(
            gettext_noop("the contribution bound L must be a whole number >= 1, got %(value)s"),
            value=repr(contribution_bound),
        )
    return contribution_bound


def end_epsilon(epsilon: object, ends: str) -> Fraction:
    """The epsilon of one search: the statistic's epsilon, halved when both ends are searched."""
    eps = check_epsilon(epsilon)
    return eps / 2 if _check_ends(ends) == "both" else eps


def noise_scale(*, epsilon: object, ends: str, contribution_bound: int) -> Fraction:
    """b = 2 L / epsilon_end: the scale of the threshold's and each query's discrete Laplace."""
    return Fraction(2 * check_contribution_bound(contribution_bound)) / end_epsilon(epsilon, ends)


def _margin(scale: Fraction, steps: int, beta: Fraction) -> int:
    """The smallest m with P[rho < -m] <= beta/2 and (steps + 1) P[nu > m] <= beta/2."""
    # P[Y > m] = P[|Y| > m] / 2 for the symmetric discrete Laplace
    target = Decimal(beta.numerator) / Decimal(beta.denominator) / 2
    m = 0
    while dlap_tail(scale, m) / 2 * (steps + 1) > target:
        m += 1
    return m


def outside_at_most(
    *,
    epsilon: object,
    ends: str,
    outside: int,
    steps: int,
    contribution_bound: int,
    confidence: object,
) -> int:
    """With probability >= confidence, at most this many values lie beyond an estimated bound
    (each end; the search did not reach its limit). See the module docstring."""
    conf = fraction_of(confidence, "confidence")
    if not 0 < conf < 1:
        raise PrivacyParameterError(
            gettext_noop("confidence must be between 0 and 1, got %(value)s"), value=str(conf)
        )
    scale = noise_scale(epsilon=epsilon, ends=ends, contribution_bound=contribution_bound)
    return _check_outside(outside) + 2 * _margin(scale, steps, 1 - conf)


@dataclass(frozen=True)
class EndResult:
    """One search's outcome: the grid index it stopped at and whether that is the limit."""

    index: int
    value: float
    reached_limit: bool

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "value": repr(self.value), "reached_limit": self.reached_limit}


@dataclass(frozen=True)
class BoundsEstimate:
    """The estimated bounds (None for an end not searched) and how they were found."""

    lower: EndResult | None
    upper: EndResult | None
    grid: SearchGrid
    ends: str
    epsilon: Fraction
    outside: int
    contribution_bound: int

    def explanation(self) -> dict[str, Any]:
        """Public parameters and the outcome: JSON-safe, no count of the data."""
        scale = noise_scale(
            epsilon=self.epsilon, ends=self.ends, contribution_bound=self.contribution_bound
        )
        return {
            "mechanism": "above_threshold",
            "noise": "discrete_laplace",
            "ends": self.ends,
            "epsilon": exact_text(self.epsilon),
            "epsilon_per_end": exact_text(end_epsilon(self.epsilon, self.ends)),
            "scale": exact_text(scale),
            "scale_float": float(scale),
            "outside": self.outside,
            "contribution_bound": self.contribution_bound,
            "grid": self.grid.to_dict(),
            "steps": self.grid.steps(),
            "lower": self.lower.to_dict() if self.lower else None,
            "upper": self.upper.to_dict() if self.upper else None,
        }


def first_crossing(
    beyond: np.ndarray, *, outside: int, scale: Fraction, rng: RandomSource | None
) -> int | None:
    """AboveThreshold: the first i with outside - beyond[i] + nu_i >= rho (None: no i)."""
    rho = int(discrete_laplace(scale, 1, rng)[0])
    for start in range(0, len(beyond), _BATCH):
        chunk = beyond[start : start + _BATCH]
        nu = discrete_laplace(scale, len(chunk), rng)
        hits = np.flatnonzero(outside - chunk + nu >= rho)
        if hits.size:
            return start + int(hits[0])
    return None


def estimate_bounds(
    cell_counts: Sequence[int],
    *,
    grid: SearchGrid,
    ends: str,
    outside: int,
    epsilon: object,
    contribution_bound: int,
    rng: RandomSource | None = None,
) -> BoundsEstimate:
    """Search each requested end; see the module docstring for the mechanism and its proof.

    cell_counts: integer counts of the values (after the person bound) in the cells of
    grid.edges(): (-inf, e_0], (e_0, e_1], ..., (e_last, +inf), len(edges) + 1 of them.
    The lower search runs first when both are requested (each with its own noise).
    """
    _check_ends(ends)
    k = _check_outside(outside)
    bound = check_contribution_bound(contribution_bound)
    eps = check_epsilon(epsilon)
    steps = grid.steps()
    counts = np.asarray(cell_counts, dtype=np.int64)
    if counts.shape != (2 * steps + 2,) or (counts < 0).any():
        raise ValueError(f"expected {2 * steps + 2} non-negative cell counts")
    scale = noise_scale(epsilon=eps, ends=ends, contribution_bound=bound)
    # at_most[j] = #{x <= e_j}; beyond[j] = #{x > e_j}; the centre is edge `steps`
    at_most = np.cumsum(counts)[:-1]
    beyond = int(counts.sum()) - at_most
    lower = upper = None
    if ends in ("both", "lower"):
        # l_i is edge steps - i: #{x <= l_i}, i = 0..steps
        i = first_crossing(at_most[steps::-1], outside=k, scale=scale, rng=rng)
        points = grid.downward()
        index = steps if i is None else i
        lower = EndResult(index, float(points[index]), i is None)
    if ends in ("both", "upper"):
        i = first_crossing(beyond[steps:], outside=k, scale=scale, rng=rng)
        points = grid.upward()
        index = steps if i is None else i
        upper = EndResult(index, float(points[index]), i is None)
    return BoundsEstimate(lower, upper, grid, ends, eps, k, bound)


def bounds_records(*, epsilon: object, ends: str) -> list[MechanismRecord]:
    """One pure record per search (epsilon_end each): the ledger composes them."""
    per_end = end_epsilon(epsilon, ends)
    return [MechanismRecord.generic(epsilon=per_end, count=2 if ends == "both" else 1)]
