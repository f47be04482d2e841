"""Privacy cost accounting with exact arithmetic (pure functions; the ledger lives elsewhere).

Rules (DESIGN.md section 4):
- Sequential composition: mechanisms with costs (eps_i, delta_i) on the same
  data together cost (sum eps_i, sum delta_i) (Dwork & Roth 2014, Thm 3.16;
  Thm B.2 for k mechanisms). Statistics within a release, and releases within
  a project, compose this way.
- Parallel composition: the cells of one histogram are disjoint (one row, hence
  one person's L rows, only touch the cells it falls in, and the sensitivity
  already counts all L of them), so a histogram costs its (eps, delta) once
  (McSherry 2009, Thm 4).
- A mean is a sum and a count: its budget is split between the two parts and
  the parts compose sequentially, so the mean costs exactly its (eps, delta).
- Group privacy: an eps-DP mechanism protects a group of g privacy units with
  g * eps (Dwork & Roth 2014, Thm 2.2); with delta > 0 the group delta becomes
  g e**((g-1) eps) delta (Vadhan 2017, Lemma 2.2 style bound).
- zCDP: rho values add under composition (Bun & Steinke 2016, Lemma 1.7).

Amounts are Fractions: no float is ever summed near a cap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import (
    check_cells,
    check_delta,
    check_epsilon,
    check_mechanism,
    exact_str,
    to_fraction,
)

__all__ = [
    "STATISTIC_KINDS",
    "Cost",
    "ZERO",
    "statistic_cost",
    "mean_budget_split",
    "release_cost",
    "compose_sequential",
    "group_privacy",
    "group_privacy_delta",
    "compose_zcdp",
]

STATISTIC_KINDS = ("count", "histogram", "sum", "mean", "argmax")


@dataclass(frozen=True)
class Cost:
    """An exact (epsilon, delta) privacy cost; adding two costs is sequential composition."""

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        eps = to_fraction(self.epsilon, "epsilon")
        dlt = to_fraction(self.delta, "delta")
        if eps < 0 or dlt < 0:
            raise PrivacyParameterError(gettext_noop("a cost's epsilon and delta must be >= 0"))
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(self.epsilon + other.epsilon, self.delta + other.delta)

    def to_dict(self) -> dict[str, str]:
        """{"epsilon": exact string, "delta": exact string}."""
        return {"epsilon": exact_str(self.epsilon), "delta": exact_str(self.delta)}


ZERO = Cost(Fraction(0), Fraction(0))


def _share(sum_share: object) -> Fraction:
    share = to_fraction(sum_share, "sum_share")
    if not 0 < share < 1:
        raise PrivacyParameterError(
            gettext_noop("sum_share must be in (0, 1), got %(sum_share)s"),
            sum_share=repr(sum_share),
        )
    return share


def mean_budget_split(
    *, epsilon: object, delta: object = 0, sum_share: object = Fraction(1, 2)
) -> tuple[Cost, Cost]:
    """Split a mean's budget: (sum part, count part) = (s (eps, delta), (1 - s)(eps, delta)).

    The two parts compose sequentially back to exactly (eps, delta).
    """
    eps = check_epsilon(epsilon)
    dlt = to_fraction(delta, "delta")
    share = _share(sum_share)
    return Cost(eps * share, dlt * share), Cost(eps * (1 - share), dlt * (1 - share))


def statistic_cost(
    *,
    kind: str,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    cells: object = 1,
) -> Cost:
    """The (eps, delta) one statistic charges, given the budget assigned to it.

    count, sum, argmax: (eps, delta). histogram: (eps, delta) however many cells
    (parallel composition). mean: the sum part plus the count part, i.e.
    (eps, delta). argmax is Report Noisy Max with Laplace noise: pure, delta = 0.
    """
    if kind not in STATISTIC_KINDS:
        raise PrivacyParameterError(
            gettext_noop("unknown statistic kind %(kind)s"), kind=repr(kind)
        )
    mech = check_mechanism(mechanism)
    if kind == "argmax" and mech != "laplace":
        raise PrivacyParameterError(
            gettext_noop("argmax (Report Noisy Max) uses Laplace noise only")
        )
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, mechanism=mech)
    check_cells(cells, "cells")
    if kind == "mean":
        return release_cost(mean_budget_split(epsilon=eps, delta=dlt))
    return Cost(eps, dlt)


def release_cost(costs: Iterable[Cost]) -> Cost:
    """Cost of one release: its statistics compose sequentially (sum of eps, sum of delta)."""
    return compose_sequential(costs)


def compose_sequential(costs: Iterable[Cost]) -> Cost:
    """Basic sequential composition: (sum eps_i, sum delta_i) (Dwork & Roth 2014, Thm 3.16)."""
    total = ZERO
    for cost in costs:
        total = total + cost
    return total


def group_privacy(epsilon: object, group_size: object) -> Fraction:
    """Epsilon protecting a group of g privacy units: g * eps (Dwork & Roth 2014, Thm 2.2)."""
    eps = check_epsilon(epsilon)
    return check_cells(group_size, "group_size") * eps


def group_privacy_delta(cost: Cost, group_size: object) -> float:
    """Delta for a group of g units under (eps, delta)-DP: g e**((g-1) eps) delta (upper bound)."""
    g = check_cells(group_size, "group_size")
    if cost.delta == 0:
        return 0.0
    return min(1.0, g * math.exp((g - 1) * float(cost.epsilon)) * float(cost.delta))


def compose_zcdp(rhos: Iterable[object]) -> Fraction:
    """Total zCDP rho of several Gaussian statistics: the rhos add (Bun & Steinke 2016)."""
    return sum((to_fraction(r, "rho") for r in rhos), Fraction(0))
