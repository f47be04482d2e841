"""NoiseSpec for vector statistics whose sensitivities are derived outside noise.py.

The grouped statistics (dpportal.privacy.grouped) and the spread parts
(dpportal.privacy.spread) add noise to a vector of integer aggregates, exactly as
a histogram does, but with sensitivities derived in their own modules (group
bounds, centred squares). This module turns such a derivation into the same
frozen `NoiseSpec` the existing mechanisms use, so sampling, description and
the accuracy functions (accuracy.result_halfwidth, accuracy.noise_halfwidth)
work unchanged:

- Laplace: discrete Laplace with scale b = Delta1 / epsilon (in units); eps-DP
  (Dwork & Roth 2014, Thm 3.6; CKS 2020, Section 2 for integer noise).
- Gaussian: discrete Gaussian with sigma = calibration.gaussian_sigma at the l2
  sensitivity Delta2 (in units). When one privacy unit can move several
  coordinates (`multivariate=True`) the delta is bounded through zCDP
  (rho = Delta2**2 / (2 sigma**2), CKS 2020 Thm 14 and Cor. 13); when only one
  coordinate can move, CKS 2020 Thm 7 (integer Delta2) is exact.

Delta2 may be a rational UPPER bound of an irrational l2 norm (sqrt of an
integer): `sqrt_upper` rounds it up, which only adds noise.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

from dpportal.privacy.noise import NoiseSpec, build_spec
from dpportal.privacy.params import round_up_sig

__all__ = ["L2_DIGITS", "sqrt_upper", "vector_noise"]

L2_DIGITS = 6


def sqrt_upper(square: int) -> Fraction:
    """An exact rational r >= sqrt(square): the integer root when exact, else 6 digits rounded up.

    Used for l2 sensitivities sqrt(sum c_g**2); a larger Delta2 only adds noise.
    """
    if square < 0:
        raise ValueError("square must be >= 0")
    root = math.isqrt(square)
    if root * root == square:
        return Fraction(root)
    approx = Fraction(Decimal(square).sqrt(Context(prec=30)))
    value = round_up_sig(approx, L2_DIGITS)
    while value * value < square:  # approx may sit a hair below the root
        value = round_up_sig(value * (1 + Fraction(1, 10 ** (L2_DIGITS + 2))), L2_DIGITS)
    return value


def vector_noise(
    *,
    statistic: str,
    mechanism: object,
    epsilon: object,
    delta: object,
    l1_sensitivity: int,
    l2_sensitivity: int | Fraction,
    contribution_bound: int,
    cells: int,
    multivariate: bool,
    granularity: Fraction = Fraction(1),
    lower: Fraction | None = None,
    upper: Fraction | None = None,
) -> NoiseSpec:
    """The NoiseSpec of a `cells`-vector with the given sensitivities (in units).

    l1_sensitivity: max over neighbours of sum_i |f_i(D) - f_i(D')| (integer units);
    l2_sensitivity: max of the Euclidean norm (an integer or a rational upper bound).
    Laplace refuses delta != 0; Gaussian needs delta > 0 (params.check_delta).
    """
    return build_spec(
        statistic=statistic,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        l1=l1_sensitivity,
        l2=l2_sensitivity,
        bound=contribution_bound,
        cells=cells,
        granularity=granularity,
        lower=lower,
        upper=upper,
        multivariate=multivariate,
    )
