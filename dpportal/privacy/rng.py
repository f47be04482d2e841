"""Sources of uniform random 64-bit words: the OS CSPRNG, or a seeded one for tests.

All randomness in dpportal.privacy flows through one small protocol: an object
with `.words(n)` returning n independent uniform 64-bit words as a numpy uint64
array. Samplers turn words into exact integer randomness (rejection sampling for
uniform integers, see dpportal.privacy.exact); they never call `random` or
`numpy.random`.

- `SystemRandom` (the default everywhere `rng=None`) reads `os.urandom` at every
  draw, through the `os` module attribute, so the kernel CSPRNG is the only
  source (and patching `os.urandom` to raise breaks sampling, as a test checks).
- `SeededTestRandom(seed)` is deterministic, for tests only. It is SHAKE-128 in
  counter mode over the seed (no `numpy.random`, no `random`). Nothing in this
  package selects it: no setting, environment variable or default reaches it; a
  caller must construct it and pass it explicitly.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "RandomSource",
    "SystemRandom",
    "SeededTestRandom",
    "resolve_rng",
    "uniform_keys",
    "random_bits",
]


@runtime_checkable
class RandomSource(Protocol):
    """Anything that yields uniform 64-bit words."""

    def words(self, n: int) -> np.ndarray:
        """Return n independent uniform words as a 1-D numpy uint64 array."""
        ...


class SystemRandom:
    """The operating system's CSPRNG (`os.urandom`), read at draw time."""

    def words(self, n: int) -> np.ndarray:
        """n uniform 64-bit words from `os.urandom(8 * n)`."""
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def __repr__(self) -> str:
        return "SystemRandom()"


class SeededTestRandom:
    """Deterministic words for tests: SHAKE-128(seed || counter) in counter mode.

    TEST ONLY. Output is a pure function of the seed and the call sequence, so a
    failing statistical test can be replayed. Never used unless passed explicitly.
    """

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError("seed must be a non-negative int")
        self._key = b"dpportal-test-rng:" + str(seed).encode()
        self._counter = 0

    def words(self, n: int) -> np.ndarray:
        """n words from the next block of the SHAKE-128 stream."""
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        block = self._key + b":" + self._counter.to_bytes(16, "little")
        self._counter += 1
        return np.frombuffer(hashlib.shake_128(block).digest(8 * n), dtype=np.uint64)

    def __repr__(self) -> str:
        return f"SeededTestRandom(counter={self._counter})"


_SYSTEM = SystemRandom()


def resolve_rng(rng: RandomSource | None) -> RandomSource:
    """`rng` itself, or the OS CSPRNG when None (the only default)."""
    if rng is None:
        return _SYSTEM
    if not hasattr(rng, "words"):
        raise TypeError("rng must provide .words(n) -> uint64 array (see dpportal.privacy.rng)")
    return rng


def uniform_keys(n: int, rng: RandomSource | None = None) -> np.ndarray:
    """n independent uniform 64-bit keys from the CSPRNG (a writable uint64 array).

    The releases app sorts rows of a person by these keys and keeps the first L:
    a uniformly random subset of L rows (ties have probability ~ n**2 / 2**65).
    """
    return np.array(resolve_rng(rng).words(int(n)), dtype=np.uint64, copy=True)


def random_bits(n: int, rng: RandomSource) -> np.ndarray:
    """n independent fair bits as a bool array (64 bits per word)."""
    if n <= 0:
        return np.zeros(0, dtype=bool)
    words = rng.words((n + 63) // 64)
    return np.unpackbits(words.view(np.uint8))[:n].astype(bool)
