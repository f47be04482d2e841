"""Several quantiles of one column drawn jointly: KSS's recursion, exact permute-and-flip.

Source: H. Kaplan, S. Schnapp, U. Stemmer, "Differentially private approximate
quantiles", ICML 2022 (KSS), Algorithm 1 (ApproximateQuantiles). Inputs as in
dpportal.privacy.quantiles: a PUBLIC grid c_1 < ... < c_m, the rank counts
r_j = #{x < c_j} and n of the contribution-bounded values.

Algorithm (dpportal.privacy.joint_quantile_tree builds the tree). The k distinct
quantiles are sorted. The root selects the middle one (sorted index k // 2) over
all candidates with the utility of quantiles.quantile_utilities. With s the
selected index, the left child takes the quantiles below and the data {x < c_s}:
candidates 0..s, local ranks r_j, local n r_s; the right child takes the quantiles
above and the data {x >= c_s}: candidates s..m-1, local ranks r_j - r_s, local n
n - r_s. Deeper nodes likewise, between their two bounding selections lo and hi:
candidates lo..hi, local ranks r_j - r_lo, local n r_hi - r_lo (r_lo = 0 and
r_hi = n at the edges). A node's target is KSS's rescaled quantile
q' = (q - q_lo) / (q_hi - q_lo) (exact Fractions), q_lo, q_hi the bounding
quantiles (0 and 1 at the edges). Each node is one exact permute-and-flip
(dpportal.privacy.permute_flip) with utility -|d' r'_j - p' n'| for q' = p'/d' and
scaled sensitivity max(p', d' - p') L. Only the rank counts and n are read.

Privacy (unbounded DP, a person = at most L rows; pure eps-DP, delta = 0). There
are D = ceil(log2(k + 1)) levels; every node of a level runs at eps / D.
1. Within a level, given the earlier levels' outputs, the nodes' data are
   disjoint: a row belongs to the node whose interval [c_lo, c_hi) holds it, and
   the intervals come from released values only. Adding (or removing) a person
   whose rows put L_i rows into node i (sum L_i <= L) changes node i's local ranks
   and local n by those L_i rows only, so each of its utilities moves by at most
   max(q', 1 - q') L_i (quantiles.py's argument, with L_i rows), no more than its
   calibrated Delta_i = max(q', 1 - q') L.
2. Permute-and-flip at eps with sensitivity Delta, on utilities that move by at
   most Delta' <= Delta, is the same algorithm as permute-and-flip at
   eps Delta' / Delta with sensitivity Delta' (same exponent eps/(2 Delta)), so
   by McKenna & Sheldon (NeurIPS 2020) Thm 1 its outputs' probabilities change
   by a factor at most exp(eps_l L_i / L).
3. The nodes of a level use independent coins, so the level's joint output
   changes by at most exp(sum_i eps_l L_i / L) <= exp(eps_l) = exp(eps / D).
4. The D levels compose adaptively (each level's data split depends on the
   earlier outputs only): Dwork & Roth 2014, Thm 3.16, eps = D (eps / D).
KSS's privacy analysis of ApproximateQuantiles (Section 3) rests on the same
structure (one level of disjoint calls costs one call's budget, log k + 1 levels)
for the exponential mechanism; steps 1-3 are its unbounded, L-row form with
permute-and-flip, and tests/privacy audit it (a tight case attains exactly eps).

Accuracy: joint_quantile_tree.joint_rank_error_bounds (data-independent ranks,
from the exact permute-and-flip tail and KSS's error propagation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.joint_quantile_tree import (
    joint_epsilon_for_rank_error,
    joint_level_budgets,
    joint_levels,
    joint_rank_error_bounds,
    joint_sorted_quantiles,
    joint_tree,
)
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import check_contribution_bound, check_epsilon, exact_str
from dpportal.privacy.permute_flip import permute_and_flip_indices
from dpportal.privacy.quantile_grids import check_grid
from dpportal.privacy.quantiles import (
    QuantileResult,
    QuantilesResult,
    quantile_scaled_sensitivity,
    quantile_sensitivity,
    quantile_utilities,
)
from dpportal.privacy.rng import RandomSource, resolve_rng

__all__ = [
    "joint_levels",
    "joint_rank_error_bounds",
    "joint_epsilon_for_rank_error",
    "joint_records",
    "joint_quantile_indices",
    "JointQuantileResult",
    "JointQuantilesResult",
    "release_joint_quantiles",
]

MECHANISM = "joint_permute_and_flip"


@dataclass(frozen=True)
class JointQuantileResult(QuantileResult):
    """One quantile of a joint release: `epsilon` is its level's budget eps / D and
    `sensitivity` its node's max(q', 1 - q') L (ranks of the node's data)."""

    level: int = 0
    local_quantile: Fraction = Fraction(0)

    def to_dict(self) -> dict[str, Any]:
        """QuantileResult's keys plus the node's level and rescaled target q'."""
        data = super().to_dict()
        data["level"] = self.level
        data["local_quantile"] = exact_str(self.local_quantile)
        return data


