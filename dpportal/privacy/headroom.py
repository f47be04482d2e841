"""Headroom: the largest total epsilon of a release that still fits under a project's cap.

A release's allocation is a vector of statistic epsilons; scaling it by a factor gives
the same release at another total epsilon t (less noise for larger t). The verdict
"committed records + the release at t are within (epsilon_cap, delta_cap)" is the one
dpportal.privacy.pld.within_cap gives (PLD epsilon at the cap's delta within the cap, OR
the RDP epsilon within it, OR both basic sums within: any valid bound suffices, see
pld's docstring, points 4 and 4b). It is monotone in t up to rounding: a larger t means
a smaller noise scale relative to the sensitivity for every statistic (Laplace b =
L/eps, Gaussian sigma decreasing in eps), so each mechanism's privacy profile delta(eps)
grows, and so does the composition's (dominating pairs compose: Zhu, Dong, Wang, AISTATS
2022, Thm 10); each RDP curve grows (rho = Delta2**2/(2 sigma**2), randomized response's
divergence in eps) and so does their sum; the basic sum grows linearly. (A sum's grid is
chosen from its epsilon, so its integer sensitivity in grid units moves in steps;
between steps the order can wobble by a rounding.) Bisection therefore finds t* from
below and only ever returns a total it has itself checked to fit; a total `rel_tol`
above it was checked not to (unless the search reached its limit). A caller that rounds
the answer for display checks the rounded value again.

The project's committed records are composed ONCE (the expensive part with a
long history; `ComposedHistory`, kept for the few most recent histories, keyed by
the records' exact parameters: public values only, so a cache hit cannot reveal
anything and a changed ledger is a different key); each probe composes only the
candidate and one convolution. Nothing here sees data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.params import check_epsilon

# The verdict's own helpers, so a probe here and within_cap cannot disagree.
from dpportal.privacy.pld import (
    ComposedHistory,
    _basic_within,
    _check_delta_cap,
    _compose_pair,
    _pld_within,
    basic_cost,
    compose_all,
    compose_records,
)
from dpportal.privacy.rdp import compose_rdp, rdp_within

__all__ = ["ComposedHistory", "Headroom", "compose_history", "largest_fitting_epsilon"]

REL_TOL = 1e-3
MAX_PROBES = 60
HISTORY_CACHE = 8


@functools.lru_cache(maxsize=HISTORY_CACHE)
def _composed(records: frozenset[MechanismRecord]) -> ComposedHistory:
    ordered = sorted(records, key=lambda r: repr((r.key, r.count)))  # one order, one result
    return compose_all(ordered)


def compose_history(records: Iterable[MechanismRecord]) -> ComposedHistory:
    """The composition of `records` (order-free: equal mechanisms merged, then a set)."""
    return _composed(frozenset(merge_records(records)))


@dataclass(frozen=True)
class Headroom:
    """t*: the largest total epsilon found to fit (None: not even `low` fits).

    at_limit: the search stopped at `limit` still fitting (t* >= limit).
    probes: how many cap checks the search took.
    """

    epsilon: float | None
    at_limit: bool
    probes: int


def largest_fitting_epsilon(
    history: ComposedHistory,
    candidate_at: Callable[[float], Sequence[MechanismRecord]],
    *,
    epsilon_cap: object,
    delta_cap: object,
    low: float,
    limit: float,
    hint: float | None = None,
    rel_tol: float = REL_TOL,
) -> Headroom:
    """The largest total epsilon t in [low, limit] whose release fits with `history`.

    candidate_at(t): the release's mechanism records at total epsilon t (its
    allocation scaled). Bisection on log t between a fitting and a non-fitting
    total, to relative precision `rel_tol`: about log2(ln(limit/low)/rel_tol)
    probes (14 for four decades at 1e-3). `hint`: a total that may fit (e.g. where
    the basic sums reach the cap, known in closed form); checked, and when it fits
    the search starts from it, so the answer is never below it.
    """
    eps_cap, dlt_cap = check_epsilon(epsilon_cap, "epsilon_cap"), _check_delta_cap(delta_cap)
    if not 0 < low <= limit or not math.isfinite(limit):
        raise PrivacyParameterError(
            gettext_noop("need 0 < low <= limit, got %(low)s, %(limit)s"),
            low=repr(low),
            limit=repr(limit),
        )
    probes = 0

    def fits(t: float) -> bool:
        nonlocal probes
        probes += 1
        candidate = candidate_at(t)
        if _basic_within(history.basic + basic_cost(candidate), eps_cap, dlt_cap):
            return True
        if rdp_within(history.rdp + compose_rdp(candidate), eps_cap, dlt_cap):
            return True
        after = _compose_pair(history.pld, compose_records(candidate))
        return _pld_within(after, eps_cap, dlt_cap)

    if not fits(low):
        return Headroom(None, False, probes)
    if fits(limit):
        return Headroom(limit, True, probes)
    good, bad = math.log(low), math.log(limit)
    if hint is not None and low < hint < limit and fits(hint):
        good = math.log(hint)
    while bad - good > math.log1p(rel_tol) and probes < MAX_PROBES:
        mid = (good + bad) / 2
        good, bad = (mid, bad) if fits(math.exp(mid)) else (good, mid)
    return Headroom(math.exp(good), False, probes)
