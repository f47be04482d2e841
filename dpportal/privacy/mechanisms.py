"""Mechanisms: true aggregate(s) in, noisy values plus their full explanation out.

Each function takes the true aggregate (computed by the caller, never stored
here), builds the NoiseSpec from public parameters (dpportal.privacy.noise),
draws exact integer noise from the CSPRNG and returns a frozen result whose
`to_dict()` holds the noisy values and every public parameter needed to explain
them, and never a true value.

- counts and histograms: y_i = x_i + Y_i, Y_i iid discrete Laplace(L/eps) or
  discrete Gaussian(sigma) (Dwork & Roth 2014, Thm 3.6; CKS 2020);
- clipped sums: the true sum in grid units plus noise in grid units; the value
  is units * gamma, an exact multiple of the public grid (Mironov 2012);
- mean: noisy clipped sum / noisy count with a split budget, interval by
  inverting the exact pivot g S^ - m N^ (dpportal.privacy.mean_pivot);
- argmax: Report Noisy Max (Dwork & Roth 2014, Claim 3.9), only the index.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.calibration import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_sigma,
    laplace_scale,
)
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.mean_pivot import NoiseLaw, mean_pivot_interval
from dpportal.privacy.noise import NoiseSpec, argmax_noise, count_noise, mean_noise, sum_noise
from dpportal.privacy.params import check_bounds, check_confidence, exact_str, to_fraction
from dpportal.privacy.rng import RandomSource

__all__ = [
    "MechanismResult",
    "MeanResult",
    "ArgmaxResult",
    "release_counts",
    "release_sum",
    "release_mean",
    "release_argmax",
    "report_noisy_max_indices",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_sigma",
    "laplace_scale",
]


@dataclass(frozen=True)
class MechanismResult:
    """Noisy values (ints, in units: counts or grid units) and the noise that made them."""

    values: tuple[int, ...]
    spec: NoiseSpec

    @property
    def decimal_values(self) -> tuple[str, ...]:
        """Values in value units as exact decimal strings (units * granularity)."""
        return tuple(exact_str(v * self.spec.granularity) for v in self.values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: noisy values and public parameters, no true value."""
        out = self.spec.describe()
        out["values"] = list(self.values)
        if self.spec.statistic == "sum":
            out["values_decimal"] = list(self.decimal_values)
        return out


@dataclass(frozen=True)
class MeanResult:
    """A noisy mean: its two parts, the estimate and its interval clamped to [lower, upper]."""

    sum: MechanismResult
    count: MechanismResult
    lower: Fraction
    upper: Fraction
    sum_share: Fraction
    confidence: Fraction
    estimate: Fraction
    interval: tuple[Fraction, Fraction]
    count_nonpositive: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: both parts' explanations, estimate and interval as floats."""
        return {
            **mean_parts_dict(
                "mean",
                self.sum,
                self.count,
                {},
                lower=self.lower,
                upper=self.upper,
                sum_share=self.sum_share,
                confidence=self.confidence,
            ),
            "estimate": float(self.estimate),
            "interval": [float(self.interval[0]), float(self.interval[1])],
            "count_nonpositive": self.count_nonpositive,
        }


def mean_parts_dict(
    statistic: str,
    sum_part: MechanismResult,
    count_part: MechanismResult,
    extra: dict[str, Any],
    *,
    lower: Fraction,
    upper: Fraction,
    sum_share: Fraction,
    confidence: Fraction,
) -> dict[str, Any]:
    """The to_dict() keys a mean and a grouped mean share: both parts and the total cost.

    `extra` goes right after the parts (the grouped mean's "groups").
    """
    return {
        "statistic": statistic,
        "mechanism": sum_part.spec.mechanism,
        "sum": sum_part.to_dict(),
        "count": count_part.to_dict(),
        **extra,
        "lower": exact_str(lower),
        "upper": exact_str(upper),
        "sum_share": exact_str(sum_share),
        "epsilon": exact_str(sum_part.spec.epsilon + count_part.spec.epsilon),
        "delta": exact_str(sum_part.spec.delta + count_part.spec.delta),
        "contribution_bound": sum_part.spec.contribution_bound,
        "confidence": exact_str(confidence),
    }


