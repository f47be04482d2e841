"""Noise specifications: from a statistic's public parameters to the exact noise it gets.

A `NoiseSpec` holds everything that determines the noise of one statistic
(mechanism, epsilon, delta, sensitivities in units, contribution bound L, grid
granularity, exact scale or sigma) and nothing about the data. The mechanisms
(dpportal.privacy.mechanisms) build one, sample it and add it to the true
aggregate; planning (dpportal.privacy.planning) builds the same spec to preview
accuracy, so a preview and a release can never disagree.

- Laplace: discrete Laplace with scale b = Delta1 / epsilon (in units); epsilon-DP.
- Gaussian: discrete Gaussian with sigma from calibration.gaussian_sigma; (eps, delta)-DP,
  and rho-zCDP with rho = Delta2**2 / (2 sigma**2).
Sensitivities (in units, i.e. grid units for sums) come from
dpportal.privacy.sensitivity and are all multiplied by L (DESIGN.md section 3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.accounting import Cost, mean_budget_split
from dpportal.privacy.calibration import gaussian_sigma, laplace_scale
from dpportal.privacy.params import (
    check_bounds,
    check_cells,
    check_contribution_bound,
    check_delta,
    check_epsilon,
    check_mechanism,
    exact_str,
)
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.samplers import discrete_gaussian, discrete_laplace
from dpportal.privacy.sensitivity import (
    MAX_ROWS,
    argmax_sensitivity,
    check_granularity,
    count_sensitivity,
    histogram_sensitivity,
    sum_granularity,
    sum_rounding_bound,
    sum_sensitivity_units,
)

__all__ = [
    "NoiseSpec",
    "build_spec",
    "count_noise",
    "sum_noise",
    "with_rounding_bound",
    "argmax_noise",
    "mean_noise",
]


@dataclass(frozen=True)
class NoiseSpec:
    """The exact noise of one statistic. Scale/sigma are in units (grid units for sums)."""

    statistic: str
    mechanism: str
    epsilon: Fraction
    delta: Fraction
    l1_sensitivity: int
    l2_sensitivity: int
    contribution_bound: int
    cells: int
    granularity: Fraction = Fraction(1)
    scale: Fraction | None = None
    sigma: Fraction | None = None
    rho: Fraction | None = None
    delta_achieved: float | None = None
    calibration: str = "laplace"
    lower: Fraction | None = None
    upper: Fraction | None = None
    rounding_bound: Fraction | None = None

    @property
    def noise(self) -> str:
        """The distribution sampled: "discrete_laplace" or "discrete_gaussian"."""
        return "discrete_laplace" if self.mechanism == "laplace" else "discrete_gaussian"

    @property
    def cost(self) -> Cost:
        """The (epsilon, delta) this statistic charges (cells in parallel)."""
        return Cost(self.epsilon, self.delta)

    def sample(self, size: int | tuple[int, ...], rng: RandomSource | None = None) -> np.ndarray:
        """Draw int64 noise of the given size (in units) from the exact sampler."""
        if self.mechanism == "laplace":
            return discrete_laplace(self.scale, size, rng)
        return discrete_gaussian(self.sigma, size, rng)

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable explanation of the noise: public parameters only."""
        out: dict[str, Any] = {
            "statistic": self.statistic,
            "mechanism": self.mechanism,
            "noise": self.noise,
            "cells": self.cells,
            "unit": "grid" if self.statistic == "sum" else "count",
            "granularity": exact_str(self.granularity),
            "epsilon": exact_str(self.epsilon),
            "delta": exact_str(self.delta),
            "l1_sensitivity": exact_str(self.l1_sensitivity),
            "l2_sensitivity": exact_str(self.l2_sensitivity),
            "contribution_bound": self.contribution_bound,
        }
        if self.lower is not None and self.upper is not None:
            out["lower"], out["upper"] = exact_str(self.lower), exact_str(self.upper)
        if self.rounding_bound is not None:
            out["rounding_bound"] = exact_str(self.rounding_bound)
            out["rows_bound"] = MAX_ROWS
        if self.scale is not None:
            out["scale"], out["scale_float"] = exact_str(self.scale), float(self.scale)
        if self.sigma is not None and self.rho is not None:
            out["sigma"], out["sigma_float"] = exact_str(self.sigma), float(self.sigma)
            out["rho"], out["rho_float"] = exact_str(self.rho), float(self.rho)
            out["delta_achieved"] = self.delta_achieved
            out["calibration"] = self.calibration
        return out


def build_spec(
    *,
    statistic: str,
    mechanism: object,
    epsilon: object,
    delta: object,
    l1: int,
    l2: int | Fraction,
    bound: int,
    cells: int,
    granularity: Fraction = Fraction(1),
    lower: Fraction | None = None,
    upper: Fraction | None = None,
    multivariate: bool = False,
) -> NoiseSpec:
    """The NoiseSpec of the given sensitivities (in units): Laplace scale or Gaussian sigma.

    multivariate: one privacy unit can move several coordinates, so the Gaussian's
    delta is bounded through zCDP (calibration.gaussian_sigma).
    """
    mech = check_mechanism(mechanism)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, mechanism=mech)
    common = dict(
        statistic=statistic,
        mechanism=mech,
        epsilon=eps,
        delta=dlt,
        l1_sensitivity=l1,
        l2_sensitivity=l2,
        contribution_bound=bound,
        cells=cells,
        granularity=granularity,
        lower=lower,
        upper=upper,
    )
    if mech == "laplace":
        return NoiseSpec(**common, scale=laplace_scale(l1, eps))
    cal = gaussian_sigma(epsilon=eps, delta=dlt, l2_sensitivity=l2, multivariate=multivariate)
    return NoiseSpec(
        **common,
        sigma=cal.sigma,
        rho=cal.rho,
        delta_achieved=cal.delta_achieved,
        calibration=cal.method,
    )


