"""Exact random primitives on integers, vectorised over numpy arrays.

Source: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, arXiv:2004.00010 (CKS below), Section 5.

Every outcome here is decided by comparing integers: uniform 64-bit words from
a `RandomSource` against integer thresholds. No floating-point number, exp or
log takes part in deciding an outcome. Arrays hold numpy uint64/int64 when the
numbers fit and Python ints (dtype=object) when they do not, so rational
parameters with huge numerators and denominators stay exact.

- Words are 32 bits wide when the denominator is below 2**31 and 64 bits
  otherwise (W = 2**32 or 2**64 below); either way at least half are accepted.
- U(n), uniform on {0, ..., n-1}: with q = floor((W - 1) / n), a word w is
  accepted iff w < q*n, and then w // q is uniform (each value has exactly q
  preimages). `w % n` alone would be biased. For n > 2**64, k words are joined
  into one k*64-bit integer and the same rejection is applied.
- Bernoulli(a/b), 0 <= a <= b: with q as above, accept w < q*b and return
  w < q*a, which has probability q*a / (q*b) = a/b exactly.
- Bernoulli(exp(-g)), g = a/b in [0, 1] (CKS Algorithm 1): K = 1; while
  Bernoulli(g/K) succeeds, K += 1; return (K odd). Bernoulli(g/K) is drawn as
  Bernoulli(1/K) AND Bernoulli(a/b), independent, to keep the integers small.
- Bernoulli(exp(-g)) for any rational g >= 0 (CKS Algorithm 1, second part):
  floor(g) independent Bernoulli(exp(-1)) trials must all succeed, then one
  Bernoulli(exp(-(g - floor(g)))).
"""

from __future__ import annotations

import numpy as np

from dpportal.privacy.rng import RandomSource

__all__ = [
    "uniform_below",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_fraction",
    "bernoulli_exp_one",
    "geometric_exp_one",
]

_TWO64 = 1 << 64
_WORD_MAX = _TWO64 - 1
_HALF_MAX = (1 << 32) - 1
_SMALL_DENOMINATOR = 1 << 31


def _word_type(denominator: int) -> tuple[type, int]:
    """32-bit words for denominators below 2**31 (acceptance > 1/2), else 64-bit words."""
    if denominator < _SMALL_DENOMINATOR:
        return np.uint32, _HALF_MAX
    return np.uint64, _WORD_MAX


