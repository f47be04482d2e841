"""Pessimistic privacy loss distributions (PLD) of recorded mechanisms, and their composition.

See dpportal.privacy.pld for why each step is sound. Here: a mechanism's
privacy profile (dpportal.privacy.privacy_profiles) on the grid
eps_i = i * DISCRETISATION becomes a pessimistic connect-the-dots PMF
(Doroshenko et al. 2022, Alg. 1), cached by the mechanism's exact parameters;
equal mechanisms are self-composed by dp_accounting (one FFT power), distinct
ones convolved in a balanced tree with dp_accounting's pessimistic tail
truncation. The PMFs are dp_accounting's DensePLDPmf; the result is its
PrivacyLossDistribution, whose get_epsilon_for_delta / get_delta_for_epsilon
read the guarantee.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
from scipy import signal

from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.privacy_profiles import (
    dgauss_loss_range,
    dgauss_profile,
    dlap_loss_range,
    dlap_profile,
    generic_profile,
)

__all__ = [
    "DISCRETISATION",
    "MAX_GRID_POINTS",
    "TAIL_TRUNCATION",
    "connect_dots_pmf",
    "mechanism_pld",
    "compose_records",
]

DISCRETISATION = 1e-3
MAX_GRID_POINTS = 200_000
TAIL_TRUNCATION = 1e-15


def _from_profile(
    low: float, high: float, profile: Callable[[np.ndarray], np.ndarray]
) -> PrivacyLossDistribution | None:
    """Pessimistic connect-the-dots PLD on the grid covering [low, high]; None if too wide."""
    lower = math.floor(low / DISCRETISATION)
    upper = math.ceil(high / DISCRETISATION)
    if upper - lower + 1 > MAX_GRID_POINTS:
        return None
    epsilons = np.arange(lower, upper + 1, dtype=np.float64) * DISCRETISATION
    return PrivacyLossDistribution(connect_dots_pmf(lower, profile(epsilons)))


def connect_dots_pmf(lower: int, deltas: np.ndarray) -> pld_pmf.DensePLDPmf:
    """The pessimistic connect-the-dots PMF on eps_i = (lower + i) d from delta(eps_i).

    Doroshenko et al. 2022, Alg. 1 with a fixed gap d, exactly as
    dp_accounting's pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap
    computes it (a test checks equality), built as a dense array directly
    instead of through a dict of (loss, mass) pairs, which is ~10x slower:
    p_1 = 1 - delta_1 + (delta_2 - delta_1)/(e**d - 1);
    p_i = ((delta_{i+1} - delta_i) - e**d (delta_i - delta_{i-1}))/(e**d - 1);
    p_n = (delta_n - delta_{n-1})/(e**-d - 1); mass delta_n at +infinity.
    """
    deltas = np.minimum.accumulate(np.asarray(deltas, dtype=np.float64))
    d = DISCRETISATION
    if deltas.size == 1:
        return pld_pmf.DensePLDPmf(d, lower, np.array([1 - deltas[0]]), deltas[0], True)
    diffs = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(d)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(d)) / math.expm1(d)
    probs[-1] = diffs[-1] / math.expm1(-d)
    return pld_pmf.DensePLDPmf(d, lower, np.maximum(probs, 0.0), float(deltas[-1]), True)


def _generic_pld(epsilon: float, delta: float) -> PrivacyLossDistribution:
    pld = _from_profile(-epsilon, epsilon, lambda e: generic_profile(epsilon, delta, e))
    if pld is None:  # eps above ~100: the single-point PLD of dp_accounting (still pessimistic)
        upper = math.ceil(epsilon / DISCRETISATION)
        pmf = pld_pmf.DensePLDPmf(DISCRETISATION, upper, np.array([1.0 - delta]), delta, True)
        pld = PrivacyLossDistribution(pmf)
    return pld


@functools.lru_cache(maxsize=4096)
def _pld_for_key(key: tuple) -> PrivacyLossDistribution:
    kind, epsilon, delta, sensitivity, scale, sigma = key
    pld = None
    if kind == "discrete_laplace":
        sens, b = int(sensitivity), float(scale)
        low, high = dlap_loss_range(sens, b)
        pld = _from_profile(low, high, lambda e: dlap_profile(sens, b, e))
    elif kind == "discrete_gaussian":
        sens, s = int(sensitivity), float(sigma)
        low, high = dgauss_loss_range(sens, s)
        pld = _from_profile(low, high, lambda e: dgauss_profile(sens, s, e))
    if pld is None:  # report_noisy_max, generic_eps_delta, or a loss range too wide
        pld = _generic_pld(float(epsilon), float(delta))
    return pld


def mechanism_pld(record: MechanismRecord) -> PrivacyLossDistribution:
    """The pessimistic PLD of ONE use of the record's mechanism (cached by its parameters)."""
    return _pld_for_key(record.key)