def count_noise(
    *,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    cells: object = 1,
    statistic: str = "count",
) -> NoiseSpec:
    """Noise for a count (cells = 1) or a histogram over `cells` disjoint cells.

    Delta1 = Delta2 = L. For the Gaussian, sigma comes from the exact 1-D bound
    (CKS Thm 7) at sensitivity L also when one person's L rows can move several
    cells: one cell moved by L is the worst shift pattern (see
    dpportal.privacy.calibration, "Histogram with L rows per person").
    """
    bound = check_contribution_bound(contribution_bound)
    k = check_cells(cells, "cells")
    if statistic == "count":
        l1 = l2 = count_sensitivity(bound)
    else:
        l1, l2 = histogram_sensitivity(bound)
    return build_spec(
        statistic=statistic,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        l1=l1,
        l2=l2,
        bound=bound,
        cells=k,
    )


def sum_noise(
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
) -> NoiseSpec:
    """Noise for a sum clipped to [lower, upper] on the grid gamma, in grid units.

    Delta1 = Delta2 = L max(|ceil(lo/gamma)|, |floor(hi/gamma)|) grid units.
    On the released-sum grid (sensitivity.sum_granularity with rows_bound=MAX_ROWS)
    or finer, the spec records the rounding bound that the sum's half-width adds
    (`with_rounding_bound`), so the interval covers the clipped sum.
    """
    lo, hi = check_bounds(lower, upper)
    gamma = check_granularity(granularity)
    bound = check_contribution_bound(contribution_bound)
    sens = sum_sensitivity_units(lo, hi, gamma, bound)
    spec = build_spec(
        statistic="sum",
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        l1=sens,
        l2=sens,
        bound=bound,
        cells=1,
        granularity=gamma,
        lower=lo,
        upper=hi,
    )
    return with_rounding_bound(spec, epsilon=epsilon, contribution_bound=bound)


def with_rounding_bound(spec: NoiseSpec, *, epsilon: object, contribution_bound: int) -> NoiseSpec:
    """`spec` (a sum or a vector of sums on its grid) with its rounding bound, when its grid is
    the released-sum grid or finer.

    The released-sum grid is sensitivity.sum_granularity(lo, hi, epsilon, L,
    rows_bound=MAX_ROWS); on it or finer, rounding_bound = MAX_ROWS * rounding_gap is
    the most rounding can move the sum of any dataset's rows (any one cell's too, as a
    cell holds at most all the rows) and stays about 2**-11 of the noise scale, so the
    half-width adds it (accuracy.result_halfwidth) and the interval covers the clipped
    sum. A coarser grid (a mean's sum part, or a release frozen before this rule)
    records none: its interval covers the grid sum.
    """
    lo, hi, gamma = spec.lower, spec.upper, spec.granularity
    fine = sum_granularity(
        lo, hi, epsilon=epsilon, contribution_bound=contribution_bound, rows_bound=MAX_ROWS
    )
    if gamma > fine:
        return spec
    return replace(spec, rounding_bound=sum_rounding_bound(lo, hi, gamma))


def argmax_noise(
    *, epsilon: object, contribution_bound: object = 1, cells: object = 1
) -> NoiseSpec:
    """Noise for Report Noisy Max over counts: discrete Laplace with scale L / epsilon per count.

    Counts are monotone under adding or removing a person (all move the same
    way, each by at most L), so scale L/eps (not 2L/eps) gives eps-DP (Dwork &
    Roth 2014, Claim 3.9 and the remark on monotone queries; the shift argument
    holds for integer noise with lowest-index tie-breaking, since
    Pr[Y >= x + L] >= exp(-eps) Pr[Y >= x] for the discrete Laplace with scale L/eps).
    """
    bound = check_contribution_bound(contribution_bound)
    sens = argmax_sensitivity(bound)
    return build_spec(
        statistic="argmax",
        mechanism="laplace",
        epsilon=epsilon,
        delta=0,
        l1=sens,
        l2=sens,
        bound=bound,
        cells=check_cells(cells, "cells"),
    )


def mean_noise(
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    sum_share: object = Fraction(1, 2),
) -> tuple[NoiseSpec, NoiseSpec]:
    """(sum noise, count noise) for a mean: the budget split by `sum_share` (accounting)."""
    sum_part, count_part = mean_budget_split(epsilon=epsilon, delta=delta, sum_share=sum_share)
    sum_spec = sum_noise(
        lower=lower,
        upper=upper,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=sum_part.epsilon,
        delta=sum_part.delta,
        contribution_bound=contribution_bound,
    )
    count_spec = count_noise(
        mechanism=mechanism,
        epsilon=count_part.epsilon,
        delta=count_part.delta,
        contribution_bound=contribution_bound,
    )
    return sum_spec, count_spec


_build = build_spec  # the older private name, still used by tests/privacy