def _draw(n: int, dtype: type, rng: RandomSource) -> np.ndarray:
    """n uniform words of the given width (two 32-bit halves per 64-bit word)."""
    if dtype is np.uint32:
        return rng.words((n + 1) // 2).view(np.uint32)[:n]
    return rng.words(n)


def _as_object(values: np.ndarray) -> np.ndarray:
    """The same integers as an object array of Python ints."""
    if values.dtype == object:
        return values
    return np.array(values.tolist(), dtype=object).reshape(values.shape)


def uniform_below(n: int, size: int, rng: RandomSource) -> np.ndarray:
    """`size` independent uniform integers in [0, n), n >= 1 (exact rejection sampling).

    Returns uint64 when n <= 2**64, else an object array of Python ints.
    """
    n = int(n)
    if n < 1:
        raise ValueError("uniform_below needs n >= 1")
    if size <= 0:
        return np.zeros(0, dtype=np.uint64 if n <= _TWO64 else object)
    if n == 1:
        return np.zeros(size, dtype=np.uint64)
    if n & (n - 1) == 0 and n <= _TWO64:  # a power of two: mask, nothing rejected
        return rng.words(size) & np.uint64(n - 1)
    if n < _TWO64:
        dtype, word_max = _word_type(n)
        q = word_max // n
        limit, quotient = dtype(q * n), dtype(q)
        out = np.empty(size, dtype=np.uint64)
        filled = 0
        while filled < size:
            need = size - filled
            w = _draw(need + need // 8 + 16, dtype, rng)
            w = w[w < limit][:need]
            out[filled : filled + w.size] = w // quotient
            filled += w.size
        return out
    return _uniform_below_big(n, size, rng)


def _uniform_below_big(n: int, size: int, rng: RandomSource) -> np.ndarray:
    """U(n) for n > 2**64: join k words into a k*64-bit integer, reject above q*n."""
    k = (n.bit_length() + 63) // 64
    span = 1 << (64 * k)
    q = span // n
    limit = q * n
    values: list[int] = []
    while len(values) < size:
        need = size - len(values)
        block = rng.words(k * (need + need // 8 + 4)).tobytes()
        step = 8 * k
        for i in range(0, len(block), step):
            w = int.from_bytes(block[i : i + step], "little")
            if w < limit:
                values.append(w // q)
                if len(values) == size:
                    break
    return np.array(values, dtype=object)


def bernoulli(numerator: np.ndarray, denominator: int, rng: RandomSource) -> np.ndarray:
    """Element-wise Bernoulli(numerator[i] / denominator), 0 <= numerator[i] <= denominator."""
    denominator = int(denominator)
    size = numerator.shape[0]
    if size == 0:
        return np.zeros(0, dtype=bool)
    if denominator < _TWO64:
        dtype, word_max = _word_type(denominator)
        num = numerator if numerator.dtype == dtype else numerator.astype(dtype)
        q = word_max // denominator
        limit = dtype(q * denominator)
        thresholds = num * dtype(q)  # <= q * denominator <= word_max: no overflow
        out = np.empty(size, dtype=bool)
        pending = np.arange(size)
        while pending.size:
            w = _draw(pending.size, dtype, rng)
            accepted = w < limit
            done = pending[accepted]
            out[done] = w[accepted] < thresholds[done]
            pending = pending[~accepted]
        return out
    u = uniform_below(denominator, size, rng)
    return np.asarray(u < _as_object(numerator), dtype=bool)


def _bernoulli_one_over(k: int, size: int, rng: RandomSource) -> np.ndarray:
    """`size` independent Bernoulli(1/k) draws, k >= 1."""
    if k == 1:
        return np.ones(size, dtype=bool)
    dtype, word_max = _word_type(k)
    q = word_max // k
    limit, threshold = dtype(q * k), dtype(q)
    out = np.empty(size, dtype=bool)
    pending = np.arange(size)
    while pending.size:
        w = _draw(pending.size, dtype, rng)
        accepted = w < limit
        out[pending[accepted]] = w[accepted] < threshold
        pending = pending[~accepted]
    return out


def bernoulli_exp_fraction(
    numerator: np.ndarray, denominator: int, rng: RandomSource
) -> np.ndarray:
    """Element-wise Bernoulli(exp(-numerator[i] / denominator)) for ratios in [0, 1].

    CKS Algorithm 1: K = 1; while Bernoulli(g / K): K += 1; return K odd.
    Pr[K odd] = sum_j (-1)**j g**j / j! = exp(-g).
    """
    size = numerator.shape[0]
    out = np.empty(size, dtype=bool)
    alive = np.arange(size)
    k = 1
    while alive.size:
        success = _bernoulli_one_over(k, alive.size, rng)
        passed = np.flatnonzero(success)
        if passed.size:
            success[passed] = bernoulli(numerator[alive[passed]], denominator, rng)
        out[alive[~success]] = k % 2 == 1
        alive = alive[success]
        k += 1
    return out


def bernoulli_exp_one(size: int, rng: RandomSource) -> np.ndarray:
    """`size` independent Bernoulli(exp(-1)) draws (CKS Algorithm 1 with g = 1).

    With g = 1 the first trial Bernoulli(1/1) always succeeds, so K starts at 2.
    """
    out = np.empty(size, dtype=bool)
    alive = np.arange(size)
    k = 2
    while alive.size:
        success = _bernoulli_one_over(k, alive.size, rng)
        out[alive[~success]] = k % 2 == 1
        alive = alive[success]
        k += 1
    return out


def geometric_exp_one(size: int, rng: RandomSource) -> np.ndarray:
    """Number of successes of Bernoulli(exp(-1)) before the first failure (int64).

    Pr[V = v] = (1 - 1/e) e**(-v): the geometric count of CKS Algorithm 2.
    """
    counts = np.zeros(size, dtype=np.int64)
    alive = np.arange(size)
    while alive.size:
        success = bernoulli_exp_one(alive.size, rng)
        alive = alive[success]
        counts[alive] += 1
    return counts


def bernoulli_exp(numerator: np.ndarray, denominator: int, rng: RandomSource) -> np.ndarray:
    """Element-wise Bernoulli(exp(-numerator[i] / denominator)) for any ratio >= 0.

    CKS Algorithm 1: floor(g) Bernoulli(exp(-1)) trials must all succeed, then
    one Bernoulli(exp(-(g - floor(g)))). numerator may be int64/uint64 or object.
    """
    denominator = int(denominator)
    whole = numerator // denominator
    fraction = numerator - whole * denominator
    out = np.ones(numerator.shape[0], dtype=bool)
    alive = np.flatnonzero(whole > 0)
    remaining = whole[alive]
    while alive.size:
        success = bernoulli_exp_one(alive.size, rng)
        out[alive[~success]] = False
        alive, remaining = alive[success], remaining[success] - 1
        more = remaining > 0
        alive, remaining = alive[more], remaining[more]
    survivors = np.flatnonzero(out)
    if survivors.size:
        out[survivors] = bernoulli_exp_fraction(fraction[survivors], denominator, rng)
    return out
