"""Grouped count, clipped sum and mean over declared groups (DESIGN.md section 3.1).

Cells. One cell per declared group (the caller maps "Other"/"Missing" to cells
of their own, as for a histogram, and passes G = the number of cells); a row
falls in exactly one cell. Sums are on the public grid of granularity gamma
(sensitivity.to_grid_units), in grid units; M_u = max(|ceil(lo/gamma)|,
|floor(hi/gamma)|) bounds one row's clipped value in grid units.

Sensitivity (unbounded DP: add or remove one person, at most L rows kept; an
optional per-group bound L_g <= L keeps at most L_g of a person's rows in any
one group). Let c_g >= 0 be the number of the person's rows in group g:
sum_g c_g <= L and c_g <= L_g, so sum_g c_g <= L_eff = min(L, G L_g).
The count vector moves by (c_g)_g and the sum vector by v with |v_g| <= c_g M_u, so

    l1 = max sum_g c_g        = L_eff            (counts),  L_eff M_u  (sums),
    l2 = max sqrt(sum_g c_g^2) = sqrt(Q)          (counts),  M_u sqrt(Q) (sums),
    Q  = floor(L_eff / L_g) L_g^2 + (L_eff mod L_g)^2.

Proof of Q: sum c_g^2 is convex, so its maximum over {0 <= c_g <= L_g,
sum c_g <= L_eff} needs sum c_g = L_eff (adding a row never lowers it) and at
most one c_g strictly between 0 and L_g (if 0 < c_h <= c_g < L_g, moving a row
from h to g changes the sum of squares by 2 (c_g - c_h) + 2 > 0): floor(L_eff / L_g)
groups full and one holding the remainder. Both are attained, so tight.
Without a group bound (L_g = L): l1 = l2 = L (counts), L M_u (sums), as
DESIGN.md states: L rows may fall in L groups (l1) or all in one (l2). With
L_g < L only l2 shrinks (to about sqrt(L L_g)): it matters for the Gaussian.
Sources: Dwork & Roth 2014, Def. 3.1 and Section 3.3 (histograms); Wilson et
al., "Differentially Private SQL with Bounded User Contribution", PETS 2020,
Section 3 (l1 = L0 Linf, l2 = sqrt(L0) Linf with at most L0 groups of Linf rows).
An irrational sqrt(Q) is rounded up to a rational (specs.sqrt_upper).

Noise. Every cell gets iid discrete Laplace with b = l1 / eps, or the discrete
Gaussian calibrated to l2 (zCDP bound when one person can touch several cells:
G > 1 and L_eff > 1; specs.vector_noise). The cells compose in parallel: a
grouped count or sum costs (eps, delta) once (McSherry 2009, Thm 4 for L = 1;
for L > 1 the vector sensitivity above already covers all of a person's cells).

Rounding. A cell's sum is of grid values, each within r = sensitivity.rounding_gap
of its clipped value, so the cell's grid sum is within n_g r of its clipped sum,
and n_g <= MAX_ROWS (sensitivity: the public bound on a dataset's rows). A
grouped sum uses the released-sum grid (sensitivity.sum_granularity with
rows_bound=MAX_ROWS), on which MAX_ROWS r is about 2**-11 of the noise scale, and
its spec records that bound (noise.with_rounding_bound), which every cell's
half-width adds, per cell and simultaneous alike (the rounding is not random:
it takes no share of beta). So the interval covers the clipped sum, as a single
sum's does.

Grouped mean. Mean_g = noisy group sum / noisy group count, per cell; one
budget split: the sum vector gets (s eps, s delta), the count vector
((1 - s) eps, (1 - s) delta) (accounting.mean_budget_split), total (eps, delta).
Intervals per cell: the single mean's pivot (mean_pivot.mean_pivot_interval) on
the cell's two noisy parts. Within a cell, S^_g = S_g + Y_s and N^_g = n_g + Y_c
with Y_s, Y_c independent, of public laws (the vectors' noise is iid across
cells), which is all the pivot needs: it covers the cell's clipped mean with
probability >= 1 - beta for every cell with n_g >= 1 (no union bound over the
parts), with the one-row rounding gap already included. All cells at once:
each cell's pivot at 1 - beta/G (union bound over the G cells); past the
pivot's reach (beta/G below ~1e-6) each part at 1 - beta/(2G) by interval
arithmetic (grouped_release.grouped_mean_cells).
Counts and sums: value +- accuracy.result_halfwidth(explanation, ...), per cell
or simultaneous (beta/G per cell). The mechanisms are in grouped_release.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpportal.privacy.accounting import mean_budget_split
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.noise import NoiseSpec, with_rounding_bound
from dpportal.privacy.params import (
    check_bounds,
    check_cells,
    check_contribution_bound,
)
from dpportal.privacy.sensitivity import check_granularity, grid_bounds, to_grid_units
from dpportal.privacy.specs import sqrt_upper, vector_noise

__all__ = [
    "GroupSensitivity",
    "group_sensitivity",
    "group_vector_noise",
    "grouped_count_noise",
    "grouped_sum_noise",
    "grouped_mean_noise",
    "GroupedAggregator",
]


@dataclass(frozen=True)
class GroupSensitivity:
    """A person's worst-case row counts per group: l1 = max sum c_g, l2**2 = max sum c_g**2."""

    groups: int
    contribution_bound: int
    group_bound: int
    l1: int
    l2_squared: int

    @property
    def multivariate(self) -> bool:
        """True when one person can move more than one cell (zCDP calibration for Gaussian)."""
        return self.groups > 1 and self.l1 > 1


