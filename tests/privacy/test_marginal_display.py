"""The integer display layer of marginal tables: non-negative integers, exactly
consistent, close to the unbiased input, bounded in size and time.

Inputs are the marginals of (counts + Gaussian noise) over the full domain, so they
are consistent by construction and, in the sparse regime, have negative cells. All
seeds are fixed: the closeness bounds are measured on these inputs (worst case seen
over 30 seeds is quoted where it matters), not probabilistic claims.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy import marginal_display
from dpportal.privacy.marginal_display import (
    DISPLAY_MAX_CELLS,
    DisplayUnavailable,
    display_tables,
)
from dpportal.privacy.marginal_workload import Workload, all_marginals

WORKLOADS = {
    "one-way with total": Workload.of([5], [(0,), ()]),
    "all two-way of four": Workload.of([2, 3, 4, 5], all_marginals(4, 2, total=True)),
    "three-way with margins": Workload.of([4, 3, 5], all_marginals(3, 3, total=True)),
    "overlapping maximal": Workload.of([3, 4, 2, 5], [(0, 1, 2), (2, 3), (1, 3), (0,), ()]),
    "disjoint one-ways": Workload.of([3, 4], [(0,), (1,)]),
}
#: (rows, noise sd per full-domain cell, Dirichlet concentration of the cell probabilities):
#: dense (every cell positive), sparse (many negative cells)
REGIMES = {"dense": (3000, 0.3, 50.0), "sparse": (60, 2.0, 1.0)}


def _inputs(workload: Workload, seed: int, rows: int, sd: float, spread: float = 1.0) -> dict:
    rng = np.random.default_rng(seed)
    cells = int(np.prod(workload.sizes))
    probabilities = rng.dirichlet(np.full(cells, spread))
    counts = rng.multinomial(rows, probabilities).reshape(workload.sizes)
    noisy = counts + rng.normal(0.0, sd, workload.sizes)
    everything = range(len(workload.sizes))
    return {
        m: noisy.sum(axis=tuple(i for i in everything if i not in m)) for m in workload.marginals
    }


def _assert_consistent(workload: Workload, out: dict) -> None:
    """Every published table equals the sum of every published table containing it."""
    for low, high in itertools.permutations(workload.marginals, 2):
        if set(low) < set(high):
            drop = tuple(i for i, a in enumerate(high) if a not in low)
            assert np.array_equal(out[high].sum(axis=drop), out[low]), (low, high)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("name", WORKLOADS)
def test_display_is_nonnegative_integer_and_exactly_consistent(name, regime):
    workload = WORKLOADS[name]
    for seed in range(3):
        tables = _inputs(workload, seed, *REGIMES[regime])
        out = display_tables(workload, tables)
        assert set(out) == set(workload.marginals)
        for m in workload.marginals:
            assert out[m].dtype == np.int64
            assert out[m].shape == workload.shape(m)
            assert out[m].min() >= 0
        _assert_consistent(workload, out)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("name", WORKLOADS)
def test_display_total_rounds_the_input_total(name, regime):
    """The displayed total is the input total (>= 0 here) rounded up or down."""
    workload = WORKLOADS[name]
    for seed in range(3):
        tables = _inputs(workload, seed, *REGIMES[regime])
        total = float(tables[workload.marginals[0]].sum())
        assert total >= 0
        shown = int(display_tables(workload, tables)[workload.marginals[0]].sum())
        assert abs(shown - total) < 1


@pytest.mark.parametrize("name", WORKLOADS)
def test_display_cells_are_close_when_the_input_is_positive(name):
    """Dense inputs (every cell positive): each cell of each table within 1.5 of its
    input (worst seen over 30 seeds: 1.07, a 3-way cell pulled by its margins)."""
    workload = WORKLOADS[name]
    for seed in range(3):
        tables = _inputs(workload, seed, *REGIMES["dense"])
        assert all(t.min() > 0 for t in tables.values())
        out = display_tables(workload, tables)
        for m in workload.marginals:
            assert np.max(np.abs(out[m] - tables[m])) < 1.5, m


def test_display_clips_negative_cells_and_keeps_mass_elsewhere():
    """Sparse inputs: negative maximal cells show 0 or 1; the total stays put, so
    positive cells absorb the difference (no cell moves by more than the noise)."""
    workload = WORKLOADS["three-way with margins"]
    tables = _inputs(workload, 4, *REGIMES["sparse"])
    out = display_tables(workload, tables)
    full = tables[(0, 1, 2)]
    assert (full < 0).any()
    assert out[(0, 1, 2)][full < -1].max() <= 1
    assert np.max(np.abs(out[(0, 1, 2)] - full)) < 15


def test_display_is_optimal_on_a_small_table():
    """A 2 x 2 table with both margins and the total: brute force over every integer
    table with cells 0..6 finds no smaller total |deviation| (whose total rounds the
    input's, as the display's does) than the display's, within DISPLAY_REL_GAP."""
    workload = Workload.of([2, 2], all_marginals(2, 2, total=True))
    tables = _inputs(workload, 7, 12, 0.8)
    total = float(tables[()].sum())

    def deviation(cells: np.ndarray) -> float:
        return sum(
            float(np.abs(cells.sum(axis=tuple(a for a in (0, 1) if a not in m)) - tables[m]).sum())
            for m in workload.marginals
        )

    best = min(
        deviation(np.array(c).reshape(2, 2))
        for c in itertools.product(range(7), repeat=4)
        if abs(sum(c) - max(total, 0)) < 1
    )
    shown = deviation(display_tables(workload, tables)[(0, 1)])
    assert shown <= best * (1 + marginal_display.DISPLAY_REL_GAP) + 1e-9


