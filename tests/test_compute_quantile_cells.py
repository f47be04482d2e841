"""Quantile cell counts: the arithmetic cell index equals searchsorted, value for value.

dpportal.privacy.grid_cells.GridCells estimates a value's cell on an evenly spaced grid and
corrects it with one comparison; the privacy argument needs exactly
searchsorted(edges, x, side="right") (x < float(c_j) decided in float64). Checked here on
adversarial values (the edges themselves, their float neighbours, midpoints, +-0, +-inf,
the largest floats, subnormals, NaN) over grids of many shapes, by hypothesis over random
public grids, with blocks that split the input anywhere; a grid whose estimate would be
wrong must be refused (and is shown to be wrong), and the release reader's counts through
aggregate_row_groups (nulls, NaN, inf, integers beyond 2**53, numbers as text, several row
groups, groups) equal the searchsorted reference. Deterministic: no test here can fail by
chance (the random values are fixed by their seeds).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets.domains import as_float64
from dpportal.privacy.grid_cells import GridCells
from dpportal.privacy.quantile_grids import candidate_grid, open_grid
from dpportal.privacy.quantiles import RankCounter
from releases.compute.readers import StatisticReader
from releases.compute.reading import aggregate_row_groups, declared_domains, read_as_declared

GRIDS = [
    (0, 999, 1),
    (0, 1000, 1),
    (-5, 5, "0.1"),
    (0, "0.99999", "0.00001"),
    ("1e12", "1000000000001", "0.001"),
    ("1e15", "1000000000000100", "0.125"),
    ("1e15", "1000000000000100", "0.3"),
    ("-1e300", "1e300", "1e296"),
    ("1e-300", "1.1e-300", "1e-305"),
    ("-0.7", "0.7", "0.7"),
    (3, 4, 1),
]
BIG = np.finfo(float).max
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
           1e308, -1e308, BIG, -BIG, 2.0**53 + 2, -(2.0**53)]  # fmt: skip


def edges_of(grid) -> np.ndarray:
    return np.array([float(c) for c in grid], dtype=np.float64)


def adversarial(edges: np.ndarray, seed: int) -> np.ndarray:
    """Every edge, its float neighbours, midpoints, specials, and uniform draws around the grid."""
    gen = np.random.default_rng(seed)  # test data, not noise
    span = edges[-1] - edges[0] if edges.size > 1 else 1.0
    around = gen.uniform(edges[0] - span, edges[-1] + span, 20_000)
    mids = (edges[:-1] + edges[1:]) / 2
    near = [np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)]
    near += [np.nextafter(n, d) for n, d in zip(near, (np.inf, -np.inf), strict=True)]
    return np.concatenate([edges, *near, mids, around, np.array(SPECIAL)])


def reference_cells(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    cells = np.searchsorted(edges, values, side="right")
    cells[np.isnan(values)] = -1
    return cells


def reference_counts(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    kept = values[~np.isnan(values)]
    return np.bincount(np.searchsorted(edges, kept, side="right"), minlength=edges.size + 1)


@pytest.mark.parametrize("grid", GRIDS)
def test_arithmetic_cells_equal_searchsorted_on_adversarial_values(grid):
    edges = edges_of(candidate_grid(*grid))
    cells = GridCells(edges)
    assert cells.fast  # every evenly spaced grid here takes the arithmetic route
    values = adversarial(edges, seed=len(edges))
    assert np.array_equal(cells.cells(values), reference_cells(edges, values))
    assert np.array_equal(cells.counts(values), reference_counts(edges, values))


@pytest.mark.parametrize("block", [1, 7, 4096])
def test_counts_do_not_depend_on_where_blocks_split(block):
    edges = edges_of(candidate_grid(-5, 5, "0.1"))
    values = adversarial(edges, seed=block)
    got = GridCells(edges, block=block).counts(values)
    assert np.array_equal(got, reference_counts(edges, values))


@pytest.mark.parametrize("lower", [None, 0])
def test_uneven_grids_fall_back_to_searchsorted_and_stay_exact(lower):
    edges = edges_of(open_grid(lower, "0.5"))
    cells = GridCells(edges)
    assert not cells.fast
    values = adversarial(edges, seed=3)
    assert np.array_equal(cells.cells(values), reference_cells(edges, values))
    assert np.array_equal(cells.counts(values), reference_counts(edges, values))


def test_the_check_refuses_an_estimate_that_would_be_wrong():
    """One edge moved most of a step: forcing the estimate anyway misplaces values, so the
    check is what keeps the counts exact."""
    edges = np.arange(0, 1000, dtype=np.float64)
    edges[500] = 500.9
    cells = GridCells(edges)
    assert not cells.fast
    values = np.array([500.5, 500.8, 500.9, 501.0, 499.99])
    assert np.array_equal(cells.cells(values), reference_cells(edges, values))
    cells.fast = True  # the estimate without its check
    assert not np.array_equal(cells.cells(values), reference_cells(edges, values))


def test_empty_input_and_a_single_candidate():
    one = GridCells(np.array([2.5]))
    assert not one.fast
    assert one.counts(np.array([2.5, 2.4, np.nan, np.inf])).tolist() == [1, 2]
    assert GridCells(np.arange(10.0)).counts(np.array([])).tolist() == [0] * 11


@settings(max_examples=150, deadline=None)
@given(
    lower=st.integers(-(10**15), 10**15),
    scale=st.integers(-12, 6),
    step=st.integers(1, 999),
    m=st.integers(2, 2_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_public_grids_are_counted_exactly(lower, scale, step, m, seed):
    lo, st_ = Fraction(f"{lower}e{scale}"), Fraction(f"{step}e{scale}")
    edges = edges_of(candidate_grid(lo, lo + (m - 1) * st_, st_))
    if np.any(np.diff(edges) <= 0):
        return  # too fine for float64 at this offset: the readers refuse such a grid
    values = adversarial(edges, seed)
    cells = GridCells(edges)
    assert np.array_equal(cells.cells(values), reference_cells(edges, values))
    assert np.array_equal(cells.counts(values), reference_counts(edges, values))


@settings(max_examples=100, deadline=None)
@given(jitter=st.floats(0, 0.7), m=st.integers(2, 500), seed=st.integers(0, 2**32 - 1))
def test_nearly_even_edges_are_counted_exactly_by_either_route(jitter, m, seed):
    """Edges off an even grid by up to `jitter` of a step: the estimate passes its check
    (small jitter) or searchsorted counts (large); the cells are exact either way."""
    gen = np.random.default_rng(seed)  # test data, not noise
    edges = np.arange(m, dtype=np.float64) + gen.uniform(-jitter / 2, jitter / 2, m)
    if np.any(np.diff(edges) <= 0):
        return
    cells = GridCells(edges)
    # edges off by <= 0.05 step move the estimate by <= 0.2 cell, inside its half-cell margin
    assert cells.fast or jitter > 0.1
    values = adversarial(edges, seed)
    assert np.array_equal(cells.cells(values), reference_cells(edges, values))
    assert np.array_equal(cells.counts(values), reference_counts(edges, values))


def test_rank_counter_keeps_its_ranks():
    grid = candidate_grid(0, 100, "0.5")
    values = adversarial(edges_of(grid), seed=11)
    values = values[~np.isnan(values)]
    counter = RankCounter(grid)
    counter.add(values[:1000])
    counter.add(values[1000:])
    edges = edges_of(grid)
    assert counter.rank_counts().tolist() == [int(np.sum(values < c)) for c in edges]
    assert counter.n == values.size
    with pytest.raises(ValueError):
        counter.add(np.array([1.0, np.nan]))


def _quantile_spec(column: str, grid: dict, groups: list | None = None) -> dict:
    return {"kind": "quantiles", "position": 0, "epsilon": "1", "delta": "0", "label": "",
            "category": None, "columns": [{"name": column, "kind": "numeric", "missing": "drop"}],
            "groups": groups or [], "grid": grid, "quantiles": ["0.1", "0.5", "0.9"]}  # fmt: skip


def _old_counts(table: pa.Table, reader) -> np.ndarray:
    """The reader's counts as computed before the arithmetic route: searchsorted, NaN dropped."""
    values = as_float64(table.column(reader.spec["columns"][0]["name"]))
    values = values.to_numpy(zero_copy_only=False)
    keep = ~np.isnan(values)
    if reader.axes:
        keep &= reader.axes[0].codes(table.column(reader.axes[0].name)) >= 0
    cells = np.searchsorted(reader.edges, values[keep], side="right")
    return np.bincount(cells, minlength=reader.edges.size + 1)