@dataclass(frozen=True)
class ArgmaxResult:
    """The index of the most common category, and the noise used; never the noisy counts."""

    index: int
    spec: NoiseSpec

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: index, number of categories, noise parameters."""
        out = self.spec.describe()
        out["index"] = self.index
        out["tie_break"] = "lowest index"
        return out


def _as_counts(true_counts: object) -> tuple[np.ndarray, bool]:
    """(1-D int64 array, was_scalar); counts must be non-negative integers."""
    arr = np.asarray(true_counts)
    scalar = arr.ndim == 0
    if arr.ndim > 1:
        raise ValueError("pass a 2-D table flattened to 1-D (the caller reshapes the result)")
    if arr.size == 0:
        raise PrivacyParameterError(gettext_noop("the category list must not be empty"))
    if arr.dtype == object and all(isinstance(v, numbers.Integral) for v in arr.flat):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise ValueError("true counts must be integers")
    arr = arr.astype(np.int64).reshape(-1)
    if arr.size and arr.min() < 0:
        raise ValueError("true counts must be a non-negative integer or a 1-D array of them")
    return arr, scalar


def _as_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer (grid units), got {type(value).__name__}")
    return int(value)


def release_counts(
    true_counts: object,
    *,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    rng: RandomSource | None = None,
) -> MechanismResult:
    """Noisy count (scalar input) or histogram (1-D array over declared, disjoint cells).

    y_i = x_i + Y_i with Y_i iid discrete Laplace of scale L/eps ("laplace",
    eps-DP) or discrete Gaussian with sigma from calibration.gaussian_sigma
    ("gaussian", (eps, delta)-DP). A 2-D table is passed flattened; the cells
    compose in parallel, so the cost is (eps, delta) once.
    """
    counts, scalar = _as_counts(true_counts)
    spec = count_noise(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        cells=counts.size,
        statistic="count" if scalar else "histogram",
    )
    noisy = counts + spec.sample(counts.size, rng)
    return MechanismResult(tuple(noisy.tolist()), spec)


def release_sum(
    true_sum_units: int,
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    rng: RandomSource | None = None,
) -> MechanismResult:
    """Noisy clipped sum in grid units: sum_units + Y, Y discrete Laplace(Delta_u/eps) or Gaussian.

    true_sum_units is the sum of sensitivity.to_grid_units(...) (a Python int,
    may exceed int64). The released value is an integer number of grid units;
    its value is units * granularity exactly (MechanismResult.decimal_values).
    """
    total = _as_int(true_sum_units, "true_sum_units")
    spec = sum_noise(
        lower=lower,
        upper=upper,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
    )
    return MechanismResult((total + int(spec.sample(1, rng)[0]),), spec)


def release_mean(
    true_sum_units: int,
    true_count: int,
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    sum_share: object = Fraction(1, 2),
    confidence: object,
    rng: RandomSource | None = None,
) -> MeanResult:
    """Noisy mean = noisy clipped sum / noisy count, with a split budget and an interval.

    The sum gets (s eps, s delta) and the count ((1-s) eps, (1-s) delta), s =
    sum_share; the mean costs (eps, delta). Interval: the set of means m whose
    pivot |g S^ - m N^| stays within its exact (1 - beta) quantile, widened by one
    row's rounding gap and clamped to [lower, upper] (dpportal.privacy.mean_pivot;
    coverage >= confidence for every dataset). When the noisy count is <= 0 the
    estimate is (lower + upper)/2 and count_nonpositive is True.
    true_count must count the same rows whose values were summed.
    """
    lo, hi = check_bounds(lower, upper)
    conf = check_confidence(confidence)
    total = _as_int(true_sum_units, "true_sum_units")
    count = _as_int(true_count, "true_count")
    if count < 0:
        raise ValueError("true_count must be >= 0")
    sum_spec, count_spec = mean_noise(
        lower=lo,
        upper=hi,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        sum_share=sum_share,
    )
    sum_result = MechanismResult((total + int(sum_spec.sample(1, rng)[0]),), sum_spec)
    count_result = MechanismResult((count + int(count_spec.sample(1, rng)[0]),), count_spec)
    estimate, low, high, nonpositive = mean_pivot_interval(
        noisy_sum_units=sum_result.values[0],
        noisy_count=count_result.values[0],
        sum_law=NoiseLaw.of_spec(sum_spec),
        count_law=NoiseLaw.of_spec(count_spec),
        granularity=sum_spec.granularity,
        lower=lo,
        upper=hi,
        confidence=conf,
    )
    return MeanResult(
        sum=sum_result,
        count=count_result,
        lower=lo,
        upper=hi,
        sum_share=to_fraction(sum_share, "sum_share"),
        confidence=conf,
        estimate=estimate,
        interval=(low, high),
        count_nonpositive=nonpositive,
    )


def report_noisy_max_indices(
    true_counts: object,
    *,
    epsilon: object,
    contribution_bound: object = 1,
    rng: RandomSource | None = None,
) -> np.ndarray:
    """Vectorised Report Noisy Max: argmax over the last axis of counts + discrete Laplace(L/eps).

    true_counts: shape (..., k). Each row is an independent run (tests use this
    to draw many releases at once). Ties go to the lowest index. Returns int64
    indices; the noisy counts are discarded.
    """
    counts = np.asarray(true_counts)
    if counts.ndim == 0 or counts.shape[-1] == 0:
        raise PrivacyParameterError(gettext_noop("the category list must not be empty"))
    if counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
        raise ValueError("true counts must be non-negative integers")
    spec = argmax_noise(
        epsilon=epsilon, contribution_bound=contribution_bound, cells=counts.shape[-1]
    )
    noisy = counts.astype(np.int64) + spec.sample(counts.shape, rng)
    return np.argmax(noisy, axis=-1).astype(np.int64)


def release_argmax(
    true_counts: object,
    *,
    epsilon: object,
    contribution_bound: object = 1,
    rng: RandomSource | None = None,
) -> ArgmaxResult:
    """The most common category by Report Noisy Max; only the index is released.

    Each count gets discrete Laplace noise of scale L/eps (counts are monotone,
    so this is eps-DP; noise.argmax_noise), the index of the largest noisy
    count is returned (lowest index on ties), the noisy counts are discarded.
    """
    counts, _ = _as_counts(true_counts)
    index = int(
        report_noisy_max_indices(
            counts, epsilon=epsilon, contribution_bound=contribution_bound, rng=rng
        )
    )
    spec = argmax_noise(epsilon=epsilon, contribution_bound=contribution_bound, cells=counts.size)
    return ArgmaxResult(index, spec)