def group_sensitivity(
    *, contribution_bound: object = 1, groups: object, group_bound: object = None
) -> GroupSensitivity:
    """L_eff = min(L, G L_g) and Q = floor(L_eff/L_g) L_g**2 + (L_eff mod L_g)**2 (docstring)."""
    bound = check_contribution_bound(contribution_bound)
    g = check_cells(groups, "groups")
    per_group = bound if group_bound is None else check_contribution_bound(group_bound)
    if per_group > bound:
        raise PrivacyParameterError(
            gettext_noop("the per-group bound (%(per_group)s) must not exceed L (%(bound)s)"),
            per_group=str(per_group),
            bound=str(bound),
        )
    effective = min(bound, g * per_group)
    full, rest = divmod(effective, per_group)
    return GroupSensitivity(g, bound, per_group, effective, full * per_group**2 + rest**2)


def group_vector_noise(
    sens: GroupSensitivity,
    unit: int,
    *,
    statistic: str,
    mechanism: object,
    epsilon: object,
    delta: object,
    granularity: Fraction = Fraction(1),
    lower: Fraction | None = None,
    upper: Fraction | None = None,
) -> NoiseSpec:
    """The noise of a G-vector in which one row moves its group's value by at most `unit`.

    l1 = L_eff * unit, l2 = unit * sqrt(Q) (rounded up by sqrt_upper); module docstring.
    """
    return vector_noise(
        statistic=statistic,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        l1_sensitivity=sens.l1 * unit,
        l2_sensitivity=sqrt_upper(sens.l2_squared * unit * unit),
        contribution_bound=sens.contribution_bound,
        cells=sens.groups,
        multivariate=sens.multivariate,
        granularity=granularity,
        lower=lower,
        upper=upper,
    )


def grouped_count_noise(
    *,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    groups: object,
    group_bound: object = None,
) -> NoiseSpec:
    """Noise of a grouped count: l1 = L_eff, l2 = sqrt(Q) (module docstring)."""
    sens = group_sensitivity(
        contribution_bound=contribution_bound, groups=groups, group_bound=group_bound
    )
    return group_vector_noise(
        sens, 1, statistic="grouped_count", mechanism=mechanism, epsilon=epsilon, delta=delta
    )


