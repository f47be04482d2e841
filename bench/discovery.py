"""Declaring what you cannot know in advance: private bounds and keys found in the data.

1. Bounds. A clipped mean of lognormal incomes (n = 10,000, log-mean 10.5, log-sd
   `--sigma`, default 0.8) at total epsilon 1: 10 % of it (0.1) estimates the upper bound
   privately (dpportal.privacy.unbounded_bounds, the lower bound 0 declared: incomes are
   never negative, public knowledge), the mean gets the other 0.9 (the product's
   release_mean, sum share 1/2, exact noise). Against: the same mean at the whole epsilon
   1 with the best fixed upper bound chosen in hindsight (the one, on a 60-point
   geometric grid, whose RMSE over the same datasets is lowest). Printed: both RMSEs
   (against each dataset's true mean), their ratio, and for context the RMSE when the
   bound is each dataset's true maximum (an oracle no private method can match).
   Then the upper bound extrapolated from two private quantiles under a log-normal tail
   model (dpportal.privacy.tail_bounds), aiming at 2, 5 and 10 values above it; `--family
   pareto` or `gamma` draws heavier- or lighter-tailed incomes, where that model is wrong.
   `--sweep` prints the ratio for a grid of the search's ratio and `outside` (how the
   kind's defaults were chosen).
2. Keys found in the data. Zipf-distributed keys (10,000 distinct, 1,000,000 rows,
   exponent 1), epsilon 1, delta 1e-6, one key per person (every row a person) and five
   (200,000 persons with five rows each): the expected number of keys published by the
   product's selection (dpportal.privacy.partition_selection, exact release
   probabilities) and by Gaussian thresholding as usually implemented (continuous
   analytic Gaussian, Balle & Wang 2018, on a vector of l2 sensitivity sqrt(L), delta
   split between the noise and the threshold, the best of 19 splits), plus one release
   of each.

    python -m bench.discovery [--datasets 200] [--sigma 0.8] [--family lognormal] [--sweep]
"""

from __future__ import annotations

import argparse
import math
import time
from fractions import Fraction

import numpy as np

N = 10_000
MU = 10.5


def _cells(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    # cells (-inf, e0], (e0, e1], ..., (e_last, inf)
    return np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)


def _mean(values, upper: float, epsilon: Fraction, rng) -> float:
    from dpportal.privacy.mechanisms import release_mean
    from dpportal.privacy.sensitivity import sum_granularity

    hi = Fraction(upper).limit_denominator(1000)
    g = sum_granularity(0, hi, epsilon=epsilon / 2)
    units = int(np.round(np.clip(values, 0, float(hi)) / float(g)).sum())
    result = release_mean(
        units,
        values.size,
        lower=0,
        upper=hi,
        granularity=g,
        mechanism="laplace",
        epsilon=epsilon,
        confidence=Fraction(95, 100),
        rng=rng,
    )
    return float(result.estimate)


def _rmse(errors) -> float:
    return math.sqrt(float(np.mean(np.square(errors))))


def incomes(family: str, sigma: float, rng) -> np.ndarray:
    """n incomes: log-normal (log-mean MU, log-sd sigma), or for contrast a Pareto tail of
    index 3 or a gamma of shape 2 with about the same median."""
    if family == "pareto":
        return (rng.pareto(3.0, N) + 1) * math.exp(MU) / 2 ** (1 / 3)
    if family == "gamma":
        return rng.gamma(2.0, math.exp(MU) / 1.678, N)
    return rng.lognormal(MU, sigma, N)