@dataclass(frozen=True)
class JointQuantilesResult(QuantilesResult):
    """Quantiles released by the recursion: eps = D levels of eps / D, delta = 0."""

    levels: int = 1

    def to_dict(self) -> dict[str, Any]:
        """QuantilesResult's keys with mechanism joint_permute_and_flip and the levels."""
        data = super().to_dict()
        data["mechanism"] = MECHANISM
        data["levels"] = self.levels
        data["budget_split"] = (
            "levels compose sequentially, the disjoint nodes of one level in parallel: "
            "epsilon = levels x the level epsilon"
        )
        return data


def joint_quantile_indices(
    rank_counts: object,
    n: int,
    *,
    quantiles: Sequence[object],
    epsilon: object,
    contribution_bound: object = 1,
    runs: int = 1,
    rng: RandomSource | None = None,
) -> np.ndarray:
    """`runs` independent draws of the recursion: int64 array (runs, k) of selected
    candidate indices, column i for the i-th SORTED quantile.

    Runs that reach a node with the same candidate range share one vectorised
    permute-and-flip call (one independent row each), which is the same law as
    running them one by one.
    """
    qs = joint_sorted_quantiles(quantiles)
    bound = check_contribution_bound(contribution_bound)
    budgets = joint_level_budgets(epsilon, len(qs))
    ranks = [int(r) for r in np.asarray(rank_counts).reshape(-1).tolist()]
    quantile_utilities(ranks, n, 0)  # validates the ranks and n
    m = len(ranks)
    source = resolve_rng(rng)
    out = np.zeros((runs, len(qs)), dtype=np.int64)
    for node in joint_tree(qs):
        first = out[:, node.lo] if node.lo is not None else np.zeros(runs, np.int64)
        last = out[:, node.hi] if node.hi is not None else np.full(runs, m - 1, np.int64)
        keys, inverse = np.unique(first * m + last, return_inverse=True)
        inverse = inverse.reshape(-1)
        sensitivity = quantile_scaled_sensitivity(node.local, bound)
        for group, key in enumerate(keys.tolist()):
            a, b = divmod(key, m)
            base = ranks[a] if node.lo is not None else 0
            top = ranks[b] if node.hi is not None else n
            local = [r - base for r in ranks[a : b + 1]]
            utilities = quantile_utilities(local, top - base, node.local)
            rows = np.flatnonzero(inverse == group)
            table = np.tile(np.array(list(utilities), dtype=object), (rows.size, 1))
            picked = permute_and_flip_indices(
                table, epsilon=budgets[node.level], sensitivity=sensitivity, rng=source
            )
            out[rows, node.index] = a + picked
    return out


def release_joint_quantiles(
    rank_counts: object,
    n: int,
    *,
    candidates: Sequence[object],
    quantiles: Sequence[object],
    epsilon: object,
    contribution_bound: object = 1,
    rng: RandomSource | None = None,
) -> QuantilesResult:
    """Release quantiles q_1..q_k of one column jointly (module docstring): eps-DP, delta 0.

    rank_counts[j] = #{x < candidates[j]} and n = #{x}, over the same
    contribution-bounded rows (quantiles.RankCounter). The parts come sorted by
    quantile (distinct quantiles only). Neither the ranks nor n are returned.
    """
    grid = check_grid(candidates)
    bound = check_contribution_bound(contribution_bound)
    qs = joint_sorted_quantiles(quantiles)
    ranks = np.asarray(rank_counts).reshape(-1)
    if ranks.size != len(grid):
        raise ValueError("one rank count per candidate is needed")
    total = check_epsilon(epsilon)
    budgets = joint_level_budgets(total, len(qs))
    indices = joint_quantile_indices(
        ranks, n, quantiles=qs, epsilon=total, contribution_bound=bound, rng=rng
    )[0]
    nodes = {node.index: node for node in joint_tree(qs)}
    parts = []
    for i, q in enumerate(qs):
        node = nodes[i]
        parts.append(
            JointQuantileResult(
                quantile=q,
                epsilon=budgets[node.level],
                share=budgets[node.level] / total,
                sensitivity=quantile_sensitivity(node.local, bound),
                index=int(indices[i]),
                value=grid[int(indices[i])],
                level=node.level,
                local_quantile=node.local,
            )
        )
    return JointQuantilesResult(
        parts=tuple(parts),
        epsilon=total,
        contribution_bound=bound,
        candidates=len(grid),
        grid_first=grid[0],
        grid_last=grid[-1],
        levels=len(budgets),
    )


def joint_records(epsilon: object, k: int) -> list[MechanismRecord]:
    """One permute_and_flip record per level at that level's budget (eps / D each): a
    level's disjoint nodes cost one selection's budget (module docstring, steps 1-3)."""
    return [MechanismRecord.permute_and_flip(epsilon=e) for e in joint_level_budgets(epsilon, k)]
