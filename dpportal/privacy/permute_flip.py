"""Permute-and-flip, sampled exactly: integer utilities, CSPRNG order, exact coins.

Source: R. McKenna, D. Sheldon, "Permute-and-Flip: A new mechanism for
differentially private selection", NeurIPS 2020 (MS20), Algorithm 1.

Given integer utilities u_1..u_m of m public candidates, u* = max u_j and a
utility sensitivity Delta (max over neighbouring datasets of |u_j(D) - u_j(D')|,
for every j):

    visit the candidates in a uniformly random order;
    accept candidate j with probability p_j = exp(eps (u_j - u*) / (2 Delta));
    return the first accepted candidate.

A candidate with u_j = u* has p_j = 1, so the walk always stops. MS20 Thm 1:
this is eps-DP (same guarantee as the exponential mechanism with the same
exponent), and MS20 Thm 2: its expected utility is never below the exponential
mechanism's.

Exactness (nothing here evaluates a float exp or log, and no Gumbel trick):
- eps = a/b is an exact Fraction and Delta a positive rational r/s, so
  g_j = eps (u* - u_j) / (2 Delta) = (a s (u* - u_j)) / (2 b r) is an exact
  rational; the coin is Bernoulli(exp(-g_j)) from exact.bernoulli_exp
  (Canonne, Kamath, Steinke 2020, Algorithm 1), decided by integer comparisons
  of CSPRNG words.
- The order: every candidate gets an independent uniform 64-bit key from the
  RandomSource; the candidates sorted by key are a uniformly random permutation
  (i.i.d. keys are exchangeable). The event "two keys tie" is symmetric under
  permutations, so rejecting it (and drawing all keys again) keeps the order
  exactly uniform; it has probability < m**2 / 2**65.
- Drawing every coin up front and returning the first success in the visiting
  order has the same law as flipping them one at a time (the coins are
  independent of each other and of the order), and lets numpy vectorise.

Randomness comes from `os.urandom` unless a test passes `rng` explicitly
(dpportal.privacy.rng). Running time depends on the coins: never show it.
"""

from __future__ import annotations

import math

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.exact import bernoulli_exp
from dpportal.privacy.params import check_epsilon, to_fraction
from dpportal.privacy.rng import RandomSource, resolve_rng

__all__ = [
    "MAX_CANDIDATES",
    "acceptance_exponents",
    "uniform_orders",
    "permute_and_flip_indices",
    "permute_and_flip",
    "worst_case_miss",
    "utility_error_bound",
]

MAX_CANDIDATES = 100_000
_INT64_SAFE = 1 << 62


def _as_utilities(utilities: object) -> np.ndarray:
    """Utilities as a 2-D integer array (int64, or object of Python ints when large)."""
    arr = np.asarray(utilities)
    if arr.size == 0:
        raise PrivacyParameterError(
            gettext_noop("permute-and-flip needs a non-empty list of candidates")
        )
    if arr.dtype == object:
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in arr.flat):
            raise ValueError("utilities must be integers (scale rational utilities first)")
        arr = np.vectorize(int, otypes=[object])(arr) if arr.size else arr
        if arr.size and max(abs(int(arr.max())), abs(int(arr.min()))) < _INT64_SAFE // 2:
            arr = arr.astype(np.int64)
    elif arr.dtype.kind in "iu" and arr.dtype != np.bool_:
        arr = arr.astype(np.int64)
    else:
        raise ValueError("utilities must be integers (scale rational utilities first)")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise PrivacyParameterError(
            gettext_noop("permute-and-flip needs a non-empty list of candidates")
        )
    if arr.shape[1] > MAX_CANDIDATES:
        raise PrivacyParameterError(
            gettext_noop("at most %(most)s candidates, got %(count)s; use a coarser grid"),
            most=str(MAX_CANDIDATES),
            count=str(arr.shape[1]),
        )
    return arr


def acceptance_exponents(
    utilities: object, *, epsilon: object, sensitivity: object
) -> tuple[np.ndarray, int]:
    """(numerators, denominator) with g_j = numerators[..., j] / denominator exactly.

    g_j = eps (u* - u_j) / (2 Delta), u* the maximum of each row; the acceptance
    probability of candidate j is exp(-g_j) (1 for the best candidates).
    Numerators are int64 when they fit, else Python ints (object array).
    """
    eps = check_epsilon(epsilon)
    delta_u = to_fraction(sensitivity, "sensitivity")
    if delta_u <= 0:
        raise PrivacyParameterError(
            gettext_noop("sensitivity must be > 0, got %(sensitivity)s"),
            sensitivity=repr(sensitivity),
        )
    u = _as_utilities(utilities)
    gaps = u.max(axis=1).reshape(-1, 1) - u  # >= 0; no int64 overflow since |u| < 2**61
    ratio = eps / (2 * delta_u)  # g_j = ratio * gap_j
    small = int(gaps.max()) * ratio.numerator < _INT64_SAFE and ratio.denominator < _INT64_SAFE
    if small and gaps.dtype != object:
        return gaps * np.int64(ratio.numerator), ratio.denominator
    big = np.vectorize(int, otypes=[object])(gaps)
    return big * ratio.numerator, ratio.denominator


