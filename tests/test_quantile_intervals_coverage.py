"""Quantiles through the real compute path: the released confidence intervals cover the
true quantile at least at their confidence, and the open grid (no upper bound) finds a
median of lognormal incomes.

Each run is what the compute task does with one statistic: the column read into the
grid's cell counts by the reader (releases.compute), then the kind's noisy_entry (the
joint draw and the intervals' ends), then the kind's intervals as every surface reads
them. The data are fixed per case (numpy generates them; no released value comes from
numpy); the noise comes from SeededTestRandom at fixed seeds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from dpportal.privacy.quantile_grids import open_grid
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds
from releases.kinds.quantiles import grid_of
from tests.privacy.conftest import audit_index_lower_bound

RUNS = 500
#: each case's test fails with probability at most this when coverage is at its nominal level
FALSE_FAILURE = 1e-6


def _entry(grid: dict, quantiles: list[str], epsilon: str = "1") -> dict:
    column = {"name": "y", "kind": "numeric", "missing": "drop"}
    entry = {
        "position": 0, "kind": "quantiles", "label": "", "columns": [column], "groups": [],
        "category": None, "epsilon": epsilon, "delta": "0", "quantiles": quantiles,
        "grid": grid, "method": "joint", "interval_share": "1/2",
    }  # fmt: skip
    entry["candidates"] = len(grid_of(entry))
    return entry


def _aggregate(entry: dict, values: np.ndarray):
    reader = compute.StatisticReader.from_spec(entry)
    return reader.aggregate(pa.table({"y": values}), len(values))


def _release(entry: dict, aggregate, confidence: str, seed: int) -> dict:
    return dp.noisy_entry(
        entry=entry, aggregate=aggregate, mechanism="laplace", confidence=confidence,
        contribution_bound=1, cells=[], rng=SeededTestRandom(seed),
    )  # fmt: skip


def _miss_limit(runs: int, miss: float) -> int:
    """The smallest x with P(Binomial(runs, miss) >= x) <= FALSE_FAILURE / 9 (nine cases)."""
    tail, x = 1.0, 0
    while tail > FALSE_FAILURE / 9:
        tail -= math.comb(runs, x) * miss**x * (1 - miss) ** (runs - x)
        x += 1
    return x


def _true_range(values: np.ndarray, q: Fraction, first: float, last: float) -> tuple[float, float]:
    """x_(a) and x_(b) of the values clamped to the grid, a = max(1, floor(q n)),
    b = min(n, ceil(q n) + 1): every usual definition of the q-quantile lies between."""
    x = np.sort(np.clip(values, first, last))
    n = x.size
    a = max(1, math.floor(q * n))
    b = min(n, math.ceil(q * n) + 1)
    return float(x[a - 1]), float(x[b - 1])


def _values(n: int, shape: str) -> np.ndarray:
    data = np.random.default_rng(n)
    if shape == "lognormal":
        return np.exp(data.normal(5, 1, n))  # spills past the grid's top: clamped truth
    return data.integers(0, 60, n).astype(float) * 5  # ties on grid points


CASES = [
    (n, confidence, ("lognormal", "ties")[i % 2])
    for i, (n, confidence) in enumerate(
        (n, c) for n in (100, 1000, 100_000) for c in ("0.9", "0.95", "0.99")
    )
]


@pytest.mark.parametrize(("n", "confidence", "shape"), CASES)
def test_intervals_cover_the_true_median_at_their_confidence(n, confidence, shape):
    """Misses of the median's interval over RUNS releases stay within what a coverage of
    exactly `confidence` allows (false failure <= FALSE_FAILURE / 9 per case)."""
    entry = _entry({"lower": "0", "upper": "400", "step": "2"}, ["0.5"])
    values = _values(n, shape)
    aggregate = _aggregate(entry, values)
    low_true, high_true = _true_range(values, Fraction(1, 2), 0.0, 400.0)
    kind = kinds.get("quantiles")
    misses, widths = 0, []
    for run in range(RUNS):
        result = _release(entry, aggregate, confidence, seed=run + 7919 * n)
        (cell,) = kind.intervals(result, confidence=confidence)
        assert cell.low is not None and cell.high is not None
        assert cell.low <= cell.high
        misses += not (cell.low <= low_true and high_true <= cell.high)
        widths.append(cell.high - cell.low)
    assert misses <= _miss_limit(RUNS, 1 - float(confidence)), misses
    # not the whole grid: the interval says something at these n
    if n >= 1000:
        assert np.mean(widths) < 200, np.mean(widths)


def test_an_interval_is_not_claimed_above_the_level_it_was_released_at():
    entry = _entry({"lower": "0", "upper": "400", "step": "2"}, ["0.25", "0.5"])
    values = _values(1000, "lognormal")
    result = _release(entry, _aggregate(entry, values), "0.9", seed=3)
    kind = kinds.get("quantiles")
    assert all(c.low is not None for c in kind.intervals(result, confidence="0.9"))
    assert all(c.low is not None for c in kind.intervals(result, confidence="0.8"))
    assert all(c.low is None for c in kind.intervals(result, confidence="0.95"))
    # all at once: two intervals each missing <= 10 % hold together at 80 %, not at 90 %
    assert all(
        c.low is not None for c in kind.intervals(result, confidence="0.8", simultaneous=True)
    )
    assert all(c.low is None for c in kind.intervals(result, confidence="0.9", simultaneous=True))


def test_open_grid_finds_the_median_of_lognormal_incomes_without_an_upper_bound():
    """Median of n = 10,000 lognormal incomes at epsilon 1 with only a lower bound (0) and
    a step of 1: within the central 10 % of ranks in >= 90 % of runs. The observed rate
    is 100 % here; the test fails only if fewer than 90 of 100 runs land (false failure
    below 1e-9 at a true rate of 99 %)."""
    entry = _entry({"open": True, "lower": "0", "step": "1"}, ["0.5"])
    assert entry["candidates"] == len(open_grid(Fraction(0), Fraction(1)))
    values = np.exp(np.random.default_rng(11).normal(10, 1, 10_000))
    aggregate = _aggregate(entry, values)
    inside = 0
    for run in range(100):
        result = _release(entry, aggregate, "0.95", seed=run)
        value = float(Fraction(result["values"][0]))
        rank = int(np.sum(values < value))
        inside += 4_500 <= rank <= 5_500
    assert inside >= 90, inside


def test_audit_of_the_open_grid_stays_within_the_charged_epsilon():
    """Black-box audit: D and D' = D plus one person's row at the worst place (far above
    every candidate), the median's released index observed over 200 releases each; the
    empirical lower bound on epsilon (Clopper-Pearson, tests.privacy.conftest) is at most
    the charged epsilon (false failure <= the audit's alpha)."""
    entry = _entry({"open": True, "lower": "0", "step": "1"}, ["0.5"], epsilon="1")
    base = np.array([3.0, 5, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377])
    sides = [base, np.append(base, 1e18)]
    observed = []
    for side, values in enumerate(sides):
        aggregate = _aggregate(entry, values)
        indices = [
            _release(entry, aggregate, "0.95", seed=10_000 * side + run)["explanation"][
                "quantiles"
            ][0]["index"]
            for run in range(200)
        ]
        observed.append(np.array(indices, dtype=np.int64))
    lb = audit_index_lower_bound(observed[0], observed[1], entry["candidates"])
    assert lb <= 1, lb
