"""Throughput of the exact samplers against numpy's (insecure, floating-point) Laplace.

Run: .venv/bin/python bench/noise.py [--repeat N]

For 1e3, 1e5 and 1e6 cells it times dpportal.privacy.samplers.discrete_laplace
and discrete_gaussian (os.urandom, exact integer arithmetic) and, in the same
run as the baseline, numpy.random.default_rng().laplace, and prints
microseconds per draw and the ratio to the baseline. Best of --repeat runs.
Goal: 1e6 discrete Laplace draws in <= 1.5 s.
numpy's sampler is the baseline only: it is never used for releases (Mironov 2012).
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpportal.privacy.samplers import discrete_gaussian, discrete_laplace  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)
CASES = (
    ("discrete_laplace scale=10/3", lambda n: discrete_laplace(Fraction(10, 3), n)),
    ("discrete_laplace scale=1e6", lambda n: discrete_laplace(10**6, n)),
    ("discrete_gaussian sigma=4.231", lambda n: discrete_gaussian(Fraction(4231, 1000), n)),
    ("discrete_gaussian sigma=1000", lambda n: discrete_gaussian(1000, n)),
)


def best_seconds(fn, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    generator = np.random.default_rng()

    def baseline(n: int) -> np.ndarray:
        return generator.laplace(0.0, 10 / 3, n)

    header = f"{'sampler':32s} {'cells':>9s} {'total s':>9s} {'us/draw':>9s} {'x numpy':>9s}"
    print(header)
    print("-" * len(header))
    for n in SIZES:
        base = best_seconds(baseline, n, args.repeat)
        print(f"{'numpy laplace (insecure)':32s} {n:9d} {base:9.4f} {1e6 * base / n:9.3f} {1:9.1f}")
        for name, fn in CASES:
            secs = best_seconds(fn, n, args.repeat)
            print(f"{name:32s} {n:9d} {secs:9.4f} {1e6 * secs / n:9.3f} {secs / base:9.1f}")
        print()


if __name__ == "__main__":
    main()
