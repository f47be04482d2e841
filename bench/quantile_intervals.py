"""Width and coverage of the quantile confidence intervals against the point estimate's error.

Run: .venv/bin/python bench/quantile_intervals.py [--epsilon 1] [--confidence 0.95] [--runs 1000]

Data: lognormal(0, 1) samples of n = 100, 1,000 and 100,000 values (fixed data
seeds; data, not noise), grid 0, 0.02, ..., 40 (2,001 candidates), L = 1. For the
median and the 0.9 quantile, each released alone with the same total epsilon:
- the point estimate (release_quantiles: one selection at eps): its exact rank
  error |#{x < c} - q n|, mean and 95th percentile;
- the interval (release_quantile_intervals: two ends at eps / 2): its shift s, the
  planned reach (planned_interval_rank_reach), its mean width in ranks
  (#{x < c_U} - #{x < c_L}) and in data units (c_U - c_L), and the observed
  coverage of [x_(a), x_(b)] (module dpportal.privacy.quantile_intervals).
Draws are vectorised over --runs releases with the same functions the release
calls, from a seeded test generator so the table is reproducible.
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpportal.privacy import quantile_intervals as qi  # noqa: E402
from dpportal.privacy.permute_flip import permute_and_flip_indices  # noqa: E402
from dpportal.privacy.quantiles import (  # noqa: E402
    RankCounter,
    candidate_grid,
    quantile_scaled_sensitivity,
    quantile_utilities,
)
from dpportal.privacy.rng import SeededTestRandom  # noqa: E402

SIZES = (100, 1_000, 100_000)
QUANTILES = (Fraction(1, 2), Fraction(9, 10))
GRID = candidate_grid(0, 40, "0.02")


def draw(utilities, runs: int, epsilon: Fraction, sensitivity: int, seed: int) -> np.ndarray:
    """`runs` independent permute-and-flip selections on the same utilities."""
    tiled = np.tile(np.array(list(utilities), dtype=np.int64), (runs, 1))
    return permute_and_flip_indices(
        tiled, epsilon=epsilon, sensitivity=sensitivity, rng=SeededTestRandom(seed)
    )


def one_case(n: int, q: Fraction, eps: Fraction, confidence: Fraction, runs: int) -> dict:
    x = np.random.default_rng(n).lognormal(0, 1, n)
    counter = RankCounter(GRID)
    counter.add(x)
    ranks = counter.rank_counts()
    sens = quantile_scaled_sensitivity(q, 1)
    point = draw(quantile_utilities(ranks, n, q), runs, eps, sens, 1)
    point_err = np.abs(ranks[point] - float(q * n))
    s = qi.interval_shift(
        epsilon_end=eps / 2,
        quantile=q,
        contribution_bound=1,
        candidates=len(GRID),
        confidence=confidence,
    )
    ends = [
        draw(
            qi.interval_utilities(ranks, n, quantile=q, shift=s, side=side), runs, eps / 2, sens, k
        )
        for k, side in ((2, qi.LOWER), (3, qi.UPPER))
    ]
    low, high = np.minimum(*ends), np.maximum(*ends)
    clamped = ranks.copy()
    clamped[0] = 0
    g = np.array([float(c) for c in GRID])
    xs = np.sort(np.clip(x, g[0], g[-1]))
    a, b = max(1, math.floor(q * n)), min(n, math.ceil(q * n) + 1)
    covered = (g[low] <= xs[a - 1]) & (g[high] >= xs[b - 1])
    (reach,) = qi.planned_interval_rank_reach(
        epsilon=eps, quantiles=[q], candidates=len(GRID), confidence=confidence
    )
    return {
        "n": n,
        "q": str(q),
        "point_err_mean": float(point_err.mean()),
        "point_err_p95": float(np.quantile(point_err, 0.95)),
        "shift": s,
        "reach": reach,
        "width_ranks": float(np.mean(clamped[high] - clamped[low])),
        "width_units": float(np.mean(g[high] - g[low])),
        "truth": float(np.quantile(x, float(q))),
        "coverage": float(covered.mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", default="1")
    parser.add_argument("--confidence", default="0.95")
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    eps, confidence = Fraction(args.epsilon), Fraction(args.confidence)
    print(
        f"lognormal(0,1), grid 0..40 step 0.02 (m={len(GRID)}), eps={args.epsilon} per "
        f"quantile, confidence={args.confidence}, {args.runs} runs"
    )
    header = (
        f"{'n':>7} {'q':>5} {'point err':>10} {'p95':>8} {'shift':>6} {'reach':>8} "
        f"{'width rk':>9} {'width':>8} {'truth':>7} {'cover':>6}"
    )
    print(header)
    for n in SIZES:
        for q in QUANTILES:
            r = one_case(n, q, eps, confidence, args.runs)
            print(
                f"{r['n']:>7} {r['q']:>5} {r['point_err_mean']:>10.1f} {r['point_err_p95']:>8.1f} "
                f"{r['shift']:>6} {r['reach']:>8.1f} {r['width_ranks']:>9.1f} "
                f"{r['width_units']:>8.3f} {r['truth']:>7.3f} {r['coverage']:>6.3f}"
            )


if __name__ == "__main__":
    main()
