"""Variance and standard deviation of a clipped column, optionally grouped (DESIGN.md 3.1).

Centred grid. Values are clipped to the public [lo, hi] and rounded to the grid
of granularity gamma (sensitivity.to_grid_units): u in [u_lo, u_hi] grid units.
They are then centred in half units, w = 2u - (u_lo + u_hi), an integer with
|w| <= W = u_hi - u_lo, so x~ = u gamma = (w + u_lo + u_hi) gamma / 2 and

    Var(x~) = Var(w) gamma**2 / 4   (population variance, divisor n).

Per cell three integers are noised: N = #rows, S = sum w, Q = sum w**2.

Why centred. One row moves S by at most W and Q by at most W**2: in value units
(hi - lo)/2 and ((hi - lo)/2)**2, against max(|lo|, |hi|) and max(lo**2, hi**2)
for the raw sum and sum of squares. Since (hi - lo)/2 <= max(|lo|, |hi|) always
(equality only when lo = -hi), centring never adds noise and usually removes a
lot: for [0, 100] the squares need 4x less noise (2500 vs 10000) and the sum 2x
less. The variance is shift-invariant, so nothing else changes.

Sensitivity (unbounded DP; one person, at most L rows; groups as in
dpportal.privacy.grouped, with the optional per-group bound L_g and
L_eff = min(L, G L_g), Q_c = floor(L_eff/L_g) L_g**2 + (L_eff mod L_g)**2):

    N: l1 = L_eff,       l2 = sqrt(Q_c)
    S: l1 = L_eff W,     l2 = W sqrt(Q_c)       (|w| <= W per row)
    Q: l1 = L_eff W**2,  l2 = W**2 sqrt(Q_c)    (0 <= w**2 <= W**2 per row)

Budget split (sequential composition of the three vectors, Dwork & Roth 2014,
Thm 3.16): shares (count, sum, squares) = (1/4, 1/4, 1/2) by default, owner
adjustable; each share of (eps, delta). The squares get half: they drive the
error when the data are centred in the range (then the sum's influence,
2 |mean_w| / W, is small) and at every n the count's influence is at most
(var + mean**2) / W**2 <= 1.

Interval (per cell): spread_interval.variance_interval, from the joint law of
the parts: exact Fieller pivots for the mean m = s/n and the mean square u = q/n
against the noisy count, and the pivot Q - N v - S**2/N <= Z_q - 2 m Z_s +
(m**2 - v) Z_n with m confined to its interval, on the feasible set
s**2 <= n q, |s| <= n W (v = u - m**2, m**2 <= u <= W**2);
coverage >= 1 - beta for every dataset (proof in spread_interval), at 95 %
measured 97.2 % at n = 100, epsilon 1, uniform data on [0, 100]. All G cells at
once: 1 - beta/G per cell. The standard deviation's interval is the square root
of the variance's. Coverage is checked by simulation in
tests/privacy/test_privacy_spread.py and, through the real compute path,
tests/test_releases_spread_interval.py (500 runs at 90/95/99 %). A negative
estimate (noise) is clamped to 0 and flagged.

Explanation units: each part states its noise parameter in its own unit
(`unit`), with `granularity` the value of one such unit: the count in rows
(granularity 1), the centred sum in half grid units (gamma/2 value units), the
squares in half grid units squared (gamma**2/4 squared value units);
`parameter_value` is the parameter times that granularity.

The grid and the streaming aggregates are in dpportal.privacy.spread_parts.
Granularity rule (public parameters only): gamma = the largest power of two
<= h / 2**16 with h = (hi - lo)/2 (so W < 2**18 and rounding moves a value by at
most gamma/2 <= h / 2**17), doubled while the squares' Laplace scale
L W**2 / eps would exceed 2**52 units (so the noise stays far inside int64).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpportal.privacy.accounting import Cost
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.grouped import group_sensitivity, group_vector_noise
from dpportal.privacy.mean_pivot import NoiseLaw
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import (
    check_bounds,
    check_confidence,
    check_contribution_bound,
    check_epsilon,
    exact_str,
    round_down_sig,
    round_up_sig,
    to_fraction,
)
from dpportal.privacy.rng import RandomSource
from dpportal.privacy.sensitivity import check_granularity, grid_bounds
from dpportal.privacy.spread_interval import variance_interval
from dpportal.privacy.spread_parts import (
    VarianceEstimate,
    sqrt_ceil,
    sqrt_floor,
)

__all__ = [
    "DEFAULT_SHARES",
    "spread_budget_split",
    "spread_noise",
    "SpreadResult",
    "release_spread",
    "spread_cells",
    "spread_intervals",
]

DEFAULT_SHARES = (Fraction(1, 4), Fraction(1, 4), Fraction(1, 2))
DIGITS = 12


def spread_budget_split(
    *, epsilon: object, delta: object = 0, shares: Sequence[object] | None = None
) -> tuple[Cost, Cost, Cost]:
    """(count, sum, squares) parts of (eps, delta); shares positive, summing to 1."""
    eps = check_epsilon(epsilon)
    dlt = to_fraction(delta, "delta")
    parts = DEFAULT_SHARES if shares is None else tuple(to_fraction(s, "share") for s in shares)
    if len(parts) != 3 or any(s <= 0 for s in parts) or sum(parts) != 1:
        raise PrivacyParameterError(
            gettext_noop("spread shares: three positive numbers summing to 1")
        )
    a, b, c = (Cost(eps * s, dlt * s) for s in parts)
    return a, b, c


def spread_noise(
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: object,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    groups: object = 1,
    group_bound: object = None,
    shares: Sequence[object] | None = None,
) -> tuple[NoiseSpec, NoiseSpec, NoiseSpec]:
    """(count, sum, squares) NoiseSpecs with the sensitivities of the module docstring."""
    lo, hi = check_bounds(lower, upper)
    gamma = check_granularity(granularity)
    lo_u, hi_u = grid_bounds(lo, hi, gamma)
    width = hi_u - lo_u
    if width == 0:
        raise PrivacyParameterError(
            gettext_noop("the clipped values are constant; the variance is 0")
        )
    sens = group_sensitivity(
        contribution_bound=contribution_bound, groups=groups, group_bound=group_bound
    )
    costs = spread_budget_split(epsilon=epsilon, delta=delta, shares=shares)
    specs = []
    for name, unit, cost in zip(
        ("spread_count", "spread_sum", "spread_squares"),
        (1, width, width * width),
        costs,
        strict=True,
    ):
        specs.append(
            group_vector_noise(
                sens,
                unit,
                statistic=name,
                mechanism=mechanism,
                epsilon=cost.epsilon,
                delta=cost.delta,
                granularity=gamma,
                lower=lo,
                upper=hi,
            )
        )
    return specs[0], specs[1], specs[2]


def spread_cells(
    counts: Sequence[int],
    sums: Sequence[int],
    squares: Sequence[int],
    *,
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw],
    w_bound: int,
    confidence: object,
    simultaneous: bool = False,
) -> list[VarianceEstimate]:
    """Per cell: the variance estimate and interval in w**2 units from noisy N, S, Q and
    the parts' (count, sum, squares) noise laws (spread_interval.variance_interval); all
    cells at once (1 - beta/G each) when simultaneous."""
    conf = check_confidence(confidence)
    if simultaneous:
        conf = 1 - (1 - conf) / len(counts)
    return [
        variance_interval(
            noisy_count=int(n),
            noisy_sum=int(s),
            noisy_squares=int(q),
            laws=laws,
            w_bound=w_bound,
            confidence=conf,
        )
        for n, s, q in zip(counts, sums, squares, strict=True)
    ]


def _down(x: Fraction) -> Fraction:
    return round_down_sig(x, DIGITS) if x > 0 else Fraction(0)


def _up(x: Fraction) -> Fraction:
    return round_up_sig(x, DIGITS) if x > 0 else Fraction(0)


def _describe(cell: VarianceEstimate, factor: Fraction) -> dict[str, Any]:
    """Value units; ends rounded outward to DIGITS significant digits (the estimate down)."""
    variance = cell.estimate * factor
    low, high = cell.low * factor, cell.high * factor
    return {
        "variance": exact_str(_down(variance)),
        "variance_interval": [exact_str(_down(low)), exact_str(_up(high))],
        "sd": exact_str(sqrt_floor(variance)),
        "sd_interval": [exact_str(sqrt_floor(low)), exact_str(sqrt_ceil(high))],
        "clamped": cell.clamped,
        "count_nonpositive": cell.count_nonpositive,
    }


def _part(spec: NoiseSpec, unit: str, granularity: Fraction) -> dict[str, Any]:
    """One part's noise in its own unit: `granularity` is the value of one `unit`
    (rows: 1), `parameter_value` the scale or sigma times it."""
    out = spec.describe()
    parameter = spec.scale if spec.scale is not None else spec.sigma
    out["unit"], out["granularity"] = unit, exact_str(granularity)
    if parameter is not None:
        out["parameter_value"] = exact_str(parameter * granularity)
    return out


@dataclass(frozen=True)
class SpreadResult:
    """Noisy (N, S, Q) per cell and the variance / sd read from them."""

    values: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    specs: tuple[NoiseSpec, NoiseSpec, NoiseSpec]
    group_bound: int
    confidence: Fraction

    @property
    def w_bound(self) -> int:
        """W = u_hi - u_lo: |w| <= W."""
        lo_u, hi_u = grid_bounds(self.specs[0].lower, self.specs[0].upper, self.granularity)
        return hi_u - lo_u

    @property
    def granularity(self) -> Fraction:
        """The grid gamma; value variance = w variance * gamma**2 / 4."""
        return self.specs[0].granularity

    def cells(self, confidence: object, simultaneous: bool = False) -> list[dict[str, Any]]:
        """Per cell: variance and sd (value units, exact strings) with intervals at confidence."""
        laws = tuple(NoiseLaw.of_spec(spec) for spec in self.specs)
        cells = spread_cells(
            *self.values,
            laws=laws,  # type: ignore[arg-type]
            w_bound=self.w_bound,
            confidence=confidence,
            simultaneous=simultaneous,
        )
        factor = self.granularity**2 / 4
        return [_describe(c, factor) for c in cells]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the three parts, public parameters, per-cell results."""
        count, total, squares = self.specs
        eps = sum((s.epsilon for s in self.specs), Fraction(0))
        cells = self.cells(self.confidence)
        return {
            "statistic": "spread",
            "mechanism": count.mechanism,
            "groups": count.cells,
            "group_bound": self.group_bound,
            "lower": exact_str(count.lower),
            "upper": exact_str(count.upper),
            "granularity": exact_str(self.granularity),
            "w_bound": self.w_bound,
            "epsilon": exact_str(eps),
            "delta": exact_str(sum((s.delta for s in self.specs), Fraction(0))),
            "contribution_bound": count.contribution_bound,
            "shares": [exact_str(s.epsilon / eps) for s in self.specs],
            "variance": "population variance (divisor n) of the clipped, grid-rounded values",
            "count": {**_part(count, "rows", Fraction(1)), "values": list(self.values[0])},
            "sum": {
                **_part(total, "half_grid", self.granularity / 2),
                "values": list(self.values[1]),
            },
            "squares": {
                **_part(squares, "half_grid^2", self.granularity**2 / 4),
                "values": list(self.values[2]),
            },
            "confidence": exact_str(self.confidence),
            "cells": cells,
            "simultaneous_cells": (
                cells if count.cells == 1 else self.cells(self.confidence, simultaneous=True)
            ),
        }


