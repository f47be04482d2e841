"""An upper bound for a clipped mean, extrapolated from two private quantiles under a
log-normal tail model.

Why. A clipped mean is most accurate when its bound leaves a handful of values above it
(the bias of clipping them about equals the noise a higher bound adds). A private search
cannot see where the few largest values lie: at epsilon 0.1 a count beyond a point is
known to some tens (dpportal.privacy.unbounded_bounds lands where about k + O(1/eps)
values lie beyond). A quantile far from the top, by contrast, is found accurately in
value terms. So this estimate finds two such quantiles privately and extrapolates to the
point beyond which about `beyond` values would lie if the upper tail were log-normal (as
incomes, durations, sizes often are). It is a model: for a heavier tail (Pareto-like)
the bound comes out too low, for a lighter one too high. Pages say so.

The mechanism (epsilon split in three, all pure, composed adaptively: Dwork & Roth
Thm 3.16; the thresholds of the searches depend only on the released noisy count):
1. n~ = n + DLap(L / epsilon_count), epsilon_count = epsilon * COUNT_SHARE (one person
   moves the count of values by at most L).
2. Two upward AboveThreshold searches on the public grid (unbounded_bounds: monotone
   queries #{x > u_i}, discrete Laplace of scale 2L / epsilon_search on the threshold and
   each query), epsilon_search = (epsilon - epsilon_count) / 2 each: one stops where about
   k_a = round(n~ * UPPER_SHARE) values lie above (u_a), one where about k_b = round(n~/2)
   do (u_b, near the median).
3. Post-processing of public values only: with z_p = Phi^-1(1 - p), the log-normal whose
   quantiles at 1 - k_a/n~ and 1 - k_b/n~ are u_a and u_b has its 1 - beyond/n~ quantile
   at exp(ln u_a + s (z* - z_a)), s = (ln u_a - ln u_b) / (z_a - z_b); the estimate is
   the first grid point at or above it (the grid's limit at most). Floating point here
   decides nothing private.

When the model cannot be applied (a search reached its limit, u_b <= 0, u_a <= u_b, or
too few values to place k_a), the estimate says so and gives no bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import check_epsilon
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.samplers import discrete_laplace
from dpportal.privacy.search_grid import SearchGrid, exact_text
from dpportal.privacy.unbounded_bounds import check_contribution_bound, first_crossing

__all__ = [
    "COUNT_SHARE",
    "MODELS",
    "UPPER_SHARE",
    "TailEstimate",
    "epsilon_parts",
    "estimate_tail_upper",
    "tail_records",
]

#: the tail models an estimate may assume
MODELS = ("lognormal",)
#: the share of the epsilon spent on the noisy count of values
COUNT_SHARE = Fraction(1, 10)
#: the share of values above the upper anchor u_a (bench/discovery.py shows the choice)
UPPER_SHARE = Fraction(1, 20)
#: the fewest values above the upper anchor for the model to be fitted
MIN_ANCHOR = 2


def epsilon_parts(epsilon: object) -> tuple[Fraction, Fraction]:
    """(epsilon of the noisy count, epsilon of each of the two searches)."""
    eps = check_epsilon(epsilon)
    count = eps * COUNT_SHARE
    return count, (eps - count) / 2


@dataclass(frozen=True)
class TailEstimate:
    """The extrapolated upper bound (None when the model could not be applied) and every
    public value it was computed from."""

    upper: float | None
    index: int | None
    reason: str
    noisy_count: int
    anchors: tuple[tuple[int, float | None], ...]
    target: float | None
    grid: SearchGrid
    epsilon: Fraction
    beyond: int
    contribution_bound: int

    def explanation(self) -> dict[str, Any]:
        """Public parameters and outputs (the noisy count is an output): JSON-safe."""
        eps_count, eps_search = epsilon_parts(self.epsilon)
        bound = self.contribution_bound
        return {
            "mechanism": "above_threshold",
            "noise": "discrete_laplace",
            "tail": "lognormal",
            "ends": "upper",
            "epsilon": exact_text(self.epsilon),
            "epsilon_count": exact_text(eps_count),
            "epsilon_search": exact_text(eps_search),
            "count_scale": exact_text(Fraction(bound) / eps_count),
            "scale": exact_text(Fraction(2 * bound) / eps_search),
            "noisy_count": self.noisy_count,
            "anchors": [
                {"above": k, "value": None if v is None else repr(v)} for k, v in self.anchors
            ],
            "beyond": self.beyond,
            "extrapolated": None if self.target is None else repr(self.target),
            "reason": self.reason,
            "contribution_bound": bound,
            "grid": self.grid.to_dict(),
            "steps": self.grid.steps(),
            "upper": None
            if self.upper is None
            else {"index": self.index, "value": repr(self.upper)},
        }


def _search(beyond_counts: np.ndarray, points: np.ndarray, k: int, scale: Fraction, rng):
    """One upward search: the point it stopped at, or None at the limit."""
    i = first_crossing(beyond_counts, outside=k, scale=scale, rng=rng)
    return None if i is None else float(points[i])


def extrapolate(
    *, upper_anchor: float, median_anchor: float, noisy_count: int, upper_above: int,
    median_above: int, beyond: int,
) -> float | None:  # fmt: skip
    """The log-normal quantile 1 - beyond/n~ through the two anchors, or None when the
    anchors do not determine a log-normal (public values only: post-processing)."""
    if median_anchor <= 0 or upper_anchor <= median_anchor or noisy_count <= 2 * upper_above:
        return None
    z = NormalDist().inv_cdf
    z_a = z(1 - upper_above / noisy_count)
    z_b = z(1 - median_above / noisy_count)
    if z_a <= z_b:
        return None
    z_target = z(1 - min(beyond, upper_above) / noisy_count)
    slope = (math.log(upper_anchor) - math.log(median_anchor)) / (z_a - z_b)
    return math.exp(math.log(upper_anchor) + slope * (z_target - z_a))


def estimate_tail_upper(
    cell_counts: Sequence[int],
    *,
    grid: SearchGrid,
    beyond: int,
    epsilon: object,
    contribution_bound: int,
    rng: RandomSource | None = None,
) -> TailEstimate:
    """The mechanism of the module docstring on the counts of the values in the cells of
    grid.edges() ((-inf, e_0], ..., (e_last, +inf): len(edges) + 1 integers)."""
    if isinstance(beyond, bool) or not isinstance(beyond, int) or beyond < 1:
        raise PrivacyParameterError(
            gettext_noop(
                "the values expected above the bound must be a whole number >= 1, got %(value)s"
            ),
            value=repr(beyond),
        )
    target_beyond = beyond
    bound = check_contribution_bound(contribution_bound)
    eps = check_epsilon(epsilon)
    eps_count, eps_search = epsilon_parts(eps)
    steps = grid.steps()
    counts = np.asarray(cell_counts, dtype=np.int64)
    if counts.shape != (2 * steps + 2,) or (counts < 0).any():
        raise ValueError(f"expected {2 * steps + 2} non-negative cell counts")
    n = int(counts.sum())
    noisy = n + int(discrete_laplace(Fraction(bound) / eps_count, 1, rng)[0])
    k_a = round(Fraction(noisy) * UPPER_SHARE)
    k_b = round(Fraction(noisy, 2))

    def result(reason, anchors=(), target=None, index=None, upper=None):
        return TailEstimate(
            upper, index, reason, noisy, tuple(anchors), target, grid, eps, target_beyond, bound
        )

    if k_a < MIN_ANCHOR:
        return result("too_few_values")
    beyond_counts = n - np.cumsum(counts)[:-1][steps:]
    points = grid.upward()
    scale = Fraction(2 * bound) / eps_search
    u_a = _search(beyond_counts, points, k_a, scale, rng)
    u_b = _search(beyond_counts, points, k_b, scale, rng)
    anchors = ((k_a, u_a), (k_b, u_b))
    if u_a is None or u_b is None:
        return result("search_limit", anchors)
    target = extrapolate(
        upper_anchor=u_a, median_anchor=u_b, noisy_count=noisy, upper_above=k_a,
        median_above=k_b, beyond=target_beyond,
    )  # fmt: skip
    if target is None:
        return result("not_lognormal", anchors)
    index = min(int(np.searchsorted(points, target, side="left")), steps)
    reason = "limit" if target > points[-1] else "fitted"
    return result(reason, anchors, target, index, float(points[index]))


def tail_records(*, epsilon: object, contribution_bound: int) -> list[MechanismRecord]:
    """The noisy count (discrete Laplace) and the two searches (pure epsilon each)."""
    eps_count, eps_search = epsilon_parts(epsilon)
    return [
        MechanismRecord.discrete_laplace(
            sensitivity=contribution_bound, scale=Fraction(contribution_bound) / eps_count
        ),
        MechanismRecord.generic(epsilon=eps_search, count=2),
    ]
