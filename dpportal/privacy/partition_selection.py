"""Categories found in the data: which keys of an undeclared column to publish.

A key (a category nobody declared) may be published only if enough persons hold it: a key
held by one person would reveal that person. Each person counts in at most L keys (their
keys are bounded to L, chosen at random, by the compute) and at most once per key, so
adding one person raises at most L key counts by 1 each and creates at most L new keys,
each of count 1. Three mechanisms, chosen by a public rule from (epsilon, delta, L) alone:

- Laplace thresholding (keys with counts): noisy count c + Y, Y ~ DLap(L / epsilon),
  published when it is at least tau. Keys present without the person: their count vector
  moves by at most L in l1, so the noisy counts (and what thresholding keeps of them) are
  epsilon-DP. Keys the person alone brings (count 1): published with probability
  1 - (1 - P[1 + Y >= tau])^L <= delta, tau the smallest integer that makes it so. Hence
  (epsilon, delta)-DP (the standard argument: condition on no new key being published).
- Gaussian thresholding (keys with counts): the same with discrete Gaussian noise of
  parameter sigma, analysed jointly rather than by splitting delta (after Wilkins, Kifer,
  Zhang, Karrer, "Exact privacy analysis of the Gaussian sparse histogram mechanism",
  2024). If the person touches j keys others hold and brings keys - j new ones, the output
  pair factors into j shifted discrete Gaussians (thresholding is post-processing) and
  the new keys, each published with p = P[1 + Z >= tau]. With the person, the new keys'
  privacy loss is +inf with probability 1 - (1 - p)^(keys - j) and negative otherwise, so
  delta(eps) <= 1 - (1 - p)^(keys - j) + delta_j(eps); without the person, the new keys
  shift the loss by c_j = -(keys - j) ln(1 - p) > 0, so delta(eps) <= delta_j(eps - c_j).
  delta_j is the PLD bound of j composed discrete Gaussians of sensitivity 1 (the
  product's accountant, pessimistic). Every j from 0 to keys is checked; sigma is the one
  of a public grid (from the smallest with delta_keys(eps) <= delta up to 1.6 times it)
  that gives the lowest tau. Better than Laplace for larger L, and never worse than
  splitting delta between the noise and the threshold.
- The optimal policy (keys only; Desfontaines, Voss, Gipson, Mandayam, "Differentially
  private partition selection", PoPETs 2022): a key of count n is published with
  probability pi(n), pi(0) = 0, pi(n) = min(e^eps pi(n-1) + delta,
  1 + e^-eps (pi(n-1) + delta - 1), 1), the largest probabilities any (eps, delta)-DP
  selection of one key per person can have. With L keys per person it is run at
  (epsilon / L, delta / L) per key (basic composition over the person's L keys, whose
  decisions are independent). Exact: pi is computed in rationals with a lower bound on
  e^eps in the first term and an upper bound on e^-eps in the second (both make pi(n)
  smaller and keep both DP inequalities true), rounded down to 64-bit numerators, and
  drawn as u < pi(n) 2^64 from one CSPRNG word.

The public rule (`plan_selection`): among the mechanisms that fit the request (both
thresholdings publish counts or, withholding them, keys only; the policy keys only), the
one whose count published with probability one half is lowest. For one key per person
that is Laplace thresholding with counts and the policy without; for five, Gaussian
thresholding either way (the policy pays for composing five keys).

A published count has the noise's interval like any count; a key's absence says only that
its noisy count (or its draw) fell short, never that it is absent from the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import check_epsilon, to_fraction
from dpportal.privacy.partition_thresholds import (
    ONE,
    POLICY_STEPS,
    gauss_tail,
    gaussian_threshold,
    laplace_tail,
    laplace_threshold,
    optimal_policy,
    sqrt_upper,
)
from dpportal.privacy.rng import RandomSource, resolve_rng
from dpportal.privacy.samplers import discrete_gaussian, discrete_laplace

__all__ = [
    "MECHANISMS",
    "KeySelection",
    "optimal_policy",
    "plan_selection",
    "select_keys",
]

MECHANISMS = ("laplace_threshold", "gaussian_threshold", "optimal_policy")
#: the most keys per person a selection accepts (bounds the calibration's work)
MAX_KEYS_PER_PERSON = 100


def _check(
    epsilon: object, delta: object, keys_per_person: object
) -> tuple[Fraction, Fraction, int]:
    eps, dlt = check_epsilon(epsilon), to_fraction(delta, "delta")
    if not 0 < dlt < 1:
        raise PrivacyParameterError(
            gettext_noop(
                "publishing keys found in the data needs a delta above 0 and below 1, got %(value)s"
            ),
            value=str(dlt),
        )
    if (
        isinstance(keys_per_person, bool)
        or not isinstance(keys_per_person, int)
        or not 1 <= keys_per_person <= MAX_KEYS_PER_PERSON
    ):
        raise PrivacyParameterError(
            gettext_noop(
                "keys per person must be a whole number from 1 to %(limit)s, got %(value)s"
            ),
            limit=str(MAX_KEYS_PER_PERSON),
            value=repr(keys_per_person),
        )
    return eps, dlt, keys_per_person


@dataclass(frozen=True)
class KeySelection:
    """A planned selection: its mechanism and every public parameter it uses."""

    mechanism: str
    epsilon: Fraction
    delta: Fraction
    keys_per_person: int
    with_counts: bool
    threshold: int | None = None
    scale: Fraction | None = None
    sigma: Fraction | None = None
    delta_noise: float | None = None

    @cached_property
    def _policy(self) -> list[int]:
        k = self.keys_per_person
        return optimal_policy(self.epsilon / k, self.delta / k, POLICY_STEPS)

    def noise_spec(self) -> NoiseSpec | None:
        """The published counts' noise (None when only keys are published)."""
        if self.mechanism == "laplace_threshold":
            return NoiseSpec(
                statistic="histogram",
                mechanism="laplace",
                epsilon=self.epsilon,
                delta=Fraction(0),
                l1_sensitivity=self.keys_per_person,
                l2_sensitivity=self.keys_per_person,
                contribution_bound=self.keys_per_person,
                cells=1,
                scale=self.scale,
            )
        if self.mechanism == "gaussian_threshold":
            assert self.sigma is not None and self.delta_noise is not None
            l2 = sqrt_upper(self.keys_per_person)
            return NoiseSpec(
                statistic="histogram",
                mechanism="gaussian",
                epsilon=self.epsilon,
                delta=self.delta,
                l1_sensitivity=self.keys_per_person,
                l2_sensitivity=l2,  # type: ignore[arg-type]
                contribution_bound=self.keys_per_person,
                cells=1,
                sigma=self.sigma,
                rho=Fraction(self.keys_per_person) / (2 * self.sigma * self.sigma),
                calibration="pld_composition" if self.keys_per_person > 1 else "cks_thm7",
            )
        return None

    def records(self) -> list[MechanismRecord]:
        """The whole selection as one (epsilon, delta) guarantee (its proof covers both the
        noisy counts and the threshold's delta)."""
        return [MechanismRecord.generic(epsilon=self.epsilon, delta=self.delta)]

    def release_probability(self, count: int) -> float:
        """P[a key held by `count` persons is published] (for previews; float)."""
        if count <= 0:
            return 0.0
        if self.mechanism == "laplace_threshold":
            assert self.scale is not None and self.threshold is not None
            return laplace_tail(self.scale, self.threshold - count)
        if self.mechanism == "gaussian_threshold":
            assert self.sigma is not None and self.threshold is not None
            return gauss_tail(self.sigma, self.threshold - count)
        policy = self._policy
        return policy[min(count, len(policy) - 1)] / ONE

    def count_for_probability(self, probability: float) -> int:
        """The smallest count published with probability >= `probability` (0 < p <= 1)."""
        if not 0 < probability <= 1:
            raise ValueError("probability must be in (0, 1]")
        low, high = 1, 1
        while self.release_probability(high) < probability:
            high *= 2
            if high > 1 << 40:
                raise ValueError("no count reaches that probability")
        while low < high:
            mid = (low + high) // 2
            if self.release_probability(mid) >= probability:
                high = mid
            else:
                low = mid + 1
        return low

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "epsilon": str(self.epsilon),
            "delta": str(self.delta),
            "keys_per_person": self.keys_per_person,
            "with_counts": self.with_counts,
            "threshold": self.threshold,
        }
        if self.scale is not None:
            out["scale"], out["scale_float"] = str(self.scale), float(self.scale)
        if self.sigma is not None:
            out["sigma"], out["sigma_float"] = str(self.sigma), float(self.sigma)
            out["delta_noise"] = self.delta_noise
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KeySelection:
        def opt(name: str) -> Fraction | None:
            return Fraction(data[name]) if data.get(name) is not None else None

        return cls(
            mechanism=str(data["mechanism"]),
            epsilon=Fraction(data["epsilon"]),
            delta=Fraction(data["delta"]),
            keys_per_person=int(data["keys_per_person"]),
            with_counts=bool(data["with_counts"]),
            threshold=data.get("threshold"),
            scale=opt("scale"),
            sigma=opt("sigma"),
            delta_noise=data.get("delta_noise"),
        )