def release_spread(
    true_counts: object,
    true_sums: object,
    true_squares: object,
    *,
    lower: object,
    upper: object,
    granularity: object,
    mechanism: str,
    epsilon: object,
    delta: object = 0,
    contribution_bound: object = 1,
    group_bound: object = None,
    shares: Sequence[object] | None = None,
    confidence: object,
    rng: RandomSource | None = None,
) -> SpreadResult:
    """Noisy N, S, Q per cell (SpreadAggregator's integers), costing (eps, delta) in total.

    One value per cell in each input (G = 1 for an ungrouped column). Each part
    gets its share of (eps, delta) and iid noise from spread_noise.
    """
    truth = []
    for name, arr in (("counts", true_counts), ("sums", true_sums), ("squares", true_squares)):
        vector = np.asarray(arr, dtype=object).reshape(-1).tolist()
        if not vector or any(isinstance(v, bool) or not isinstance(v, int) for v in vector):
            raise ValueError(f"true {name} must be a non-empty list of integers")
        truth.append([int(v) for v in vector])
    if len({len(t) for t in truth}) != 1 or min(truth[0]) < 0 or min(truth[2]) < 0:
        raise ValueError("one non-negative count, one sum and one square-sum per cell")
    specs = spread_noise(
        lower=lower,
        upper=upper,
        granularity=granularity,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        contribution_bound=contribution_bound,
        groups=len(truth[0]),
        group_bound=group_bound,
        shares=shares,
    )
    noisy = []
    for spec, vector in zip(specs, truth, strict=True):
        noise = spec.sample(len(vector), rng).tolist()
        noisy.append(tuple(t + int(z) for t, z in zip(vector, noise, strict=True)))
    bound = contribution_bound if group_bound is None else group_bound
    return SpreadResult(
        (noisy[0], noisy[1], noisy[2]),
        specs,
        check_contribution_bound(bound),
        check_confidence(confidence),
    )


def spread_intervals(
    explanation: Mapping[str, Any], *, confidence: object, simultaneous: bool = False
) -> list[dict[str, Any]]:
    """Per-cell variance and sd with intervals at any confidence, from a stored to_dict()."""
    keys = ("count", "sum", "squares")
    laws = tuple(NoiseLaw.of_explanation(explanation[key]) for key in keys)
    values = [explanation[key]["values"] for key in keys]
    cells = spread_cells(
        *values,
        laws=laws,  # type: ignore[arg-type]
        w_bound=int(explanation["w_bound"]),
        confidence=confidence,
        simultaneous=simultaneous,
    )
    factor = Fraction(explanation["granularity"]) ** 2 / 4
    return [_describe(c, factor) for c in cells]