def test_display_accepts_fractions_and_does_not_modify_its_input():
    workload = WORKLOADS["overlapping maximal"]
    tables = _inputs(workload, 11, *REGIMES["sparse"])
    copies = {m: t.copy() for m, t in tables.items()}
    out = display_tables(workload, tables)
    for m in workload.marginals:
        assert np.array_equal(tables[m], copies[m])
    exact = {
        m: np.vectorize(Fraction, otypes=[object])(t).reshape(t.shape) for m, t in tables.items()
    }
    frozen = {m: t.copy() for m, t in exact.items()}
    from_fractions = display_tables(workload, exact)
    for m in workload.marginals:
        assert np.array_equal(exact[m], frozen[m])
        assert np.array_equal(from_fractions[m], out[m])


def test_display_refuses_more_cells_than_the_limit():
    workload = Workload.of([60, 60], [(0, 1)])
    assert workload.published_cells > DISPLAY_MAX_CELLS
    tables = {(0, 1): np.ones((60, 60))}
    with pytest.raises(DisplayUnavailable, match=str(DISPLAY_MAX_CELLS)) as caught:
        display_tables(workload, tables)
    assert caught.value.record[1] == {"limit": DISPLAY_MAX_CELLS, "value": 3600}


def test_display_gives_up_at_the_time_limit(monkeypatch):
    """A solve that cannot finish in its time limit raises, naming the limit."""
    monkeypatch.setattr(marginal_display, "DISPLAY_TIME_LIMIT", 0.001)
    monkeypatch.setattr(marginal_display, "DISPLAY_ACCEPT_GAP", 0.0)
    workload = Workload.of([10, 10, 10], all_marginals(3, 3, total=True))
    tables = _inputs(workload, 0, 100_000, 0.2)
    with pytest.raises(DisplayUnavailable, match="0.001 seconds"):
        display_tables(workload, tables)


def test_display_rejects_missing_or_misshapen_tables():
    workload = WORKLOADS["one-way with total"]
    with pytest.raises(ValueError, match="one table per published marginal"):
        display_tables(workload, {(0,): np.zeros(5)})
    with pytest.raises(ValueError, match="shape"):
        display_tables(workload, {(0,): np.zeros(4), (): np.zeros(())})
    with pytest.raises(ValueError, match="non-finite"):
        display_tables(workload, {(0,): np.full(5, np.nan), (): np.zeros(())})


def test_display_is_the_same_when_computed_twice():
    workload = WORKLOADS["three-way with margins"]
    tables = _inputs(workload, 5, *REGIMES["dense"])
    first, second = display_tables(workload, tables), display_tables(workload, tables)
    assert all(np.array_equal(first[m], second[m]) for m in workload.marginals)
