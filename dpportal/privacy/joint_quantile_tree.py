"""The recursion tree of joint quantiles and its data-independent rank-error bounds.

Source: H. Kaplan, S. Schnapp, U. Stemmer, "Differentially private approximate
quantiles", ICML 2022 (KSS), Algorithm 1 (ApproximateQuantiles) and its error
analysis (Section 3). dpportal.privacy.joint_quantiles draws the selections; this
module holds what depends on the public parameters only (the sorted quantiles,
epsilon, L, the number m of candidates), so quantiles.py can state the bounds of a
stored release without importing the sampler.

Tree. The k distinct quantiles are sorted; a node owns a contiguous run of them
and selects the middle one (index len // 2 of its run); the run below goes to its
left child, the run above to its right child. Its depth is 1 + floor(log2 k) =
ceil(log2(k + 1)) = D levels. A node's boundaries are the nearest ancestors whose
selections bound its data from below (lo) and above (hi); its local target is
KSS's rescaled quantile q' = (q - q_lo) / (q_hi - q_lo), with q_lo, q_hi those
ancestors' quantiles (0 and 1 where there is none).

Error propagation (ranks over the WHOLE data; r_j = #{x < c_j}). A node with
boundary ranks R_lo = r_lo (0 without lo) and R_hi = r_hi (n without hi) selects
among its candidates with local utility -|(r_j - R_lo) - q' (R_hi - R_lo)|. Write
e = r_sel - q n for every node. Since (1 - q') q_lo + q' q_hi = q, its target rank

    T = R_lo + q' (R_hi - R_lo) = q n + (1 - q') e_lo + q' e_hi     (e = 0 at the edges),

so, whenever its permute-and-flip selection is within tau of the best candidate,

    |e| <= tau + rho + (1 - q') |e_lo| + q' |e_hi|,   rho = min_j |r_j - T|.

rho is the grid's resolution at this node's actual target: the distance from T to
the nearest candidate rank (T lies between R_lo and R_hi, whose candidates are the
node's own, so the minimum over the node's candidates is the minimum over all).
Unrolled, |e_i| <= t_i + P_i with t_i from the tau's and P_i = sum over the nodes u
of quantile i's path of w_iu rho_u, the same interpolation weights w_iu (w_ii = 1),
so P_i <= W_i h with W_i = sum_u w_iu (<= the node's depth) and h the grid's
resolution: max(r_1, n - r_m, the largest (r_{j+1} - r_j) / 2). For one quantile
(k = 1) P_i is exactly quantiles.py's min_j |r_j - q n|.

tau of one node. `permute_flip.utility_error_bound`: the exact worst case of
permute-and-flip's tail over every utility vector, at the node's budget, its
sensitivity max(q', 1 - q') L (ranks) and m candidates (a node sees at most m; the
worst case grows with the count, so m is valid whatever the earlier selections).
The beta of one quantile is split equally over the nodes of its path (the union of
their failure events), or over all k nodes when every quantile must hold at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import (
    check_cells,
    check_confidence,
    check_contribution_bound,
    check_epsilon,
    round_up_sig,
    to_fraction,
)
from dpportal.privacy.permute_flip import utility_error_bound

__all__ = [
    "JointNode",
    "joint_levels",
    "joint_level_budgets",
    "joint_sorted_quantiles",
    "joint_tree",
    "joint_rank_error_bounds",
    "joint_epsilon_for_rank_error",
    "joint_resolution_weights",
]


@dataclass(frozen=True)
class JointNode:
    """One selection of the recursion, for the quantile of sorted index `index`.

    lo / hi: sorted indices of the boundary quantiles (None at the edges);
    local: the rescaled target q' = (q - q_lo) / (q_hi - q_lo); level: 0 at the root.
    """

    index: int
    level: int
    lo: int | None
    hi: int | None
    local: Fraction


def joint_levels(k: int) -> int:
    """D = ceil(log2(k + 1)): the number of levels of the recursion on k quantiles."""
    return check_cells(k, "number of quantiles").bit_length()


def joint_level_budgets(epsilon: object, k: int) -> tuple[Fraction, ...]:
    """eps_l = eps / D for each of the D levels (every node of level l runs at eps_l)."""
    eps = check_epsilon(epsilon)
    levels = joint_levels(k)
    return tuple(eps / levels for _ in range(levels))


def joint_sorted_quantiles(quantiles: Sequence[object]) -> tuple[Fraction, ...]:
    """The quantiles as exact Fractions in [0, 1], sorted; refused if empty or repeated."""
    qs = []
    for quantile in quantiles:
        q = to_fraction(quantile, "quantile")
        if not 0 <= q <= 1:
            msgid = gettext_noop("quantile must be in [0, 1], got %(quantile)s")
            raise PrivacyParameterError(msgid, quantile=repr(quantile))
        qs.append(q)
    if not qs:
        raise PrivacyParameterError(gettext_noop("name at least one quantile"))
    if len(set(qs)) != len(qs):
        raise PrivacyParameterError(gettext_noop("each quantile may be named only once"))
    return tuple(sorted(qs))


def joint_tree(quantiles: Sequence[Fraction]) -> tuple[JointNode, ...]:
    """The nodes for SORTED distinct quantiles, parents before children (pre-order)."""
    nodes: list[JointNode] = []

    def visit(first: int, stop: int, lo: int | None, hi: int | None, level: int) -> None:
        if first >= stop:
            return
        mid = first + (stop - first) // 2
        q_lo = Fraction(0) if lo is None else quantiles[lo]
        q_hi = Fraction(1) if hi is None else quantiles[hi]
        local = (quantiles[mid] - q_lo) / (q_hi - q_lo)
        nodes.append(JointNode(mid, level, lo, hi, local))
        visit(first, mid, lo, mid, level + 1)
        visit(mid + 1, stop, mid, hi, level + 1)

    visit(0, len(quantiles), None, None, 0)
    return tuple(nodes)


def _paths(tree: Sequence[JointNode]) -> dict[int, set[int]]:
    """For each sorted index, the indices of the nodes its bound depends on (its path)."""
    paths: dict[int, set[int]] = {}
    for node in tree:
        path = {node.index}
        for parent in (node.lo, node.hi):
            if parent is not None:
                path |= paths[parent]
        paths[node.index] = path
    return paths


def joint_rank_error_bounds(
    *,
    epsilon: object,
    quantiles: Sequence[object],
    contribution_bound: object = 1,
    candidates: object,
    confidence: object,
    simultaneous: bool = False,
) -> list[float]:
    """t_i (ranks) per quantile, in the order given: with probability >= confidence,
    |#{x < c_sel} - q_i n| <= t_i + P_i for every dataset (module docstring; P_i the
    path-weighted grid resolution). simultaneous: all k hold at once (beta / k per node).

    t_i = tau_i + (1 - q'_i) t_lo + q'_i t_hi, tau_i = utility_error_bound at the node's
    level budget, sensitivity max(q', 1 - q') L, m candidates and its share of beta.
    """
    qs = joint_sorted_quantiles(quantiles)
    bound = check_contribution_bound(contribution_bound)
    m = check_cells(candidates, "candidates")
    beta = float(1 - check_confidence(confidence))
    budgets = joint_level_budgets(epsilon, len(qs))
    tree = joint_tree(qs)
    paths = _paths(tree)
    sorted_bounds: dict[int, float] = {}
    for node in tree:
        share = beta / (len(tree) if simultaneous else len(paths[node.index]))
        sorted_bounds[node.index] = _path_bound(tree, node.index, budgets, bound, m, share)
    return [sorted_bounds[qs.index(to_fraction(q, "quantile"))] for q in quantiles]


def _path_bound(
    tree: Sequence[JointNode], index: int, budgets: Sequence[Fraction], bound: int, m: int,
    beta: float,
) -> float:  # fmt: skip
    """t of the node of sorted index `index` when every node on its path fails w.p. beta:
    its own permute-and-flip tail plus the interpolated bounds of its boundaries."""
    by_index = {node.index: node for node in tree}
    taus: dict[int, float] = {}

    def tau(node: JointNode) -> float:
        if node.index not in taus:
            taus[node.index] = utility_error_bound(
                epsilon=budgets[node.level],
                sensitivity=max(node.local, 1 - node.local) * bound,
                candidates=m,
                beta=beta,
            )
        return taus[node.index]

    def total(node: JointNode) -> float:
        t = tau(node)
        for parent, weight in ((node.lo, 1 - node.local), (node.hi, node.local)):
            if parent is not None:
                t += float(weight) * total(by_index[parent])
        return t

    return total(by_index[index])


def joint_epsilon_for_rank_error(
    *,
    rank_error: object,
    quantiles: Sequence[object],
    contribution_bound: object = 1,
    candidates: object,
    confidence: object,
    simultaneous: bool = False,
) -> Fraction:
    """The smallest total eps (3 significant digits, rounded up) whose joint bounds t_i
    are all <= `rank_error`. Every tau scales as 1 / eps, hence every t_i: eps = the
    widest bound at eps = 1 over the target; the loop only absorbs float rounding."""
    target = to_fraction(rank_error, "rank_error")
    if target <= 0:
        msgid = gettext_noop("rank_error must be > 0, got %(rank_error)s")
        raise PrivacyParameterError(msgid, rank_error=repr(rank_error))

    def widest(eps: Fraction) -> float:
        return max(
            joint_rank_error_bounds(
                epsilon=eps,
                quantiles=quantiles,
                contribution_bound=contribution_bound,
                candidates=candidates,
                confidence=confidence,
                simultaneous=simultaneous,
            )
        )

    eps = round_up_sig(Fraction(widest(Fraction(1)) / float(target)), 3)
    while widest(eps) > target:
        eps = round_up_sig(eps * Fraction(1001, 1000), 3)
    return eps


def joint_resolution_weights(quantiles: Sequence[object]) -> list[float]:
    """W_i = sum of the interpolation weights on quantile i's path (in the order given):
    its resolution term P_i is at most W_i h (module docstring); W_i = 1 for the root."""
    qs = joint_sorted_quantiles(quantiles)
    weights: dict[int, float] = {}
    for node in joint_tree(qs):
        w = 1.0
        for parent, weight in ((node.lo, 1 - node.local), (node.hi, node.local)):
            if parent is not None:
                w += float(weight) * weights[parent]
        weights[node.index] = w
    return [weights[qs.index(to_fraction(q, "quantile"))] for q in quantiles]