def plan_selection(
    *, epsilon: object, delta: object, keys_per_person: int, with_counts: bool
) -> KeySelection:
    """The selection a statistic will use, chosen from public parameters only: among the
    mechanisms that fit (thresholding publishes counts; any may publish keys only), the
    one whose count published with probability one half is lowest (ties: the first of
    Laplace thresholding, Gaussian thresholding, the optimal policy)."""
    eps, dlt, keys = _check(epsilon, delta, keys_per_person)
    tau_lap = laplace_threshold(eps, dlt, keys)
    tau_gauss, sigma, d1 = gaussian_threshold(eps, dlt, keys)
    candidates = [
        KeySelection(
            "laplace_threshold", eps, dlt, keys, with_counts, tau_lap, Fraction(keys) / eps
        ),
        KeySelection(
            "gaussian_threshold",
            eps,
            dlt,
            keys,
            with_counts,
            tau_gauss,
            sigma=sigma,
            delta_noise=d1,
        ),
    ]
    if not with_counts:
        candidates.append(KeySelection("optimal_policy", eps, dlt, keys, False))
    return min(candidates, key=lambda c: c.count_for_probability(0.5))


def select_keys(
    counts: Mapping[str, int], selection: KeySelection, rng: RandomSource | None = None
) -> dict[str, int | None]:
    """The published keys: key -> noisy count (None when only keys are published).

    counts: distinct persons per key (each person in at most keys_per_person keys); keys
    with a count of 0 are never published."""
    keys = [k for k, c in counts.items() if int(c) > 0]
    values = np.array([int(counts[k]) for k in keys], dtype=np.int64)
    if not keys:
        return {}
    if selection.mechanism == "laplace_threshold":
        noisy = values + discrete_laplace(selection.scale, len(keys), rng)
    elif selection.mechanism == "gaussian_threshold":
        noisy = values + discrete_gaussian(selection.sigma, len(keys), rng)
    else:
        policy = selection._policy
        words = resolve_rng(rng).words(len(keys))
        out: dict[str, int | None] = {}
        for key, count, word in zip(keys, values.tolist(), words.tolist(), strict=True):
            numerator = policy[min(count, len(policy) - 1)]
            if int(word) < numerator:
                out[key] = None
        return out
    assert selection.threshold is not None
    return {
        key: int(value) if selection.with_counts else None
        for key, value in zip(keys, noisy.tolist(), strict=True)
        if value >= selection.threshold
    }
