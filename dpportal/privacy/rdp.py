"""Renyi-DP accounting of mechanism records: the tight bound for multivariate Gaussian vectors.

Why: a `zcdp_gaussian` record (a grouped or spread vector of iid discrete
Gaussian noise on which one person can move several coordinates) has no
exact one-dimensional privacy profile, so the PLD accountant
(dpportal.privacy.pld) can only take it as a generic (eps, delta) stand-in:
five grouped sums of (1, 1e-6) cost epsilon 5 there, and twenty never fit a
(10, 1e-5) cap, their deltas alone adding past it. What IS proven for it is
zCDP: rho = Delta2**2 / (2 sigma**2) (Canonne, Kamath, Steinke 2020, Thm 14),
i.e. D_alpha(P || Q) <= alpha rho for every order alpha > 1. Renyi DP
(Mironov 2017) composes exactly that: the Renyi divergences of an adaptive
sequence add up at each order (Mironov 2017, Prop. 1), and an RDP curve gives
(eps, delta)-DP by the conversion of Canonne, Kamath, Steinke 2020, Prop. 12
(= Asoodeh et al. 2020, eq. 20), which dp_accounting's
`rdp_privacy_accountant.compute_epsilon` implements (used here as it is).

Each record's RDP curve, per use (valid upper bounds, never under-charging):
- zcdp_gaussian: alpha rho, rho = Delta2**2 / (2 sigma**2) (CKS 2020, Thm 14).
- discrete_gaussian (one coordinate moved by at most Delta, or a histogram
  whose pattern v has ||v||_2 <= ||v||_1 <= L = Delta): alpha Delta**2 / (2 sigma**2),
  the same theorem; for the histogram it needs no shift-pattern argument.
- pure eps-DP records (discrete_laplace with eps = Delta/b, report_noisy_max,
  permute_and_flip, generic with delta = 0): the Renyi divergence of binary
  randomized response with ratio e**eps,
  D_alpha = ln((e**(alpha eps) + e**((1 - alpha) eps)) / (1 + e**eps)) / (alpha - 1).
  Every eps-DP pair is a post-processing of this pair (Kairouz, Oh, Viswanath
  2015, Thm 2.1, with Blackwell's theorem), and Renyi divergence cannot grow by
  post-processing (van Erven & Harremoes 2014, Thm 9), so it bounds them all.
  (The continuous Laplace formula would NOT be valid for the discrete Laplace:
  at sensitivity 1 the discrete Laplace pair IS randomized response, which is
  more distinguishable than the continuous Laplace at the same eps.)
- generic (eps, delta) with delta > 0: no finite Renyi divergence (the delta
  atom), so +inf: the RDP bound then says nothing, and the other two bounds
  (PLD, basic sums) still hold.

How it is used (dpportal.privacy.pld): the project's RDP bound is a third valid
(eps, delta) statement about the same mechanisms, beside the PLD bound (zCDP
records as their generic stand-ins) and basic composition; the project is
within its cap when ANY of them is, and its stated loss is the smallest.

Orders: dp_accounting's DEFAULT_RDP_ORDERS (1.1 to 1024); any finite set of
orders gives a valid bound (fewer orders only loosen it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS, compute_epsilon

from dpportal.privacy.mechanism_records import MechanismRecord, merge_records

__all__ = [
    "ORDERS",
    "record_rdp",
    "compose_rdp",
    "rdp_epsilon",
    "rdp_within",
    "randomized_response_rdp",
]

ORDERS = np.array(DEFAULT_RDP_ORDERS, dtype=np.float64)
DELTA_MARGIN = 1e-6
EPSILON_MARGIN = 1e-9


def randomized_response_rdp(epsilon: float, orders: np.ndarray = ORDERS) -> np.ndarray:
    """D_alpha of binary randomized response with ratio e**eps: dominates every eps-DP pair."""
    a = np.asarray(orders, dtype=np.float64)
    log_sum = np.logaddexp(a * epsilon, (1.0 - a) * epsilon) - np.logaddexp(0.0, epsilon)
    return np.maximum(log_sum / (a - 1.0), 0.0)


def _pure_epsilon(record: MechanismRecord) -> float | None:
    if record.kind == "discrete_laplace":
        return float(record.sensitivity / record.scale)
    if record.kind in ("report_noisy_max", "permute_and_flip"):
        return float(record.epsilon)
    if record.kind == "generic_eps_delta" and record.delta == 0:
        return float(record.epsilon)
    return None


def _rho_upper(rho: Fraction) -> float:
    """float(rho) rounded up (never below the exact rational)."""
    value = float(rho)
    return value if Fraction(value) >= rho else math.nextafter(value, math.inf)


def record_rdp(record: MechanismRecord) -> np.ndarray:
    """The RDP curve of ONE use of the record's mechanism over ORDERS (module docstring)."""
    if record.rho is not None:
        return _rho_upper(record.rho) * ORDERS
    pure = _pure_epsilon(record)
    if pure is not None:
        return randomized_response_rdp(pure)
    return np.full(ORDERS.shape, np.inf)


def compose_rdp(records: Iterable[MechanismRecord]) -> np.ndarray:
    """The composed RDP curve: count x each record's curve, added up (Mironov 2017, Prop. 1)."""
    total = np.zeros(ORDERS.shape)
    for record in merge_records(records):
        total = total + record.count * record_rdp(record)
    return total


def rdp_epsilon(rdp: np.ndarray, delta: object) -> float:
    """The epsilon at `delta` of an RDP curve (CKS 2020 Prop. 12 via dp_accounting); inf if none."""
    dlt = float(delta)
    if not np.any(rdp):
        return 0.0
    if dlt <= 0 or not np.any(np.isfinite(rdp)):
        return math.inf
    return float(compute_epsilon(ORDERS, rdp, dlt * (1 - DELTA_MARGIN))[0])


def rdp_within(rdp: np.ndarray, epsilon_cap: object, delta_cap: object) -> bool:
    """The RDP bound keeps the composition within (epsilon_cap, delta_cap) (margins as pld)."""
    return rdp_epsilon(rdp, delta_cap) <= float(epsilon_cap) - EPSILON_MARGIN
