"""How many more releases like a candidate fit under a cap: bounded searches, one per bound.

The count a page shows beside a cap check ("12 releases like this one fit").
Each valid accounting bound (dpportal.privacy.pld, module docstring points 4
and 4b) gives its own count, and the largest is the answer, since the project
is within its cap when ANY bound says so. Every search here has a stated bound,
so its cost never depends on the cap's size (a cap of 1e6 costs what a cap of
10 does):

- basic sums: closed form, exact, up to MAX_FIT;
- Renyi DP: doubling and bisection on m, one RDP curve evaluation a probe
  (about 40 cheap probes at most), up to MAX_FIT;
- PLD: doubling and bisection on m, one self-composition of the candidate
  (dp_accounting's `self_compose`: one FFT power) and one convolution with the
  history a probe, up to MAX_PLD_FIT compositions and only while the
  self-composition stays under MAX_FIT_GRID grid points (predicted by
  dp_accounting's own bounds before it is built).

Past a bound a search answers the largest m it checked to fit, marked
incomplete; `Fit.at_least` is then set and the count reads "at least m". It is
never more than was verified to fit, and the count is information only: the
verdict on the candidate itself is made by the cap check, never from here.
All searches assume the verdict is monotone in m (more uses never lose less).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from dp_accounting.pld import common as pld_common
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

from dpportal.privacy.accounting import Cost
from dpportal.privacy.pld_pmfs import TAIL_TRUNCATION
from dpportal.privacy.rdp import rdp_within

__all__ = [
    "MAX_FIT",
    "MAX_PLD_FIT",
    "MAX_FIT_GRID",
    "Fit",
    "basic_fit",
    "largest_fitting",
    "pld_fit",
    "rdp_fit",
]

#: the fit counts stop at MAX_FIT (1,048,576) releases: more is shown as "at least"
MAX_FIT = 1 << 20
#: the PLD fit count composes the candidate with itself at most MAX_PLD_FIT (4,096) times
MAX_PLD_FIT = 1 << 12
#: ... and builds no self-composition wider than MAX_FIT_GRID (1,048,576) grid points
MAX_FIT_GRID = 1 << 20

#: one search's answer: (the largest m checked to fit, whether the search was complete)
Count = tuple[int, bool]


@dataclass(frozen=True)
class Fit:
    """How many releases like a candidate fit (the candidate included), by any bound.

    count: the largest number checked to fit; at_least: a search stopped at one of
    its bounds (MAX_FIT, MAX_PLD_FIT, MAX_FIT_GRID) with more possibly fitting, so
    the count is a lower bound ("at least count"), never an overstatement.
    """

    count: int
    at_least: bool

    @classmethod
    def of(cls, *counts: Count) -> Fit:
        """The largest of the bounds' counts; "at least" when any search was cut short."""
        return cls(max(m for m, _ in counts), not all(complete for _, complete in counts))


def basic_fit(history: Cost, one: Cost, epsilon_cap: Fraction, delta_cap: Fraction) -> Count:
    """The largest m <= MAX_FIT with history + m * one within both caps, exactly (0 if
    none); incomplete when more than MAX_FIT fit."""
    if history.epsilon > epsilon_cap or history.delta > delta_cap:
        return 0, True
    if one.epsilon == 0 and one.delta == 0:
        return MAX_FIT, False
    fits = (epsilon_cap - history.epsilon) // one.epsilon if one.epsilon > 0 else None
    if one.delta > 0:
        by_delta = (delta_cap - history.delta) // one.delta
        fits = by_delta if fits is None else min(fits, by_delta)
    return int(min(fits, MAX_FIT)), fits <= MAX_FIT


def largest_fitting(fits: Callable[[int], bool | None], start: int) -> Count:
    """The largest m <= MAX_FIT with fits(m), for fits monotone in m and fits(start) true:
    doubling from `start` to the first m that does not fit, then bisection.

    fits(m) None means "too costly to tell" (a bound): the search stops there with
    the largest m seen to fit, incomplete.
    """
    if start >= MAX_FIT:
        return MAX_FIT, False
    good, bad = start, max(2 * start, 1)
    while True:
        verdict = fits(min(bad, MAX_FIT))
        if verdict is None:
            return good, False
        if not verdict:
            bad = min(bad, MAX_FIT)
            break
        if bad >= MAX_FIT:
            return MAX_FIT, False
        good, bad = bad, 2 * bad
    while bad - good > 1:
        mid = (good + bad) // 2
        verdict = fits(mid)
        if verdict is None:
            return good, False
        good, bad = (mid, bad) if verdict else (good, mid)
    return good, True


def _self_compose_size(candidate: PrivacyLossDistribution, m: int) -> int:
    """Grid points of the candidate composed m times, as dp_accounting will build it."""
    probs = candidate._pmf_remove.to_dense_pmf()._probs  # noqa: SLF001 - dp_accounting pinned
    low, high = pld_common.compute_self_convolve_bounds(probs, m, TAIL_TRUNCATION)
    return int(high - low + 1)


def pld_fit(
    fits_after: Callable[[PrivacyLossDistribution], bool],
    candidate: PrivacyLossDistribution,
    start: int,
) -> Count:
    """The largest m with fits_after(candidate composed m times) (the history and the cap
    are the caller's), up to MAX_PLD_FIT compositions and MAX_FIT_GRID grid points.

    `start`: known to fit (or 0). About 2 log2(m) probes, at most 2 log2(MAX_PLD_FIT).
    """

    def fits(m: int) -> bool | None:
        if m == 0:
            return True
        if m > MAX_PLD_FIT or _self_compose_size(candidate, m) > MAX_FIT_GRID:
            return None
        return fits_after(candidate.self_compose(m, TAIL_TRUNCATION))

    return largest_fitting(fits, start)


def rdp_fit(
    history: np.ndarray, one: np.ndarray, epsilon_cap: Fraction, delta_cap: Fraction
) -> Count:
    """The largest m <= MAX_FIT with history + m * one within the cap by Renyi DP."""

    def fits(m: int) -> bool:
        return rdp_within(history + m * one, epsilon_cap, delta_cap)

    if not fits(1):
        return 0, True
    return largest_fitting(fits, 1)
