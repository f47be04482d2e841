"""Partition selection: publishing the keys found in the data that pass a noisy threshold.

A provisional implementation of the interface the product builds on (the Laplace
threshold only); the privacy core's own module replaces it. Each person is counted
in at most `keys_per_person` keys, once in each, so the vector of counts has l1
sensitivity k = keys_per_person. Laplace thresholding: every count gets discrete
Laplace noise of scale b = k / epsilon; a key is published when its noisy count
reaches tau = 1 + ceil(b ln(k / (2 delta))). A key present in one neighbour only
holds one person there, and is published with probability at most
(1/2) exp(-(tau - 1) / b) <= delta / k, so at most delta for the k keys one person
can add (Korolova et al. 2009; Wilson et al. 2020).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec, build_spec
from dpportal.privacy.params import exact_str
from dpportal.privacy.rng import RandomSource

MECHANISMS = ("laplace_threshold", "gaussian_threshold", "optimal_policy")


@dataclass(frozen=True)
class KeySelection:
    """A planned partition selection: its mechanism, parameters and public threshold."""

    mechanism: str
    epsilon: Fraction
    delta: Fraction
    keys_per_person: int
    with_counts: bool
    threshold: int | None

    @property
    def scale(self) -> Fraction:
        return Fraction(self.keys_per_person) / self.epsilon

    def noise_spec(self) -> NoiseSpec | None:
        """The counts' noise (None for keys only)."""
        if not self.with_counts:
            return None
        return self._spec()

    def _spec(self) -> NoiseSpec:
        k = self.keys_per_person
        return build_spec(
            statistic="keys", mechanism="laplace", epsilon=self.epsilon, delta=0,
            l1=k, l2=k, bound=k, cells=1,
        )  # fmt: skip

    def records(self) -> list[MechanismRecord]:
        """One generic (epsilon, delta) record: the threshold's delta is not a noise law's."""
        return [MechanismRecord.generic(epsilon=self.epsilon, delta=self.delta)]

    def release_probability(self, count: int) -> float:
        """P(a key held by `count` persons is published) under continuous Laplace tails."""
        b = float(self.scale)
        gap = count - int(self.threshold or 0)
        if gap >= 0:
            return 1.0 - 0.5 * math.exp(-gap / b)
        return 0.5 * math.exp(gap / b)

    def count_for_probability(self, p: float) -> int:
        """The smallest count published with probability >= p."""
        if not 0 < p < 1:
            raise PrivacyParameterError(gettext_noop("probability must be in (0, 1)"))
        b = float(self.scale)
        tau = int(self.threshold or 0)
        x = tau + b * math.log(2 * p) if p <= 0.5 else tau - b * math.log(2 * (1 - p))
        count = max(0, math.ceil(x - 1e-9))
        while count > 0 and self.release_probability(count - 1) >= p:
            count -= 1
        while self.release_probability(count) < p:
            count += 1
        return count

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "epsilon": exact_str(self.epsilon),
            "delta": exact_str(self.delta),
            "keys_per_person": self.keys_per_person,
            "with_counts": self.with_counts,
            "threshold": self.threshold,
        }
        spec = self.noise_spec()
        if spec is not None:
            out["noise"] = spec.describe()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KeySelection:
        return cls(
            mechanism=str(data["mechanism"]),
            epsilon=Fraction(str(data["epsilon"])),
            delta=Fraction(str(data["delta"])),
            keys_per_person=int(data["keys_per_person"]),
            with_counts=bool(data["with_counts"]),
            threshold=None if data.get("threshold") is None else int(data["threshold"]),
        )


def plan_selection(
    *, epsilon: Fraction, delta: Fraction, keys_per_person: int, with_counts: bool
) -> KeySelection:
    """The selection at (epsilon, delta) for persons holding at most `keys_per_person` keys."""
    epsilon, delta = Fraction(epsilon), Fraction(delta)
    if epsilon <= 0:
        raise PrivacyParameterError(
            gettext_noop("epsilon must be > 0, got %(value)s"), value=str(epsilon)
        )
    if not 0 < delta < 1:
        raise PrivacyParameterError(
            gettext_noop("selecting keys found in the data needs a delta above 0")
        )
    if isinstance(keys_per_person, bool) or int(keys_per_person) < 1:
        raise PrivacyParameterError(gettext_noop("keys per person must be at least 1"))
    k = int(keys_per_person)
    b = Fraction(k) / epsilon
    threshold = 1 + math.ceil(float(b) * math.log(k / (2 * float(delta))))
    return KeySelection(
        mechanism="laplace_threshold", epsilon=epsilon, delta=delta, keys_per_person=k,
        with_counts=bool(with_counts), threshold=max(threshold, 1),
    )  # fmt: skip


def select_keys(
    counts: Mapping[str, int], selection: KeySelection, rng: RandomSource | None = None
) -> dict[str, int | None]:
    """The published keys with their noisy counts (None when keys only)."""
    keys = sorted(counts)
    if not keys:
        return {}
    noise = selection._spec().sample(len(keys), rng)
    truth = np.array([int(counts[k]) for k in keys], dtype=np.int64)
    noisy = truth + noise
    out: dict[str, int | None] = {}
    for key, value in zip(keys, noisy.tolist(), strict=True):
        if value >= int(selection.threshold or 0):
            out[key] = int(value) if selection.with_counts else None
    return out
