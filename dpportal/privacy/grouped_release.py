"""Mechanisms for grouped count, clipped sum and mean: true vectors in, noisy vectors out.

The math (cells, sensitivities with the optional per-group bound, budget split
of a mean, intervals per cell and simultaneous) is stated in
dpportal.privacy.grouped, which builds the NoiseSpecs used here; a preview
(planning) builds the very same specs, so the two cannot disagree. Each
function takes TRUE per-group aggregates computed by the caller (never stored
here) and returns a frozen result whose to_dict() holds the noisy values and
the public parameters, never a true value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.accuracy import mean_interval_from_parts, noise_halfwidth
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.grouped import (
    grouped_count_noise,
    grouped_mean_noise,
    grouped_sum_noise,
)
from dpportal.privacy.mean_pivot import NoiseLaw, mean_pivot_interval, pivot_reaches
from dpportal.privacy.mechanisms import MechanismResult, mean_parts_dict
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import (
    check_bounds,
    check_confidence,
    check_contribution_bound,
    to_fraction,
)
from dpportal.privacy.rng import RandomSource

__all__ = [
    "GroupedResult",
    "GroupedMeanResult",
    "release_grouped_counts",
    "release_grouped_sums",
    "release_grouped_means",
    "cell_confidence",
    "grouped_mean_cells",
    "grouped_mean_intervals",
]


def _as_int_vector(values: object, name: str) -> list[int]:
    arr = np.asarray(values, dtype=object).reshape(-1)
    if arr.size == 0:
        raise PrivacyParameterError(gettext_noop("the group list must not be empty"))
    out = []
    for v in arr.tolist():
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"{name} must be integers")
        out.append(int(v))
    return out


@dataclass(frozen=True)
class GroupedResult(MechanismResult):
    """Noisy per-group values (counts, or sums in grid units), their noise and the group bound."""

    group_bound: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: noisy values and public parameters, no true value."""
        out = super().to_dict()
        out["groups"] = self.spec.cells
        out["group_bound"] = self.group_bound
        if self.spec.statistic == "grouped_sum":
            out["unit"] = "grid"
            out["values_decimal"] = list(self.decimal_values)
        return out


def _released(
    truth: list[int], spec: NoiseSpec, rng: RandomSource | None, bound: int
) -> GroupedResult:
    """truth + iid noise from spec, with the per-group bound (L when none was given)."""
    noise = spec.sample(len(truth), rng).tolist()
    return GroupedResult(tuple(t + int(z) for t, z in zip(truth, noise, strict=True)), spec, bound)


def _group_bound(contribution_bound: object, group_bound: object) -> int:
    return check_contribution_bound(contribution_bound if group_bound is None else group_bound)


def release_grouped_counts(
    true_counts: object,
    *,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    group_bound: object = None,
    rng: RandomSource | None = None,
) -> GroupedResult:
    """Noisy row count per group: x_g + Y_g, Y iid from grouped_count_noise; costs (eps, delta)."""
    truth = _as_int_vector(true_counts, "true counts")
    if min(truth) < 0:
        raise ValueError("true counts must be >= 0")
    spec = grouped_count_noise(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=len(truth),
        group_bound=group_bound,
    )
    return _released(truth, spec, rng, _group_bound(contribution_bound, group_bound))


def release_grouped_sums(
    true_sum_units: object,
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    group_bound: object = None,
    rng: RandomSource | None = None,
) -> GroupedResult:
    """Noisy clipped sum per group in grid units (value = units * granularity exactly)."""
    truth = _as_int_vector(true_sum_units, "true sums")
    spec = grouped_sum_noise(
        lower=lower,
        upper=upper,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=len(truth),
        group_bound=group_bound,
    )
    return _released(truth, spec, rng, _group_bound(contribution_bound, group_bound))


