"""Coverage of the issue-14 kinds through the real compute path (acceptance of issue 14).

The true aggregates come from the real readers (releases.compute.release_aggregate
on a Parquet file, once); the noise is then drawn 300 times through the same
releases.dp.noisy_entry the worker calls, with the test-only seeded RNG, and the
intervals are read back by releases.kinds (what every page shows).

Criteria: per-cell and simultaneous coverage >= nominal - 3 standard errors
(se = sqrt(p (1 - p) / 300)); quantile rank error within the stated bound in
>= (1 - beta) - 3 se of the runs. False-failure rate: if every interval covered
exactly at its nominal level, each check would fail with probability ~0.0013
(normal approximation); there are 66 checks, so <= 9 % in that worst case, and
far less in fact: the intervals are conservative (union bounds over parts and
cells, discrete tails rounded outward). The seeds are fixed, so the outcome is
deterministic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds, lifecycle
from releases.compute import StatisticReader
from releases.kinds.quantiles import grid_of, quantile_ranks
from tests.releases_support import make_dataset, submitted


def _intervals(entry, **options):
    """Each cell's value and interval as the statistic's kind states them (as dicts)."""
    return [c.as_dict() for c in kinds.get(entry["kind"]).intervals(entry, **options)]


RUNS = 300
LEVELS = ("0.90", "0.95", "0.99")
STATS = [
    {"kind": "grouped_sum", "column": "income", "group_by": "region", "epsilon": "0.05",
     "hold": True},
    {"kind": "grouped_mean", "column": "income", "group_by": "region", "n_guess": 800,
     "epsilon": "0.05", "hold": True},
    {"kind": "stddev", "column": "income", "group_by": "region", "n_guess": 800,
     "epsilon": "0.2", "hold": True},
    {"kind": "variance", "column": "age", "n_guess": 5000, "epsilon": "0.05", "hold": True},
    {"kind": "quantiles", "column": "income", "quantiles": ["0.1", "0.5", "0.9"],
     "step": "500", "epsilon": "0.05", "hold": True},
]  # fmt: skip


def floor_rate(level: str) -> float:
    p = float(level)
    return p - 3 * math.sqrt(p * (1 - p) / RUNS)


def true_cells(entry, aggregate) -> list[float]:
    """The value each interval must cover, from the real readers' exact aggregate."""
    gamma = Fraction(entry["granularity"])
    if entry["kind"] == "grouped_sum":
        return [float(s * gamma) for s in aggregate[0]]
    if entry["kind"] == "grouped_mean":
        return [float(s * gamma / c) for s, c in zip(aggregate[0], aggregate[1], strict=True)]
    out = []
    for n, s, q in zip(*aggregate, strict=True):
        variance = (Fraction(q, n) - Fraction(s, n) ** 2) * gamma**2 / 4
        out.append(float(variance) if entry["kind"] == "variance" else math.sqrt(variance))
    return out


@pytest.fixture
def computed(project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=5000)
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=STATS, epsilon="1"
    )
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    return release, compute.release_aggregate(release=release)


def draw(release, entry, aggregate, *, confidence: str, seed: int) -> dict:
    return dp.noisy_entry(
        entry=entry, aggregate=aggregate, mechanism=release.spec["mechanism"],
        confidence=confidence, contribution_bound=1,
        cells=StatisticReader.from_spec(entry).axes, rng=SeededTestRandom(seed),
    )  # fmt: skip


@pytest.mark.django_db
def test_interval_coverage_through_the_compute_path(computed):
    release, aggregates = computed
    for position, (entry, aggregate) in enumerate(
        zip(release.spec["statistics"], aggregates, strict=True)
    ):
        if entry["kind"] == "quantiles":
            continue
        truth = true_cells(entry, aggregate)
        hits = {(lv, sim): [0] * len(truth) for lv in LEVELS for sim in (False, True)}
        together = {(lv, sim): 0 for lv in LEVELS for sim in (False, True)}
        for run in range(RUNS):
            out = draw(release, entry, aggregate, confidence="0.95", seed=1000 * position + run)
            for level in LEVELS:
                for sim in (False, True):
                    cells = _intervals(out, confidence=level, simultaneous=sim)
                    inside = [c["low"] <= t <= c["high"] for c, t in zip(cells, truth, strict=True)]
                    for i, ok in enumerate(inside):
                        hits[level, sim][i] += ok
                    together[level, sim] += all(inside)
        for level in LEVELS:
            rates = [h / RUNS for h in hits[level, False]]
            assert min(rates) >= floor_rate(level), (entry["kind"], level, rates)
            # all cells at once, with the simultaneous intervals
            assert together[level, True] / RUNS >= floor_rate(level), (entry["kind"], level)


@pytest.mark.django_db
def test_quantile_rank_error_within_the_stated_bound(computed):
    release, aggregates = computed
    entry, cell_counts = release.spec["statistics"][4], aggregates[4]
    ranks, n = quantile_ranks(cell_counts)
    grid = [Fraction(c) for c in grid_of(entry)]
    within = {level: [0, 0, 0] for level in LEVELS}
    for run in range(RUNS):
        out = draw(release, entry, cell_counts, confidence="0.95", seed=777 + run)
        for level in LEVELS:
            bounds = _intervals(out, confidence=level)
            for i, q in enumerate(entry["quantiles"]):
                target = Fraction(q) * n
                best = min(abs(r - target) for r in ranks)
                chosen = ranks[grid.index(Fraction(out["values"][i]))]
                within[level][i] += abs(chosen - target) <= best + bounds[i]["rank_error"]
    for level in LEVELS:
        for i in range(3):
            assert within[level][i] / RUNS >= floor_rate(level), (level, i, within[level])
