"""Exact discrete Laplace and discrete Gaussian samplers over a CSPRNG.

Source: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, arXiv:2004.00010 (CKS), Algorithms 2 and 3.

- Discrete Laplace with scale b > 0 (two-sided geometric):
  Pr[Y = y] = (1 - a) / (1 + a) * a**|y|, a = exp(-1/b), y in Z.
- Discrete Gaussian with sigma > 0:
  Pr[Y = y] = exp(-y**2 / (2 sigma**2)) / sum_z exp(-z**2 / (2 sigma**2)), y in Z.

Both resist the floating-point attack of Mironov (CCS 2012): outcomes are
integers decided by integer comparisons of CSPRNG words (dpportal.privacy.exact);
the scale is an exact rational t/s. Randomness comes from `os.urandom` unless a
test passes an explicit `rng` (dpportal.privacy.rng).

The rejection loops are vectorised: a batch of candidates is drawn with numpy
array operations, the accepted ones kept, and the shortfall drawn again. Batch
sizes are estimated with floats, which only affects speed, never outcomes.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.exact import (
    bernoulli_exp,
    bernoulli_exp_fraction,
    geometric_exp_one,
    uniform_below,
)
from dpportal.privacy.params import to_fraction
from dpportal.privacy.rng import RandomSource, random_bits, resolve_rng

__all__ = ["discrete_laplace", "discrete_gaussian", "discrete_gaussian_variance"]

_INT64_LIMIT = 1 << 63
_SMALL = 1 << 62
_CHUNK = 1 << 20


def _positive(value: object, name: str) -> Fraction:
    x = to_fraction(value, name)
    if x <= 0:
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be > 0, got %(value)s"), name=name, value=repr(value)
        )
    return x


def _shape(size: int | tuple[int, ...]) -> tuple[int, ...]:
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    if any(int(n) < 0 for n in shape):
        raise ValueError(f"size must be non-negative, got {size!r}")
    return tuple(int(n) for n in shape)


def _to_int64(values: np.ndarray) -> np.ndarray:
    """Object array of Python ints to int64, refusing values beyond the int64 range."""
    if values.dtype != object:
        return values.astype(np.int64)
    if values.size and max(abs(int(values.max())), abs(int(values.min()))) >= _INT64_LIMIT:
        raise OverflowError("a noise value does not fit in int64; the scale is too large")
    return values.astype(np.int64)


def _fill(total: int, batch, acceptance: float) -> np.ndarray:
    """Call batch(m) -> accepted int64 samples until `total` samples are collected."""
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        need = min(total - filled, _CHUNK)
        draws = batch(int(need / acceptance * 1.05) + 16)
        take = min(need, draws.size)
        out[filled : filled + take] = draws[:take]
        filled += take
    return out


def _laplace_batch(t: int, s: int, m: int, rng: RandomSource) -> np.ndarray:
    """One round of CKS Algorithm 2 on m candidates; returns the accepted samples.

    U ~ U(t) kept with probability exp(-U/t); V ~ geometric(1 - 1/e);
    X = U + t*V is geometric with Pr[X = x] proportional to exp(-x/t);
    Y = floor(X / s); a fair sign B; reject (B negative, Y = 0); return (1-2B)Y.
    """
    if t == 1:
        u = np.zeros(m, dtype=np.int64)
    else:
        u = uniform_below(t, m, rng)
        u = u[bernoulli_exp_fraction(u, t, rng)]
    v = geometric_exp_one(u.shape[0], rng)
    big = t >= _SMALL or s >= _SMALL
    if not big and v.size and (int(v.max()) + 1) * t >= _INT64_LIMIT:
        big = True
    if big:
        x = np.array(u.tolist(), dtype=object) + np.array(v.tolist(), dtype=object) * t
        y = _to_int64(x // s)
    else:
        y = (u.astype(np.int64) + v * t) // s
    negative = random_bits(y.size, rng)
    keep = ~(negative & (y == 0))
    y, negative = y[keep], negative[keep]
    return np.where(negative, -y, y)


def discrete_laplace(
    scale: object, size: int | tuple[int, ...], rng: RandomSource | None = None
) -> np.ndarray:
    """Exact discrete Laplace noise: Pr[Y = y] proportional to exp(-|y| / scale).

    scale: b > 0 as Fraction, Decimal, int, str or float (converted exactly).
    size: number (or shape) of independent draws. rng: None for the OS CSPRNG.
    Returns an int64 array. Source: CKS 2020, Algorithm 2 (scale t/s).
    Mechanism use: adding Y with b = Delta1 / epsilon to an integer query of l1
    sensitivity Delta1 is epsilon-DP (CKS Section 2; Ghosh, Roughgarden,
    Sundararajan 2009 for the geometric mechanism).
    """
    b = _positive(scale, "scale")
    shape = _shape(size)
    total = math.prod(shape)
    source = resolve_rng(rng)
    t, s = b.numerator, b.denominator
    a = math.exp(-1.0 / float(b)) if float(b) > 1e-300 else 0.0
    keep_u = 1.0 if t == 1 else (1.0 - math.exp(-1.0)) / (-math.expm1(-1.0 / t) * t)
    acceptance = keep_u * (1.0 - (1.0 - a) / 2.0)
    out = _fill(total, lambda m: _laplace_batch(t, s, m, source), acceptance)
    return out.reshape(shape)


def discrete_gaussian(
    sigma: object, size: int | tuple[int, ...], rng: RandomSource | None = None
) -> np.ndarray:
    """Exact discrete Gaussian noise: Pr[Y = y] proportional to exp(-y**2 / (2 sigma**2)).

    sigma > 0 as Fraction, Decimal, int, str or float (converted exactly; sigma**2
    is then an exact rational p/q). Returns an int64 array.
    Source: CKS 2020, Algorithm 3: with t = floor(sigma) + 1, draw Y from the
    discrete Laplace with scale t and accept it with probability
    exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2)) = exp(-(|Y| q t - p)**2 / (2 p q t**2)).
    """
    sg = _positive(sigma, "sigma")
    return _discrete_gaussian(sg * sg, sg.numerator // sg.denominator + 1, size, rng)


def discrete_gaussian_variance(
    variance: object, size: int | tuple[int, ...], rng: RandomSource | None = None
) -> np.ndarray:
    """The discrete Gaussian of `discrete_gaussian` given sigma**2 (an exact rational) rather
    than sigma, for a law whose sigma is irrational (a variance p/q that is no square).

    CKS Algorithm 3 is exact for every positive integer t (the proof of its Theorem
    holds for any t; t near sigma only makes it fast); t = floor(sqrt(p/q)) + 1 is
    computed exactly with integer square roots.
    """
    var = _positive(variance, "variance")
    return _discrete_gaussian(var, math.isqrt(var.numerator // var.denominator) + 1, size, rng)


def _discrete_gaussian(
    variance: Fraction, t: int, size: int | tuple[int, ...], rng: RandomSource | None
) -> np.ndarray:
    shape = _shape(size)
    total = math.prod(shape)
    source = resolve_rng(rng)
    p, q = variance.numerator, variance.denominator
    qt = q * t
    denominator = 2 * p * q * t * t

    def batch(m: int) -> np.ndarray:
        y = discrete_laplace(t, m, source)
        magnitude = np.abs(y)
        largest = max(int(magnitude.max()) * qt if y.size else 0, p)
        if largest * largest < _INT64_LIMIT and denominator < _INT64_LIMIT:
            diff = magnitude * qt - p
        else:
            diff = np.array(magnitude.tolist(), dtype=object) * qt - p
        return y[bernoulli_exp(diff * diff, denominator, source)]

    out = _fill(total, batch, 0.55)
    return out.reshape(shape)