def bounds(datasets: int, sigma: float, sweep: bool, family: str = "lognormal") -> None:
    from dpportal.privacy.rng import SystemRandom
    from dpportal.privacy.tail_bounds import estimate_tail_upper
    from dpportal.privacy.unbounded_bounds import (
        DEFAULT_OUTSIDE,
        DEFAULT_RATIO,
        SearchGrid,
        estimate_bounds,
    )

    data_rng = np.random.default_rng(20261127)
    data = [incomes(family, sigma, data_rng) for _ in range(datasets)]
    truth = np.array([d.mean() for d in data])
    rng = SystemRandom()

    def private(ratio: Fraction, outside: int) -> tuple[float, float]:
        grid = SearchGrid.of(centre=0, unit=1, ratio=ratio, limit=10**9)
        edges = np.array(grid.edges())
        errors, uppers = [], []
        for d, t in zip(data, truth, strict=True):
            est = estimate_bounds(
                _cells(d, edges),
                grid=grid,
                ends="upper",
                outside=outside,
                epsilon=Fraction(1, 10),
                contribution_bound=1,
                rng=rng,
            )
            uppers.append(est.upper.value / d.max())
            errors.append(_mean(d, est.upper.value, Fraction(9, 10), rng) - t)
        return _rmse(errors), float(np.median(uppers))

    def private_tail(beyond: int) -> tuple[float, float]:
        grid = SearchGrid.of(centre=0, unit=1, ratio=DEFAULT_RATIO, limit=10**9)
        edges = np.array(grid.edges())
        errors, uppers = [], []
        for d, t in zip(data, truth, strict=True):
            est = estimate_tail_upper(
                _cells(d, edges),
                grid=grid,
                beyond=beyond,
                epsilon=Fraction(1, 10),
                contribution_bound=1,
                rng=rng,
            )
            # no bound (the model did not fit): the owner would have none to declare;
            # counted here at the grid's limit, the worst it could be
            upper = est.upper if est.upper is not None else float(grid.limit)
            uppers.append(upper / d.max())
            errors.append(_mean(d, upper, Fraction(9, 10), rng) - t)
        return _rmse(errors), float(np.median(uppers))

    start = time.perf_counter()
    candidates = np.exp(MU) * np.geomspace(1, math.exp(6 * sigma), 60)
    best_rmse, best_u = math.inf, 0.0
    for u in candidates:
        r = _rmse([_mean(d, u, Fraction(1), rng) - t for d, t in zip(data, truth, strict=True)])
        if r < best_rmse:
            best_rmse, best_u = r, float(u)
    oracle = _rmse(
        [_mean(d, d.max(), Fraction(1), rng) - t for d, t in zip(data, truth, strict=True)]
    )
    shape = f"lognormal({MU}, {sigma})" if family == "lognormal" else family
    print(f"bounds: {shape} incomes, n = {N}, {datasets} datasets, total epsilon 1")
    print(f"  hindsight: best fixed upper bound {best_u:,.0f}: RMSE {best_rmse:,.1f}")
    print(
        f"  oracle: each dataset's own maximum:      RMSE {oracle:,.1f} ({oracle / best_rmse:.2f}x)"
    )
    if sweep:
        for ratio in (Fraction(101, 100), Fraction(102, 100), Fraction(105, 100), Fraction(11, 10)):
            row = []
            for outside in (0, 2, 5, 10, 20):
                r, _ = private(ratio, outside)
                row.append(f"k={outside}: {r / best_rmse:.2f}")
            print(f"  ratio {float(ratio)}: " + "  ".join(row))
    r, median_upper = private(DEFAULT_RATIO, DEFAULT_OUTSIDE)
    print(
        f"  private bounds at 0.1 (ratio {float(DEFAULT_RATIO)}, outside {DEFAULT_OUTSIDE})"
        f" + mean at 0.9: RMSE {r:,.1f} = {r / best_rmse:.2f}x hindsight"
        f" (median upper / max {median_upper:.2f})"
    )
    for beyond in (2, DEFAULT_OUTSIDE, 10):
        r, median_upper = private_tail(beyond)
        print(
            f"  log-normal tail bound at 0.1 (about {beyond} values above)"
            f" + mean at 0.9: RMSE {r:,.1f} = {r / best_rmse:.2f}x hindsight"
            f" (median upper / max {median_upper:.2f})"
        )
    print(f"  ({time.perf_counter() - start:.0f} s)")


def zipf_counts(keys: int, rows: int, per_person: int, rng) -> np.ndarray:
    """Distinct persons per key: `rows / per_person` persons, each with `per_person` Zipf keys."""
    weights = 1.0 / np.arange(1, keys + 1)
    weights /= weights.sum()
    persons = rows // per_person
    draws = rng.choice(keys, size=(persons, per_person), p=weights)
    if per_person == 1:
        return np.bincount(draws[:, 0], minlength=keys)
    draws.sort(axis=1)
    distinct = np.concatenate([np.ones((persons, 1), bool), draws[:, 1:] != draws[:, :-1]], axis=1)
    return np.bincount(draws[distinct], minlength=keys)


def textbook_gaussian(epsilon: float, delta: float, keys: int):
    """Gaussian thresholding as usually implemented: continuous analytic sigma on l2
    sensitivity sqrt(keys) at delta_1, threshold for delta_2 = delta - delta_1, best split."""
    from scipy.stats import norm

    from dpportal.privacy.calibration import analytic_gaussian_sigma

    best = None
    for share in np.linspace(0.05, 0.95, 19):
        d1 = delta * share
        sigma = analytic_gaussian_sigma(epsilon, d1, math.sqrt(keys))
        p = -math.expm1(math.log1p(-(delta - d1)) / keys)
        tau = 1 + sigma * norm.isf(p)
        if best is None or tau < best[0]:
            best = (tau, sigma)
    return best


def keys_found() -> None:
    from scipy.stats import norm

    from dpportal.privacy.partition_selection import plan_selection, select_keys
    from dpportal.privacy.rng import SystemRandom

    rng = np.random.default_rng(7)
    print("keys found: Zipf(1) over 10,000 keys, 1,000,000 rows, epsilon 1, delta 1e-6")
    for per_person in (1, 5):
        counts = zipf_counts(10_000, 1_000_000, per_person, rng)
        counts = counts[counts > 0]
        for with_counts in (True, False):
            start = time.perf_counter()
            sel = plan_selection(
                epsilon=1,
                delta=Fraction(1, 10**6),
                keys_per_person=per_person,
                with_counts=with_counts,
            )
            expected = sum(sel.release_probability(int(c)) for c in counts)
            got = select_keys({str(i): int(c) for i, c in enumerate(counts)}, sel, SystemRandom())
            took = time.perf_counter() - start
            label = "keys and counts" if with_counts else "keys only"
            print(
                f"  L = {per_person}, {label}: {sel.mechanism} (threshold {sel.threshold}): "
                f"expected {expected:,.0f} keys, one release {len(got):,} ({took:.1f} s)"
            )
        tau, sigma = textbook_gaussian(1.0, 1e-6, per_person)
        textbook = float(np.sum(norm.sf((tau - counts) / sigma)))
        print(
            f"  L = {per_person}, Gaussian thresholding (textbook, sigma {sigma:.2f}, "
            f"threshold {tau:.1f}): expected {textbook:,.0f} keys"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--sigma", type=float, default=0.8)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--family", choices=("lognormal", "pareto", "gamma"), default="lognormal")
    parser.add_argument("--only", choices=("bounds", "keys"))
    args = parser.parse_args()
    if args.only != "keys":
        bounds(args.datasets, args.sigma, args.sweep, args.family)
    if args.only != "bounds":
        keys_found()


if __name__ == "__main__":
    main()
