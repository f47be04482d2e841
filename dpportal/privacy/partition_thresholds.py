"""The thresholds of partition selection, and the optimal policy's probabilities.

The mechanisms and their proofs are in dpportal.privacy.partition_selection; here is
the calibration each one needs from public parameters alone: the smallest Laplace
threshold that keeps a person's new keys within delta, the discrete Gaussian's sigma and
threshold under the joint analysis (every split of the person's keys into old and new,
through the PLD accountant), and the optimal one-key policy in exact rationals.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache, partial

from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import round_up_sig
from dpportal.privacy.pld_pmfs import compose_records
from dpportal.privacy.tails import dgauss_log_sf

__all__ = [
    "gauss_tail",
    "gaussian_threshold",
    "laplace_tail",
    "laplace_threshold",
    "new_key_probability",
    "optimal_policy",
    "sqrt_upper",
]

#: the most counts the optimal policy is tabulated for; past them (only at a tiny epsilon)
#: the last probability is kept, which is still a valid (smaller) policy
POLICY_STEPS = 100_000
ONE = 1 << 64


def sqrt_upper(n: int) -> Fraction:
    """A rational upper bound on sqrt(n) (exact for squares)."""
    root = math.isqrt(n)
    if root * root == n:
        return Fraction(root)
    return Fraction(math.isqrt(n * 10**12) + 1, 10**6)


def new_key_probability(tail: float, keys: int) -> float:
    """P[at least one of `keys` new keys is published], each with probability `tail`."""
    return -math.expm1(keys * math.log1p(-tail)) if tail < 1 else 1.0


def laplace_tail(scale: Fraction, m: int) -> float:
    """P[Y >= m] for Y ~ DLap(scale), integer m."""
    a = math.exp(-1.0 / float(scale))
    if m >= 1:
        return math.exp(-m / float(scale)) / (1.0 + a)
    return 1.0 - math.exp(-(1 - m) / float(scale)) / (1.0 + a)


def gauss_tail(sigma: Fraction, m: int) -> float:
    """P[Y >= m] for Y a discrete Gaussian of parameter sigma, integer m."""
    return math.exp(dgauss_log_sf(sigma, m))


def laplace_threshold(eps: Fraction, dlt: Fraction, keys: int) -> int:
    """The smallest tau with 1 - (1 - P[1 + Y >= tau])^keys <= delta, Y ~ DLap(keys / eps)."""
    scale = Fraction(keys) / eps
    target = float(dlt) * (1 - 1e-9)
    return _smallest_threshold(lambda m: laplace_tail(scale, m), keys, target, float(scale))


def _smallest_threshold(tail, keys: int, target: float, width: float) -> int:
    """The smallest tau >= 1 with P[some new key (count 1) is published] <= target, where
    tail(m) = P[noise >= m]: found by doubling then bisection (tail is decreasing)."""

    def ok(tau: int) -> bool:
        return new_key_probability(tail(tau - 1), keys) <= target

    high = 1 + max(1, int(width))
    while not ok(high):
        high *= 2
    low = 1
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return low


def _gaussian_deltas(sigma: Fraction, keys: int, epsilon: float) -> list[float]:
    """delta_j(epsilon) for j = 0..keys: the pessimistic PLD bound (the product's
    accountant) of j discrete Gaussians of sensitivity 1 composed."""
    record = MechanismRecord.discrete_gaussian(
        sensitivity=1, sigma=sigma, epsilon=Fraction(1), delta=Fraction(1, 2)
    )
    out = [0.0]
    for j in range(1, keys + 1):
        pld = compose_records([record] * j)
        assert pld is not None
        out.append(float(pld.get_delta_for_epsilon(epsilon)))
    return out


def _new_key_allowance(deltas: list[float], delta: float, keys: int) -> float:
    """The largest p (a new key's publication probability) with, for every split of the
    person's keys into j old and keys - j new ones, delta_j + 1 - (1 - p)^(keys - j) <=
    delta (0 when none)."""
    allowed = 1.0
    for j in range(keys):
        room = delta - deltas[j]
        if room <= 0:
            return 0.0
        allowed = min(allowed, -math.expm1(math.log1p(-room) / (keys - j)))
    return allowed if deltas[keys] <= delta else 0.0


@lru_cache(maxsize=256)
def gaussian_threshold(eps: Fraction, dlt: Fraction, keys: int) -> tuple[int, Fraction, float]:
    """(tau, sigma, delta of the counts' noise alone) with the lowest tau: the joint analysis
    of noise and threshold (dpportal.privacy.partition_selection), over a public grid of sigmas."""
    target = float(dlt) * (1 - 1e-6)
    low, high = Fraction(1, 10), Fraction(1)
    while _gaussian_deltas(high, keys, float(eps))[keys] > target:
        low, high = high, high * 2
    for _ in range(30):
        mid = round_up_sig((low + high) / 2, 4)
        if mid >= high:
            break
        if _gaussian_deltas(mid, keys, float(eps))[keys] > target:
            low = mid
        else:
            high = mid
    best: tuple[int, Fraction, float] | None = None
    for step in range(16):
        sigma = round_up_sig(high * Fraction(100 + 4 * step, 100), 4)
        deltas = _gaussian_deltas(sigma, keys, float(eps))
        allowance = _new_key_allowance(deltas, target, keys)
        if allowance <= 0:
            continue
        tau = _smallest_threshold(partial(gauss_tail, sigma), 1, allowance, float(sigma))
        tau = _checked_threshold(tau, sigma, keys, float(eps), target)
        if best is None or tau < best[0]:
            best = (tau, sigma, deltas[keys])
    assert best is not None
    return best


def _checked_threshold(tau: int, sigma: Fraction, keys: int, eps: float, delta: float) -> int:
    """Raise tau until the reverse direction holds too: without the person, the empty
    outcome on the new keys is likelier by (1 - p)^-(keys - j), which shifts the old keys'
    epsilon by c_j = -(keys - j) ln(1 - p): delta_j(eps - c_j) <= delta for every j."""
    while True:
        p = gauss_tail(sigma, tau - 1)
        record = MechanismRecord.discrete_gaussian(
            sensitivity=1, sigma=sigma, epsilon=Fraction(1), delta=Fraction(1, 2)
        )
        ok = True
        for j in range(1, keys):
            shift = -(keys - j) * math.log1p(-p)
            pld = compose_records([record] * j)
            assert pld is not None
            if float(pld.get_delta_for_epsilon(eps - shift)) > delta:
                ok = False
                break
        if ok:
            return tau
        tau += 1


def optimal_policy(epsilon: object, delta: object, up_to: int) -> list[int]:
    """Numerators over 2**64 of pi(0..up_to), the optimal one-key policy
    (dpportal.privacy.partition_selection),
    stopping early at 1. A count past the table takes its last value: holding pi constant
    keeps both DP inequalities (the recursion's next value is at least the last one)."""
    eps, dlt = (v if isinstance(v, Fraction) else Fraction(str(v)) for v in (epsilon, delta))
    margin = Fraction(1, 1 << 40)  # float exp is within 1 ulp (2**-52): a safe margin
    grow = Fraction(math.exp(float(eps))) * (1 - margin)  # <= e^eps
    shrink = Fraction(math.exp(-float(eps))) * (1 + margin)  # >= e^-eps
    out = [0]
    pi = Fraction(0)
    for _ in range(min(up_to, POLICY_STEPS)):
        pi = min(grow * pi + dlt, 1 + shrink * (pi + dlt - 1), Fraction(1))
        numerator = math.floor(pi * ONE)
        pi = Fraction(numerator, ONE)
        out.append(numerator)
        if numerator == ONE:
            break
    return out