@dataclass(frozen=True)
class GroupedMeanResult:
    """Per-group noisy means: both noisy vectors, estimates and per-cell intervals."""

    sums: GroupedResult
    counts: GroupedResult
    lower: Fraction
    upper: Fraction
    sum_share: Fraction
    confidence: Fraction
    estimates: tuple[Fraction, ...]
    intervals: tuple[tuple[Fraction, Fraction], ...]
    simultaneous_intervals: tuple[tuple[Fraction, Fraction], ...]
    count_nonpositive: tuple[bool, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: both parts' explanations, estimates and intervals as floats."""
        return {
            **mean_parts_dict(
                "grouped_mean",
                self.sums,
                self.counts,
                {"groups": self.sums.spec.cells},
                lower=self.lower,
                upper=self.upper,
                sum_share=self.sum_share,
                confidence=self.confidence,
            ),
            "estimates": [float(e) for e in self.estimates],
            "intervals": [[float(a), float(b)] for a, b in self.intervals],
            "simultaneous_intervals": [
                [float(a), float(b)] for a, b in self.simultaneous_intervals
            ],
            "count_nonpositive": list(self.count_nonpositive),
        }


def cell_confidence(confidence: Fraction, cells: int) -> Fraction:
    """The confidence each of `cells` intervals needs for all to hold at once: 1 - beta/cells.

    Union bound over the cells (Dwork & Roth 2014, Thm 3.8's argument)."""
    return 1 - (1 - confidence) / cells


def grouped_mean_cells(
    noisy_sum_units: Sequence[int],
    noisy_counts: Sequence[int],
    *,
    sum_law: NoiseLaw,
    count_law: NoiseLaw,
    granularity: Fraction,
    lower: Fraction,
    upper: Fraction,
    confidence: Fraction,
) -> list[tuple[Fraction, Fraction, Fraction, bool]]:
    """(estimate, low, high, count_nonpositive) per cell: the mean's pivot on each cell's parts.

    mean_pivot.mean_pivot_interval at `confidence` on the cell's noisy sum (grid units)
    and noisy count (dpportal.privacy.grouped docstring, Grouped mean). Where the pivot
    cannot certify so high a confidence (mean_pivot.pivot_reaches: beta below ~3e-7, as
    for all of 100,000 cells at once at 99 %), each part at 1 - beta/2 combined by interval
    arithmetic (accuracy.mean_interval_from_parts), which holds at any beta.
    """
    beta = 1 - confidence
    if not pivot_reaches(sum_law, count_law, beta):
        part = 1 - beta / 2
        hs, hc = (
            noise_halfwidth(noise=law.noise, parameter=law.parameter, confidence=part)
            for law in (sum_law, count_law)
        )
        return [
            mean_interval_from_parts(
                noisy_sum_units=int(s),
                sum_halfwidth_units=hs,
                noisy_count=int(c),
                count_halfwidth=hc,
                granularity=granularity,
                lower=lower,
                upper=upper,
            )
            for s, c in zip(noisy_sum_units, noisy_counts, strict=True)
        ]
    return [
        mean_pivot_interval(
            noisy_sum_units=int(s),
            noisy_count=int(c),
            sum_law=sum_law,
            count_law=count_law,
            granularity=granularity,
            lower=lower,
            upper=upper,
            confidence=confidence,
        )
        for s, c in zip(noisy_sum_units, noisy_counts, strict=True)
    ]


def release_grouped_means(
    true_sum_units: object,
    true_counts: object,
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    group_bound: object = None,
    sum_share: object = Fraction(1, 2),
    confidence: object,
    rng: RandomSource | None = None,
) -> GroupedMeanResult:
    """Per-group mean = noisy sum / noisy count, (eps, delta) split by sum_share.

    true_counts must count exactly the rows whose values were summed, per group.
    Each cell's interval is the mean's pivot at `confidence` (simultaneous: at
    1 - beta/G); a cell whose noisy count is <= 0 gets the midpoint (lo + hi)/2
    as its estimate and its flag set.
    """
    lo, hi = check_bounds(lower, upper)
    conf = check_confidence(confidence)
    sums_true = _as_int_vector(true_sum_units, "true sums")
    counts_true = _as_int_vector(true_counts, "true counts")
    if len(sums_true) != len(counts_true) or min(counts_true) < 0:
        raise ValueError("one non-negative count per group sum is needed")
    sum_spec, count_spec = grouped_mean_noise(
        lower=lo,
        upper=hi,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=len(sums_true),
        group_bound=group_bound,
        sum_share=sum_share,
    )
    bound = _group_bound(contribution_bound, group_bound)
    sums = _released(sums_true, sum_spec, rng, bound)
    counts = _released(counts_true, count_spec, rng, bound)
    cells, together = (
        grouped_mean_cells(
            sums.values,
            counts.values,
            sum_law=NoiseLaw.of_spec(sum_spec),
            count_law=NoiseLaw.of_spec(count_spec),
            granularity=sum_spec.granularity,
            lower=lo,
            upper=hi,
            confidence=cell_confidence(conf, k),
        )
        for k in (1, len(sums_true))
    )
    return GroupedMeanResult(
        sums=sums,
        counts=counts,
        lower=lo,
        upper=hi,
        sum_share=to_fraction(sum_share, "sum_share"),
        confidence=conf,
        estimates=tuple(c[0] for c in cells),
        intervals=tuple((c[1], c[2]) for c in cells),
        simultaneous_intervals=tuple((c[1], c[2]) for c in together),
        count_nonpositive=tuple(c[3] for c in cells),
    )


def grouped_mean_intervals(
    explanation: Mapping[str, Any], *, confidence: object, simultaneous: bool = False
) -> list[tuple[float, float, float]]:
    """(estimate, low, high) per group of a stored grouped mean, at any confidence.

    From the to_dict() alone (noisy parts, noise laws, grid, bounds): each cell's
    pivot interval (grouped_mean_cells), at 1 - beta per cell, or 1 - beta/G with
    simultaneous=True so that all G cells hold at once.
    """
    conf = check_confidence(confidence)
    k = int(explanation["groups"]) if simultaneous else 1
    cells = grouped_mean_cells(
        explanation["sum"]["values"],
        explanation["count"]["values"],
        sum_law=NoiseLaw.of_explanation(explanation["sum"]),
        count_law=NoiseLaw.of_explanation(explanation["count"]),
        granularity=Fraction(explanation["sum"]["granularity"]),
        lower=Fraction(explanation["lower"]),
        upper=Fraction(explanation["upper"]),
        confidence=cell_confidence(conf, k),
    )
    return [(float(e), float(a), float(b)) for e, a, b, _ in cells]
