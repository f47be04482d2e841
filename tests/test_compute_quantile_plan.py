"""Quantile cells on the aggregation plan: DuckDB's cell index equals searchsorted's.

The plan counts a quantile's values per cell of its candidate grid in SQL
(releases.compute.plan._even_grid_cell_sql: GridCells' checked estimate, the same float64
operations in the same order). Checked value for value against searchsorted(edges, x,
side="right") on the adversarial values of test_compute_quantile_cells (edges, their
float neighbours, midpoints, +-0, +-inf, the largest floats, subnormals; NaN as the plan
reads it, missing) over its grids and random public grids; a grid the estimate cannot
count is kept off the plan; and a release's quantile aggregate on the plan equals the
numpy reader's on the same file (groups, nulls, NaN, inf, several row groups).
"""

from __future__ import annotations

from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpportal.privacy.grid_cells import GridCells
from dpportal.privacy.quantile_grids import candidate_grid
from releases.compute import duckdb_engine
from releases.compute.plan import DUCKDB, even_grid_cells
from releases.compute.readers import StatisticReader
from releases.compute.reading import aggregate_row_groups
from tests.test_compute_quantile_cells import GRIDS, adversarial, edges_of, reference_cells


def sql_cells(edges: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """The plan's cell of each value by DuckDB (NaN passed as missing, as the plan reads it)."""
    sql = even_grid_cells("v", GridCells(edges), DUCKDB)
    if sql is None:
        return None
    table = pa.table({"i": np.arange(values.size), "v": pa.array(values, from_pandas=True)})
    estimated = f"SELECT i, v, {sql.estimate} AS f FROM t"  # noqa: S608 - test SQL
    con = duckdb.connect()
    try:
        con.register("t", table)
        cells = f"SELECT {sql.cell('v', 'f', DUCKDB)} AS c FROM ({estimated}) ORDER BY i"  # noqa: S608 - test SQL
        rows = con.execute(cells).fetchall()
    finally:
        con.close()
    return np.array([r[0] for r in rows], dtype=np.int64)


@pytest.mark.parametrize("grid", GRIDS)
def test_sql_cells_equal_searchsorted_on_adversarial_values(grid):
    edges = edges_of(candidate_grid(*grid))
    values = adversarial(edges, seed=7)
    got = sql_cells(edges, values)
    if got is None:
        assert not GridCells(edges).fast
        return
    assert np.array_equal(got, reference_cells(edges, values))


@settings(max_examples=60, deadline=None)
@given(
    lower=st.integers(-(10**15), 10**15),
    scale=st.integers(-12, 6),
    step=st.integers(1, 999),
    m=st.integers(2, 2_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_public_grids_get_the_same_cells_in_sql(lower, scale, step, m, seed):
    lo, st_ = Fraction(f"{lower}e{scale}"), Fraction(f"{step}e{scale}")
    edges = edges_of(candidate_grid(lo, lo + (m - 1) * st_, st_))
    if np.any(np.diff(edges) <= 0):
        return  # too fine for float64 at this offset: the readers refuse such a grid
    values = adversarial(edges, seed)
    got = sql_cells(edges, values)
    assert got is None or np.array_equal(got, reference_cells(edges, values))


def test_an_uneven_grid_is_off_the_plan():
    edges = np.array([0.0, 1.0, 10.0, 11.0])
    assert not GridCells(edges).fast
    assert even_grid_cells("v", GridCells(edges), DUCKDB) is None


def _statistic(grid: dict, groups: list | None = None) -> dict:
    return {"kind": "quantiles", "position": 0, "epsilon": "1", "delta": "0", "label": "",
            "columns": [{"name": "v", "kind": "numeric", "missing": "drop"}],
            "groups": groups or [], "grid": grid, "quantiles": ["0.1", "0.5", "0.9"],
            "category": None}  # fmt: skip


PLAN_GRIDS = [(0, 999, 1), (-5, 5, "0.1"), ("1e15", "1000000000000100", "0.125")]


@pytest.mark.parametrize("grid", PLAN_GRIDS)
def test_a_release_quantile_aggregate_on_the_plan_equals_the_readers(settings, tmp_path, grid):
    settings.MEDIA_ROOT = str(tmp_path)
    edges = edges_of(candidate_grid(*grid))
    values = adversarial(edges, seed=3)
    gen = np.random.default_rng(5)  # test data, not noise
    mask = gen.random(values.size) < 0.05
    group = np.array(["a", "b", "z", None], dtype=object)[gen.integers(0, 4, values.size)]
    table = pa.table({"v": pa.array(values, mask=mask), "g": pa.array(group, type=pa.string())})
    pq.write_table(table, tmp_path / "data.parquet", row_group_size=5_000)
    lower, upper, step = (str(x) for x in grid)
    groups = [{"name": "g", "kind": "categorical", "categories": ["a", "b"], "missing": "drop"}]
    declared = {"lower": lower, "upper": upper, "step": step}
    for statistic in (_statistic(declared), _statistic(declared, groups)):
        spec = {"parquet_file": "data.parquet", "statistics": [statistic],
                "privacy_unit": {"id_column": "", "contribution_bound": 1}}  # fmt: skip
        plan = duckdb_engine.duckdb_plan(spec)
        assert plan is not None
        (on_plan,) = duckdb_engine.run_plan(spec, plan)
        reader = StatisticReader.from_spec(statistic)
        parquet = pq.ParquetFile(tmp_path / "data.parquet")
        (on_numpy,) = aggregate_row_groups(
            parquet=parquet, readers=[reader], row_groups=range(parquet.num_row_groups), mask=None
        )
        assert on_plan.tolist() == np.asarray(on_numpy).tolist()