def _truncate(probs: np.ndarray) -> tuple[int, np.ndarray, float]:
    """dp_accounting's pessimistic tail truncation (pld_pmf._truncate_tails), vectorised.

    Drops the longest prefix and suffix of mass <= TAIL_TRUNCATION/2 each; the
    prefix's mass is added to the first kept loss (moved up: pessimistic), the
    suffix's goes to +infinity. Returns (offset, probs, mass to infinity).
    """
    half = TAIL_TRUNCATION / 2
    left = int(np.searchsorted(np.cumsum(probs), half, side="right"))
    right = probs.size - int(np.searchsorted(np.cumsum(probs[::-1]), half, side="right"))
    right = max(right, left + 1)
    kept = probs[left:right].copy()
    kept[0] += probs[:left].sum()
    return left, kept, float(probs[right:].sum())


def _compose_pmfs(a: pld_pmf.DensePLDPmf, b: pld_pmf.DensePLDPmf) -> pld_pmf.DensePLDPmf:
    """Convolution of two PLD PMFs: DensePLDPmf.compose of dp_accounting, same arithmetic.

    Written out (a test checks it against the library) because with a thousand
    small distinct mechanisms the library's per-call overhead (a Python loop
    over the tails) dominated the cap check; direct convolution for small arrays.
    """
    pa, pb = a._probs, b._probs  # noqa: SLF001 - dp_accounting pinned; see the test
    if pa.size * pb.size <= 1 << 16:
        probs = np.convolve(pa, pb)
    else:
        probs = signal.fftconvolve(pa, pb)
    inf_a, inf_b = a._infinity_mass, b._infinity_mass  # noqa: SLF001
    offset, probs, right = _truncate(probs)
    return pld_pmf.DensePLDPmf(
        DISCRETISATION,
        a._lower_loss + b._lower_loss + offset,  # noqa: SLF001
        probs,
        inf_a + inf_b - inf_a * inf_b + right,
        True,
    )


def _compose_tree(pmfs: list[pld_pmf.DensePLDPmf]) -> pld_pmf.DensePLDPmf:
    """Convolve PMFs pairwise, level by level: sizes stay balanced, so the FFTs stay small."""
    while len(pmfs) > 1:
        paired = [_compose_pmfs(a, b) for a, b in zip(pmfs[0::2], pmfs[1::2], strict=False)]
        if len(pmfs) % 2:
            paired.append(pmfs[-1])
        pmfs = paired
    return pmfs[0]


def compose_records(records: Iterable[MechanismRecord]) -> PrivacyLossDistribution | None:
    """The composed pessimistic PLD of all records (None when there are none)."""
    parts = []
    for record in merge_records(records):
        one = mechanism_pld(record)
        if record.count > 1:
            one = one.self_compose(record.count, TAIL_TRUNCATION)
        parts.append(one._pmf_remove.to_dense_pmf())  # noqa: SLF001 - symmetric PLDs only
    return PrivacyLossDistribution(_compose_tree(parts)) if parts else None