def uniform_orders(runs: int, m: int, rng: RandomSource) -> np.ndarray:
    """`runs` independent uniform permutations of range(m), as an int64 (runs, m) array.

    Sort i.i.d. uniform 64-bit keys; rows with a tied key are drawn again
    (exact: see the module docstring).
    """
    orders = np.empty((runs, m), dtype=np.int64)
    pending = np.arange(runs)
    while pending.size:
        keys = rng.words(pending.size * m).reshape(pending.size, m)
        order = np.argsort(keys, axis=1, kind="stable")
        ordered = np.take_along_axis(keys, order, axis=1)
        tied = (np.diff(ordered, axis=1) == 0).any(axis=1) if m > 1 else np.zeros(0, bool)
        good = ~tied if m > 1 else np.ones(pending.size, dtype=bool)
        orders[pending[good]] = order[good]
        pending = pending[~good]
    return orders


def permute_and_flip_indices(
    utilities: object,
    *,
    epsilon: object,
    sensitivity: object,
    rng: RandomSource | None = None,
) -> np.ndarray:
    """Vectorised permute-and-flip: one selected index per row of `utilities`.

    utilities: integers, shape (m,) for one run or (runs, m) for independent runs
    (tests draw many releases at once). sensitivity: Delta of the utilities
    (a positive rational). Returns an int64 array of indices, one per run.
    """
    source = resolve_rng(rng)
    numerators, denominator = acceptance_exponents(
        utilities, epsilon=epsilon, sensitivity=sensitivity
    )
    runs, m = numerators.shape
    if m == 1:
        return np.zeros(runs, dtype=np.int64)
    orders = uniform_orders(runs, m, source)
    visited = np.take_along_axis(numerators, orders, axis=1)
    coins = bernoulli_exp(visited.reshape(-1), denominator, source).reshape(runs, m)
    first = np.argmax(coins, axis=1)  # the best candidate's coin is always heads
    return orders[np.arange(runs), first]


def permute_and_flip(
    utilities: object,
    *,
    epsilon: object,
    sensitivity: object,
    rng: RandomSource | None = None,
) -> int:
    """The index of the candidate permute-and-flip selects (one run; see module docstring).

    eps-DP when `sensitivity` bounds |u_j(D) - u_j(D')| for every candidate j
    and neighbours D, D' (MS20 Thm 1). Only the index may be released.
    """
    arr = np.asarray(utilities, dtype=object)
    if arr.ndim != 1:
        raise ValueError("utilities must be a 1-D list of integers")
    return int(permute_and_flip_indices(arr, epsilon=epsilon, sensitivity=sensitivity, rng=rng)[0])


def worst_case_miss(p: float, m: int) -> float:
    """The largest probability, over all utilities, that permute-and-flip on m candidates
    selects a "bad" candidate, one whose acceptance probability is below p.

    The optimum's coin is always heads. Selecting a bad candidate needs one of its heads
    before the optimum's turn and before every other good candidate's heads: making a
    good non-optimal candidate bad, or raising a bad candidate's coin towards p, can
    only make that likelier. So the worst case is one optimum and m - 1 bad candidates
    each at p (reached in the limit); the optimum is then at a uniform position K and is
    selected iff the K - 1 coins before it are tails:

        P(optimum) = (1/m) sum_{k<m} (1 - p)^k = (1 - (1 - p)^m) / (m p),
        P(bad)    <= 1 - (1 - (1 - p)^m) / (m p)          (about (m - 1) p / 2).

    Half the union bound's (m - 1) p, which the exponential mechanism needs.
    """
    if m <= 1 or p <= 0:
        return 0.0
    if p >= 1:
        return 1 - 1 / m
    tails = math.exp(m * math.log1p(-p))  # (1 - p)^m
    return max(0.0, 1 - (1 - tails) / (m * p))


def utility_error_bound(
    *, epsilon: object, sensitivity: object, candidates: int, beta: float
) -> float:
    """The smallest t (rounded up) with P(u(selected) < u* - t) <= beta for EVERY utility
    vector of `candidates` entries with this sensitivity: permute-and-flip's exact worst
    case (`worst_case_miss` at p = exp(-eps t / (2 Delta))), never the union bound's
    looser (2 Delta / eps) ln(m / beta). 0 for one candidate.
    """
    eps = float(check_epsilon(epsilon))
    delta_u = float(to_fraction(sensitivity, "sensitivity"))
    if not 0 < beta < 1:
        raise ValueError("beta must be in (0, 1)")
    if candidates <= 1:
        return 0.0
    scale = 2 * delta_u / eps
    lo, hi = 0.0, 1.0  # bisection on p: worst_case_miss is increasing in p
    if worst_case_miss(hi, candidates) <= beta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if worst_case_miss(mid, candidates) <= beta:
            lo = mid
        else:
            hi = mid
    p = lo  # the largest p found with miss <= beta: t from it is conservative
    if p <= 0:
        return scale * math.log(candidates / beta)
    return scale * -math.log(p) * (1 + 1e-12)
