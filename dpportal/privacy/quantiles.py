"""Quantiles over a public candidate grid by exact permute-and-flip (DESIGN.md section 3.1).

Inputs. A PUBLIC grid c_1 < ... < c_m declared by the owner (bin edges, or a
step within declared bounds: `candidate_grid`), never read from the data; the
rank counts r_j = #{x < c_j} of the (contribution-bounded, non-missing) values,
and n, the number of those values (`RankCounter` computes both streaming).

Utility. For the quantile q = p/d (a Fraction in [0, 1], d its denominator):

    u_j = -| r_j - q n |  (ranks),   scaled to integers  U_j = d u_j = -| d r_j - p n |.

Sensitivity (unbounded DP, one person = at most L rows). Adding a person's L
rows with values y_1..y_L changes r_j - q n by sum_i (1[y_i < c_j] - q), each
term in [-q, 1 - q], so by at most max(q, 1 - q) L in absolute value, and u_j by
no more (reverse triangle inequality); removing is symmetric. Hence

    Delta_u = max(q, 1 - q) L ranks   (Delta_U = max(p, d - p) L in scaled units),

tight when all L rows fall below c_j (q <= 1/2) or at or above it (q >= 1/2).
This is at most L, the bound DESIGN.md states; the median gets L/2. OpenDP's
make_quantile_score_candidates uses the same constant max(alpha_num,
alpha_den - alpha_num) per added or removed row. tests/privacy check it by
brute force.

Mechanism. Permute-and-flip (McKenna & Sheldon, NeurIPS 2020) on U with
Delta_U, sampled exactly (dpportal.privacy.permute_flip): eps-DP, delta = 0.
Only the selected candidate is released, never a utility, a rank or n.

Several quantiles. Each is a separate eps_i-DP selection on the same data;
they compose sequentially (Dwork & Roth 2014, Thm 3.16): eps = sum eps_i.
Default split: equal shares eps_i = eps / k; owners may give shares (positive,
summing to 1). The released values are not sorted (sorting would be free
post-processing, but it would change which bound each value carries).

Accuracy (in ranks, from public parameters only; never from the true n).
With probability >= 1 - beta the released candidate c satisfies

    | #{x < c} - q n |  <=  min_j | r_j - q n |  +  t,

i.e. u(c) >= u* - t, with t permute-and-flip's exact worst-case tail
(`permute_flip.utility_error_bound`: the smallest t with
P(u(c) < u* - t) <= beta for EVERY utility vector on m candidates). It is below
the exponential mechanism's union bound (2 Delta_u / eps_i) ln(m / beta)
(Dwork & Roth 2014, Thm 3.11), whose miss probability is about twice the exact
worst case. For k quantiles at once, beta / k each (union bound over the
quantiles). The term min_j | r_j - q n | is the grid's own resolution (zero when
a candidate sits exactly at the target rank). In percentile points the bound is
100 t / N with N a NOISY count released separately (`rank_error_percent`).
Joint releases (dpportal.privacy.joint_quantiles) state theirs through
`quantile_rank_errors`, which dispatches on the explanation's mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.grid_cells import GridCells
from dpportal.privacy.joint_quantile_tree import joint_rank_error_bounds
from dpportal.privacy.params import (
    check_cells,
    check_confidence,
    check_contribution_bound,
    check_epsilon,
    exact_str,
    round_up_sig,
    to_fraction,
)
from dpportal.privacy.permute_flip import permute_and_flip, utility_error_bound
from dpportal.privacy.quantile_grids import OPEN_GRID_DECADES, candidate_grid, check_grid, open_grid
from dpportal.privacy.rng import RandomSource

__all__ = [
    "candidate_grid",
    "open_grid",
    "OPEN_GRID_DECADES",
    "RankCounter",
    "check_quantile",
    "quantile_sensitivity",
    "quantile_scaled_sensitivity",
    "quantile_utilities",
    "quantiles_budget_split",
    "rank_error_bound",
    "quantiles_epsilon_for_rank_error",
    "QuantileResult",
    "QuantilesResult",
    "release_quantiles",
    "quantile_rank_errors",
    "rank_error_percent",
]

_EPSILON_DIGITS = 3


class RankCounter:
    """Streaming rank counts r_j = #{x < c_j} and n over chunks of float values.

    Memory is O(m): each chunk adds its counts per grid cell
    (-inf, c_1), [c_1, c_2), ..., [c_m, inf) (dpportal.privacy.grid_cells:
    exactly searchsorted's cells, arithmetically on an evenly spaced grid);
    `rank_counts()` returns the cumulative sums. The comparison x < c_j is made
    in float64 against float(c_j), a deterministic function of the row and the
    public grid, which is all the sensitivity argument needs. NaN is refused:
    drop missing values first (and count only the rows whose values are kept).
    """

    def __init__(self, candidates: Sequence[object]) -> None:
        grid = check_grid(candidates)
        edges = np.array([float(c) for c in grid], dtype=np.float64)
        if np.any(np.diff(edges) <= 0):
            msgid = gettext_noop("candidates are too close to tell apart in float64")
            raise PrivacyParameterError(msgid)
        self._grid = GridCells(edges)
        self._cells = np.zeros(len(grid) + 1, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        """Count one chunk of values (1-D, float)."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if np.isnan(v).any():
            raise ValueError("values contain NaN; drop missing values before ranking")
        self._cells += self._grid.counts(v)  # cell k: k of the c_j are <= x

    @property
    def n(self) -> int:
        """The number of values counted."""
        return int(self._cells.sum())

    def rank_counts(self) -> np.ndarray:
        """int64 array: element j is #{x < c_j} (x < c_j iff fewer than j+1 c's are <= x)."""
        return np.cumsum(self._cells)[:-1].copy()


def check_quantile(quantile: object) -> Fraction:
    """Return q as a Fraction in [0, 1] (decimal strings such as "0.25" stay exact)."""
    q = to_fraction(quantile, "quantile")
    if not 0 <= q <= 1:
        msgid = gettext_noop("quantile must be in [0, 1], got %(quantile)s")
        raise PrivacyParameterError(msgid, quantile=repr(quantile))
    return q


def quantile_sensitivity(quantile: object, contribution_bound: object = 1) -> Fraction:
    """Delta_u = max(q, 1 - q) L, in ranks (module docstring; at most L)."""
    q = check_quantile(quantile)
    return max(q, 1 - q) * check_contribution_bound(contribution_bound)


def quantile_scaled_sensitivity(quantile: object, contribution_bound: object = 1) -> int:
    """Delta_U = max(p, d - p) L for q = p/d: the sensitivity of the scaled utilities U = d u."""
    q = check_quantile(quantile)
    return max(q.numerator, q.denominator - q.numerator) * check_contribution_bound(
        contribution_bound
    )


def quantile_utilities(rank_counts: object, n: int, quantile: object) -> np.ndarray:
    """Scaled integer utilities U_j = -| d r_j - p n | for q = p/d (object array of ints).

    rank_counts must be non-decreasing integers in [0, n] (r_j = #{x < c_j}).
    """
    q = check_quantile(quantile)
    ranks = [int(r) for r in np.asarray(rank_counts).reshape(-1).tolist()]
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError("n must be a non-negative integer")
    if not ranks:
        raise PrivacyParameterError(gettext_noop("the candidate grid must not be empty"))
    if ranks[0] < 0 or ranks[-1] > n or any(a > b for a, b in zip(ranks, ranks[1:], strict=False)):
        raise ValueError("rank counts must be non-decreasing integers in [0, n]")
    p, d = q.numerator, q.denominator
    return np.array([-abs(d * r - p * int(n)) for r in ranks], dtype=object)


def quantiles_budget_split(
    epsilon: object, count: int, shares: Sequence[object] | None = None
) -> tuple[Fraction, ...]:
    """eps_i = eps * share_i (equal shares 1/k by default); they add up to eps exactly."""
    eps = check_epsilon(epsilon)
    k = check_cells(count, "number of quantiles")
    if shares is None:
        return tuple(eps / k for _ in range(k))
    parts = tuple(to_fraction(s, "share") for s in shares)
    if len(parts) != k or any(s <= 0 for s in parts) or sum(parts) != 1:
        msgid = gettext_noop("shares must be one positive number per quantile, summing to 1")
        raise PrivacyParameterError(msgid)
    return tuple(eps * s for s in parts)


def rank_error_bound(
    *,
    epsilon: object,
    quantile: object,
    contribution_bound: object = 1,
    candidates: object,
    confidence: object,
    k: object = 1,
) -> float:
    """t in ranks for ONE quantile noised with `epsilon`: permute-and-flip's exact
    worst-case tail at failure beta / k (`utility_error_bound`, sensitivity Delta_u).

    k = 1 per quantile; k = number of quantiles for all at once (beta/k each).
    See the module docstring for the statement and its proof.
    """
    eps = check_epsilon(epsilon)
    m = check_cells(candidates, "candidates")
    beta = 1 - check_confidence(confidence)
    kk = check_cells(k)
    sens = quantile_sensitivity(quantile, contribution_bound)
    return utility_error_bound(epsilon=eps, sensitivity=sens, candidates=m, beta=float(beta) / kk)


def quantiles_epsilon_for_rank_error(
    *,
    rank_error: object,
    quantiles: Sequence[object],
    contribution_bound: object = 1,
    candidates: object,
    confidence: object,
    simultaneous: bool = False,
) -> Fraction:
    """The smallest total eps (3 significant digits, rounded up) giving every quantile,
    with equal shares, a rank error bound <= `rank_error` (per quantile, or all at once).

    The bound is (2 Delta_u / eps_i) times a factor free of eps, so eps_i = bound at
    eps_i = 1 divided by the target; the loop only absorbs float rounding.
    """
    t = to_fraction(rank_error, "rank_error")
    if t <= 0:
        msgid = gettext_noop("rank_error must be > 0, got %(rank_error)s")
        raise PrivacyParameterError(msgid, rank_error=repr(rank_error))
    k = len(quantiles)
    kk = k if simultaneous else 1
    m = check_cells(candidates, "candidates")

    def widest(total: Fraction) -> float:
        return max(
            rank_error_bound(
                epsilon=total / k,
                quantile=q,
                contribution_bound=contribution_bound,
                candidates=m,
                confidence=confidence,
                k=kk,
            )
            for q in quantiles
        )

    eps = round_up_sig(Fraction(k * widest(Fraction(k)) / float(t)), _EPSILON_DIGITS)
    while widest(eps) > t:
        eps = round_up_sig(eps * Fraction(1001, 1000), _EPSILON_DIGITS)
    return eps


@dataclass(frozen=True)
class QuantileResult:
    """One released quantile: the selected candidate and its public parameters."""

    quantile: Fraction
    epsilon: Fraction
    share: Fraction
    sensitivity: Fraction
    index: int
    value: Fraction

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: q, its budget, sensitivity in ranks, index and value (exact)."""
        return {
            "quantile": exact_str(self.quantile),
            "epsilon": exact_str(self.epsilon),
            "share": exact_str(self.share),
            "l1_sensitivity": exact_str(self.sensitivity),
            "index": self.index,
            "value": exact_str(self.value),
        }


@dataclass(frozen=True)
class QuantilesResult:
    """Quantiles of one column released together: eps = sum of the parts, delta = 0."""

    parts: tuple[QuantileResult, ...]
    epsilon: Fraction
    contribution_bound: int
    candidates: int
    grid_first: Fraction
    grid_last: Fraction

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable explanation: public parameters and released values only."""
        return {
            "statistic": "quantiles",
            "mechanism": "permute_and_flip",
            "unit": "rank",
            "epsilon": exact_str(self.epsilon),
            "delta": "0",
            "contribution_bound": self.contribution_bound,
            "candidates": self.candidates,
            "grid_first": exact_str(self.grid_first),
            "grid_last": exact_str(self.grid_last),
            "budget_split": "sequential composition: epsilon = sum of the quantiles' epsilons",
            "quantiles": [part.to_dict() for part in self.parts],
        }


def release_quantiles(
    rank_counts: object,
    n: int,
    *,
    candidates: Sequence[object],
    quantiles: Sequence[object],
    epsilon: object,
    contribution_bound: object = 1,
    shares: Sequence[object] | None = None,
    rng: RandomSource | None = None,
) -> QuantilesResult:
    """Release quantiles q_1..q_k of one column: k exact permute-and-flip selections.

    rank_counts[j] = #{x < candidates[j]} and n = #{x}, over the same
    contribution-bounded rows (RankCounter). Quantile i gets eps * share_i
    (equal by default) and utility sensitivity max(q_i, 1 - q_i) L; the whole
    release is eps-DP with delta = 0. Neither the ranks nor n are returned.
    """
    grid = check_grid(candidates)
    bound = check_contribution_bound(contribution_bound)
    qs = tuple(check_quantile(q) for q in quantiles)
    if not qs:
        raise PrivacyParameterError(gettext_noop("name at least one quantile"))
    ranks = np.asarray(rank_counts).reshape(-1)
    if ranks.size != len(grid):
        raise ValueError("one rank count per candidate is needed")
    budgets = quantiles_budget_split(epsilon, len(qs), shares)
    total = check_epsilon(epsilon)
    parts = []
    for q, eps_i in zip(qs, budgets, strict=True):
        utilities = quantile_utilities(ranks, n, q)
        scaled = quantile_scaled_sensitivity(q, bound)
        index = permute_and_flip(utilities, epsilon=eps_i, sensitivity=scaled, rng=rng)
        parts.append(
            QuantileResult(
                quantile=q,
                epsilon=eps_i,
                share=eps_i / total,
                sensitivity=quantile_sensitivity(q, bound),
                index=index,
                value=grid[index],
            )
        )
    return QuantilesResult(tuple(parts), total, bound, len(grid), grid[0], grid[-1])


def quantile_rank_errors(
    explanation: Mapping[str, Any], *, confidence: object, simultaneous: bool = False
) -> list[float]:
    """Rank-error bound of each released quantile at `confidence`, from its to_dict() alone:
    independent selections (mechanism permute_and_flip) or the joint recursion
    (joint_permute_and_flip: joint_quantile_tree.joint_rank_error_bounds)."""
    parts = explanation["quantiles"]
    if explanation.get("mechanism", "permute_and_flip") == "joint_permute_and_flip":
        return joint_rank_error_bounds(
            epsilon=Fraction(explanation["epsilon"]),
            quantiles=[Fraction(part["quantile"]) for part in parts],
            contribution_bound=explanation["contribution_bound"],
            candidates=explanation["candidates"],
            confidence=confidence,
            simultaneous=simultaneous,
        )
    return [
        rank_error_bound(
            epsilon=Fraction(part["epsilon"]),
            quantile=Fraction(part["quantile"]),
            contribution_bound=explanation["contribution_bound"],
            candidates=explanation["candidates"],
            confidence=confidence,
            k=len(parts) if simultaneous else 1,
        )
        for part in parts
    ]


def rank_error_percent(rank_error: float, noisy_count: int) -> float | None:
    """The rank error in percentile points, 100 t / N, through a NOISY count N (None if N < 1).

    N must be a released noisy count of the same rows (never the true n); the
    result is then an estimate of the percentile-point error, not a guarantee.
    """
    return None if noisy_count < 1 else 100.0 * float(rank_error) / noisy_count