def grouped_sum_noise(
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    groups: object,
    group_bound: object = None,
) -> NoiseSpec:
    """Noise of grouped clipped sums in grid units: l1 = L_eff M_u, l2 = M_u sqrt(Q).

    On the released-sum grid or finer the spec records the rounding bound that each
    cell's half-width adds (noise.with_rounding_bound; module docstring, Rounding).
    """
    lo, hi = check_bounds(lower, upper)
    gamma = check_granularity(granularity)
    lo_u, hi_u = grid_bounds(lo, hi, gamma)
    magnitude = max(abs(lo_u), abs(hi_u))
    if magnitude == 0:
        raise PrivacyParameterError(
            gettext_noop("the clipped sums are constant 0; nothing to release")
        )
    sens = group_sensitivity(
        contribution_bound=contribution_bound, groups=groups, group_bound=group_bound
    )
    spec = group_vector_noise(
        sens,
        magnitude,
        statistic="grouped_sum",
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        granularity=gamma,
        lower=lo,
        upper=hi,
    )
    return with_rounding_bound(spec, epsilon=epsilon, contribution_bound=sens.contribution_bound)


def grouped_mean_noise(
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    groups: object,
    group_bound: object = None,
    sum_share: object = Fraction(1, 2),
) -> tuple[NoiseSpec, NoiseSpec]:
    """(sum vector noise, count vector noise) of a grouped mean, budget split by sum_share."""
    sum_part, count_part = mean_budget_split(epsilon=epsilon, delta=delta, sum_share=sum_share)
    common = dict(
        mechanism=mechanism,
        contribution_bound=contribution_bound,
        groups=groups,
        group_bound=group_bound,
    )
    sums = grouped_sum_noise(
        lower=lower,
        upper=upper,
        granularity=granularity,
        epsilon=sum_part.epsilon,
        delta=sum_part.delta,
        **common,
    )
    counts = grouped_count_noise(epsilon=count_part.epsilon, delta=count_part.delta, **common)
    return sums, counts


class GroupedAggregator:
    """Streaming per-group row counts and clipped sums (grid units) over chunks.

    add(group_index, values): group_index are int cell numbers in [0, G) (the
    caller maps declared groups, "Other" and "Missing"); values (optional) are
    floats without NaN, clipped and rounded by sensitivity.to_grid_units. Sums
    are exact for any grid: each unit u (|u| < 2**53) is split as
    u = h 2**26 + l with 0 <= l < 2**26 and |h| <= 2**27, and np.bincount sums h and
    l in float64 over blocks of 2**25 rows, where every partial sum is an integer
    of magnitude at most 2**52 (so exact), then the blocks are added as Python ints.
    Memory is O(G) besides the chunk. Contribution bounding happens before.
    """

    _SPLIT = 26
    _BLOCK = 1 << 25

    def __init__(
        self,
        groups: int,
        *,
        lower: object = None,
        upper: object = None,
        granularity: object = None,
    ) -> None:
        self.groups = check_cells(groups, "groups")
        self.counts = [0] * self.groups
        self.sum_units = [0] * self.groups
        self._grid = None
        if granularity is not None:
            grid_bounds(lower, upper, granularity)  # refuses a grid past 2**53 units
            self._grid = dict(lower=lower, upper=upper, granularity=granularity)

    def add(self, group_index: np.ndarray, values: np.ndarray | None = None) -> None:
        """Count (and sum, when values are given) one chunk of rows."""
        idx = np.asarray(group_index, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.groups):
            raise ValueError("group index outside [0, groups)")
        counts = np.bincount(idx, minlength=self.groups)
        self.counts = [a + int(b) for a, b in zip(self.counts, counts, strict=True)]
        if values is None:
            return
        if self._grid is None:
            raise ValueError("sums need lower, upper and granularity")
        units = to_grid_units(np.asarray(values).reshape(-1), **self._grid)
        if units.size != idx.size:
            raise ValueError("one value per group index is needed")
        high = (units >> self._SPLIT).astype(np.float64)
        low = (units & ((1 << self._SPLIT) - 1)).astype(np.float64)
        for start in range(0, idx.size, self._BLOCK):
            part = slice(start, start + self._BLOCK)
            highs = np.bincount(idx[part], weights=high[part], minlength=self.groups)
            lows = np.bincount(idx[part], weights=low[part], minlength=self.groups)
            self.sum_units = [
                a + (int(h) << self._SPLIT) + int(lo)
                for a, h, lo in zip(self.sum_units, highs, lows, strict=True)
            ]
