"""Private bounds' true aggregate: counts per cell of a public search grid, the same on
every compute path.

The aggregate of a "bounds" entry counts the column's values in each cell (-inf, e_0],
(e_0, e_1], ..., (e_m, +inf) of the grid's edges (dpportal.privacy.unbounded_bounds.
SearchGrid.edges), missing values (null, NaN) dropped. Checked here: the numpy readers
against a count made value by value in Python (values on the edges themselves, either
side of them, beyond the limit, infinities); the DuckDB plan (a guess from the grid's
formula corrected against the edges) against the readers, with and without a person
column, through the dataset and its person-rows copy, beside other statistics in the
same query. Infinities are missing values, as for every numeric column.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpportal.privacy.unbounded_bounds import SearchGrid
from releases.compute import duckdb_engine
from releases.compute.readers import StatisticReader
from releases.compute.reading import aggregate_row_groups
from tests.test_releases_plan import VIAS, prepare

SCHEMA = pa.schema([("x", pa.float64()), ("n", pa.int64()), ("person", pa.string())])
X = {"name": "x", "kind": "numeric", "missing": "drop", "missing_codes": [], "lower": None,
     "upper": None, "bin_edges": [], "categories": [], "type": "numeric"}  # fmt: skip
N = {**X, "name": "n"}
GRID = SearchGrid.of(centre=10, unit=1, limit=10**6)
EDGES = GRID.edges()
ROWS = [
    (0.0, 3, "p1"), (10.0, 10, "p1"), (EDGES[5], 11, "p2"), (EDGES[5] + 1e-9, -4, "p2"),
    (None, 0, "p3"), (float("nan"), 7, "p3"), (-1e9, 10**7, "p4"), (1e9, -(10**7), "p4"),
    (float("inf"), 2, "p5"), (float("-inf"), 1, None), (412000.5, 412000, "p6"),
    (12.25, 12, "p7"), (EDGES[-1], 5, "p7"), (EDGES[0], 6, None),
]  # fmt: skip


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def write(folder, rows, row_group_size=4) -> str:
    columns = list(zip(*rows, strict=True))
    data = {name: list(values) for name, values in zip(SCHEMA.names, columns, strict=True)}
    pq.write_table(
        pa.table(data, schema=SCHEMA), folder / "d.parquet", row_group_size=row_group_size
    )
    return "d.parquet"


def bounds_entry(domain, position=0, grid=GRID) -> dict:
    return {"kind": "bounds", "position": position, "label": "", "category": None,
            "epsilon": "0.1", "delta": "0", "columns": [domain], "ends": "both",
            "outside": 5, "grid": grid.to_dict(), "steps": grid.steps()}  # fmt: skip


def release_spec(parquet_file, statistics, id_column="") -> dict:
    unit = {"id_column": id_column, "contribution_bound": 1000}
    return {"parquet_file": parquet_file, "statistics": statistics, "privacy_unit": unit}


def readers_aggregates(spec, media):
    readers = [StatisticReader.from_spec(s) for s in spec["statistics"]]
    parquet = pq.ParquetFile(media / spec["parquet_file"])
    mask = None
    if spec["privacy_unit"]["id_column"]:
        ids = parquet.read(columns=["person"]).column(0).to_pylist()
        mask = np.array([i is not None for i in ids], dtype=bool)
    return aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=mask
    )


def python_counts(values, edges) -> list[int]:
    """Each value's cell, value by value: the number of edges strictly below it."""
    counts = [0] * (len(edges) + 1)
    for v in values:
        if v is None or not math.isfinite(v):  # null, NaN, +-inf: missing
            continue
        counts[sum(1 for e in edges if e < v)] += 1
    return counts


def test_the_readers_count_values_per_cell_right_closed(media):
    spec = release_spec(write(media, ROWS), [bounds_entry(X)])
    (got,) = readers_aggregates(spec, media)
    assert got.dtype == np.int64 and got.shape == (len(EDGES) + 1,)
    assert got.tolist() == python_counts([r[0] for r in ROWS], EDGES)
    # a value on an edge is in the cell that edge closes; just above it, in the next
    assert got[5] >= 1 and got[6] >= 1
    assert int(got.sum()) == len(ROWS) - 4  # null, NaN and the infinities dropped


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("with_id", [False, True])
def test_the_duckdb_plan_equals_the_readers(media, with_id, via):
    other = SearchGrid.of(centre=-3, unit=Fraction(1, 2), ratio=Fraction(11, 10), limit=10**8)
    count = {"kind": "count", "position": 2, "label": "", "category": None, "epsilon": "1",
             "delta": "0", "columns": []}  # fmt: skip
    statistics = [bounds_entry(X), bounds_entry(N, position=1, grid=other), count]
    spec = release_spec(write(media, ROWS), statistics, id_column="person" if with_id else "")
    spec = prepare(spec, media, via)
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None, "private bounds of a plain numeric column are on the plan"
    got = duckdb_engine.run_plan(spec, plan)
    expected = readers_aggregates(spec, media)
    assert [np.asarray(g).tolist() for g in got[:2]] == [e.tolist() for e in expected[:2]]
    assert int(got[2]) == int(expected[2])
    if not with_id:
        assert got[0].tolist() == python_counts([r[0] for r in ROWS], EDGES)
        assert got[1].tolist() == python_counts([r[1] for r in ROWS], other.edges())


@pytest.mark.parametrize(
    "grid",
    [
        SearchGrid.of(),  # the default: thousands of edges out to 1e12
        SearchGrid.of(centre=Fraction(-7, 2), unit=Fraction(1, 8), ratio=2, limit=10**9),
        SearchGrid.of(centre=10**14, unit=1000, ratio=Fraction(11, 10), limit=10**14),
    ],
)
def test_the_plan_finds_every_edge_exactly_from_its_guess(media, grid):
    """The plan guesses a value's cell from the grid's formula and corrects it against the
    edges: every edge, its float neighbours on both sides, the centre and values past the
    limit land in the cell numpy's searchsorted gives (the readers' rule)."""
    edges = np.array(grid.edges())
    values = np.concatenate(
        [edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
         [float(grid.centre), edges[0] * 2 - edges[-1], edges[-1] * 2 - edges[0],
          1e308, -1e308, 1.7e308, -1.7e308]]
    )  # fmt: skip
    table = pa.table({"x": values, "n": np.zeros(values.size, dtype=np.int64),
                      "person": ["p"] * values.size})  # fmt: skip
    pq.write_table(table, media / "e.parquet")
    spec = release_spec("e.parquet", [bounds_entry(X, grid=grid)])
    (got,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    expected = np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)
    assert got.tolist() == expected.tolist()
