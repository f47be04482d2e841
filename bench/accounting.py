"""Latency of the tight (PLD) cap check against the length of a project's history.

Run: .venv/bin/python bench/accounting.py [--repeat N]

For 10, 100 and 1,000 earlier releases it times dpportal.privacy.pld.within_cap
(the check an approval makes under the project's row lock) and, separately,
the "how many more releases like this one fit" search, with the per-mechanism
PLD cache cleared before every run (a cold worker). Two histories:

- repeated: a project that publishes a few release designs again and again
  (a Laplace count and histogram release, a Gaussian mean release, a Gaussian
  histogram with L = 3, a Report Noisy Max): few distinct mechanisms, large
  multiplicities;
- distinct: every release has its own epsilon (Laplace counts, Gaussian
  histograms, Gaussian sums in grid units, Report Noisy Max in turn), so every
  mechanism is different: the worst case for the accountant.

Realistic scale: the releases' epsilons shrink with the history so that the
project stays near a cap of (20, 1e-5) (about 40 by basic composition; a long
history means many small releases). Stress scale: every release keeps epsilons
of 0.1 to 1.1 whatever the history, so 1,000 releases reach hundreds of epsilon
(far past any cap; the composed loss distribution gets wide and slow).

The candidate is a Gaussian release (a count and a mean). Prints medians over
--repeat runs. Goal: the check takes < 1 s with 1,000 earlier releases.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpportal.privacy import noise, pld, pld_pmfs  # noqa: E402
from dpportal.privacy.mechanism_records import (  # noqa: E402
    MechanismRecord,
    records_from_explanation,
)
from dpportal.privacy.sensitivity import sum_granularity  # noqa: E402

HISTORY = (10, 100, 1_000)
EPSILON_CAP, DELTA_CAP = Fraction(20), Fraction(1, 10**5)


def _gaussian_count(epsilon: Fraction, bound: int = 1, cells: int = 1) -> MechanismRecord:
    spec = noise.count_noise(
        mechanism="gaussian",
        epsilon=epsilon,
        delta=Fraction(1, 10**7),
        contribution_bound=bound,
        cells=cells,
        statistic="histogram" if cells > 1 else "count",
    )
    return records_from_explanation(spec.describe())[0]


def _gaussian_mean(epsilon: Fraction) -> list[MechanismRecord]:
    sum_part, count_part = noise.mean_noise(
        lower=0,
        upper=100,
        granularity=sum_granularity(0, 100, epsilon=epsilon / 2),
        mechanism="gaussian",
        epsilon=epsilon,
        delta=Fraction(1, 10**7),
    )
    return [
        records_from_explanation(sum_part.describe())[0],
        records_from_explanation(count_part.describe())[0],
    ]


def _laplace_count(epsilon: Fraction, bound: int = 1) -> MechanismRecord:
    return MechanismRecord.discrete_laplace(sensitivity=bound, scale=bound / epsilon)


def repeated_history(releases: int, unit: Fraction) -> list[MechanismRecord]:
    """A few release designs, republished; every release has 1-3 statistics."""
    designs = [
        [_laplace_count(unit / 10), _laplace_count(unit / 5, bound=2)],
        _gaussian_mean(unit / 4),
        [_gaussian_count(unit / 2, bound=3, cells=12)],
        [MechanismRecord.report_noisy_max(epsilon=unit / 10), _laplace_count(unit)],
    ]
    out: list[MechanismRecord] = []
    for i in range(releases):
        out.extend(designs[i % len(designs)])
    return out


def distinct_history(releases: int, unit: Fraction) -> list[MechanismRecord]:
    """Every release its own epsilon: no two mechanisms are equal."""
    out: list[MechanismRecord] = []
    for i in range(releases):
        eps = unit * (Fraction(1, 10) + Fraction(i % 1000, 1000))
        kind = i % 4
        if kind == 0:
            out.append(_laplace_count(eps))
        elif kind == 1:
            out.append(_gaussian_count(eps, cells=8))
        elif kind == 2:
            out.extend(_gaussian_mean(eps))
        else:
            out.append(MechanismRecord.report_noisy_max(epsilon=eps))
    return out


def candidate() -> list[MechanismRecord]:
    """The release to approve: a Gaussian count and a Gaussian mean."""
    return [_gaussian_count(Fraction(1, 2)), *_gaussian_mean(Fraction(1, 2))]


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        pld_pmfs._pld_for_key.cache_clear()  # a cold worker: no PLD built yet
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cand = candidate()
    header = (
        f"{'history':20s} {'releases':>8s} {'records':>8s} {'distinct':>8s} "
        f"{'check s':>8s} {'fit s':>8s} {'eps PLD':>8s} {'eps basic':>9s} {'fit':>6s}"
    )
    print(header)
    print("-" * len(header))
    for scale in ("realistic", "stress"):
        for name, build in (("repeated", repeated_history), ("distinct", distinct_history)):
            for releases in HISTORY:
                unit = (
                    Fraction(1) if scale == "stress" else min(Fraction(1), Fraction(50, releases))
                )
                records = build(releases, unit)
                row(f"{scale}/{name}", releases, records, cand, args.repeat)


def row(name: str, releases: int, records: list, cand: list, repeat: int) -> None:
    distinct = len({r.key for r in records})

    def check():
        return pld.within_cap(
            records, cand, epsilon_cap=EPSILON_CAP, delta_cap=DELTA_CAP, count_fit=False
        )

    def fit():
        return pld.releases_that_fit(records, cand, epsilon_cap=EPSILON_CAP, delta_cap=DELTA_CAP)

    check_s = median_seconds(check, repeat)
    fit_s = median_seconds(fit, repeat)
    result = check()
    print(
        f"{name:20s} {releases:8d} {len(records):8d} {distinct:8d} {check_s:8.3f} "
        f"{fit_s:8.3f} {result.after.pld_epsilon:8.2f} "
        f"{float(result.after.basic.epsilon):9.2f} {fit():6d}"
    )


if __name__ == "__main__":
    main()