@pytest.mark.parametrize(
    "grid",
    [{"lower": "0", "upper": "1000", "step": "1"}, {"lower": "-3", "upper": "3", "step": "0.25"},
     {"edges": ["-1", "0", "2.5", "1e6"]}, {"open": True, "lower": "0", "step": "1"}],
)  # fmt: skip
def test_release_quantile_aggregate_is_unchanged(tmp_path, grid):
    gen = np.random.default_rng(7)  # test data, not noise
    n = 5_000
    floats = gen.integers(-40, 4040, n) / gen.choice([1.0, 4.0, 10.0], n)  # edges are hit
    floats[::97] = np.nan
    floats[::89] = np.inf
    floats[1::89] = -np.inf
    floats[::53] = 0.5
    ints = gen.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    ints[::2] = gen.integers(-5, 1005, n // 2)
    ints[::31] = 2**53 + 1
    text = np.where(gen.random(n) < 0.1, "n/a", floats.astype(str))
    table = pa.table({
        "f": pa.array(floats, mask=gen.random(n) < 0.05),
        "i": pa.array(ints, mask=gen.random(n) < 0.05),
        "t": pa.array(text.tolist(), type=pa.string()),
        "g": pa.array(gen.choice(["a", "b", "z"], n).tolist(), mask=gen.random(n) < 0.05),
    })  # fmt: skip
    path = tmp_path / "q.parquet"
    pq.write_table(table, path, row_group_size=777)
    parquet = pq.ParquetFile(path)
    groups = [{"name": "g", "kind": "categorical", "categories": ["a", "b"], "missing": "drop"}]
    specs = [_quantile_spec(c, grid) for c in "fit"] + [_quantile_spec("f", grid, groups)]
    readers = [StatisticReader.from_spec(s) for s in specs]
    got = aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=None
    )
    declared = read_as_declared(pq.read_table(path), declared_domains(readers))
    for reader, counts in zip(readers, got, strict=True):
        old = _old_counts(declared, reader)
        assert counts.dtype == np.int64
        assert np.array_equal(counts, old)
        assert 0 < old.sum() < n  # missing values were dropped, others counted
