"""A cross-tabulation's true aggregate: its maximal tables, the same on every compute path.

The aggregate of a "crosstab" entry is a list of int64 arrays, one per maximal
marginal of its workload (dpportal.privacy.marginal_workload, canonical order),
each shaped by its columns' cells (declared categories, "Other", "Missing" by
policy; numeric bins) and counting the rows in each cell. Its rows are those
every column gives a cell: a row one column drops (missing, policy "drop") is in
none of its tables, the total () included, so every table is an exact sum of any
table containing it. Checked here: the numpy readers against a count
made row by row in Python; the DuckDB plan (one GROUPING SETS query, a grouping
set per maximal table, through the dataset and through its person-rows copy)
against the readers, also on random data and workloads; a lower table summed from
its maximal one against its own direct count; Spark against both (marked spark).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpportal.privacy.marginal_workload import Workload
from releases import kinds
from releases.compute import duckdb_engine
from releases.compute.readers import StatisticReader, merge
from releases.compute.reading import aggregate_row_groups
from releases.kinds.base import StatisticKind
from tests.test_releases_plan import VIAS, prepare

SCHEMA = pa.schema(
    [
        ("colour", pa.string()),
        ("size", pa.int64()),
        ("shape", pa.string()),
        ("x", pa.float64()),
        ("person", pa.string()),
    ]
)
COLOUR = {"name": "colour", "kind": "categorical", "categories": ["red", "green", "blue"],
          "missing": "drop"}  # fmt: skip
SIZE = {"name": "size", "kind": "categorical", "categories": ["1", "2"], "missing": "category"}
SHAPE = {"name": "shape", "kind": "categorical", "categories": ["o", "x", "+", "-"],
         "missing": "drop"}  # fmt: skip
X_BINS = {"name": "x", "kind": "numeric", "missing": "category", "missing_codes": [],
          "bin_edges": ["0", "1", "2.5", "10"]}  # fmt: skip
# missing values, a colour outside the declared ones ("pink": Other), a size too ("3")
ROWS = [
    ("red", 1, "o", 0.5, "p1"),
    ("red", 2, "x", 1.0, "p1"),
    ("green", 1, "o", None, "p2"),
    (None, 1, "+", 3.0, "p2"),
    ("pink", None, "-", -4.0, "p3"),
    ("blue", 2, None, 12.0, "p3"),
    ("blue", 3, "o", float("nan"), "p4"),
    ("red", None, "x", 2.5, None),
    (None, None, None, None, "p5"),
    ("green", 2, "+", 9.99, "p5"),
    ("pink", 1, "o", float("inf"), "p6"),
    ("red", 1, "o", 0.0, "p6"),
    ("blue", 2, "-", 7.0, "p7"),
    ("green", 1, "x", 1.5, "p7"),
]


class StandIn(StatisticKind):
    """What the compute path reads of the cross-tabulation kind (until the registry has it)."""

    name = "crosstab"
    aggregate = "marginals"


@pytest.fixture(autouse=True)
def crosstab_kind(monkeypatch):
    if "crosstab" not in kinds.REGISTRY:
        monkeypatch.setitem(kinds.REGISTRY, "crosstab", StandIn())


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def write(folder, rows, row_group_size=4) -> str:
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in SCHEMA.names]
    data = {name: list(values) for name, values in zip(SCHEMA.names, columns, strict=True)}
    pq.write_table(
        pa.table(data, schema=SCHEMA), folder / "d.parquet", row_group_size=row_group_size
    )
    return "d.parquet"


def crosstab(columns, marginals, position=0) -> dict:
    return {"kind": "crosstab", "position": position, "label": "", "category": None,
            "epsilon": "1", "delta": "1/1000000", "columns": columns,
            "marginals": [list(m) for m in marginals]}  # fmt: skip


def release_spec(parquet_file, statistics, id_column="") -> dict:
    unit = {"id_column": id_column, "contribution_bound": 1000}
    return {"parquet_file": parquet_file, "statistics": statistics, "privacy_unit": unit}


def readers_aggregates(spec, media):
    """The numpy path (row groups of 4 rows: partial aggregates merged); no-ID rows dropped
    when there is an ID column (L large: nothing else is)."""
    readers = [StatisticReader.from_spec(s) for s in spec["statistics"]]
    parquet = pq.ParquetFile(media / spec["parquet_file"])
    mask = None
    if spec["privacy_unit"]["id_column"]:
        ids = parquet.read(columns=["person"]).column(0).to_pylist()
        mask = np.array([i is not None for i in ids], dtype=bool)
    return aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=mask
    )


def plan_aggregates(spec):
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None, "a crosstab of plain columns is on the plan"
    return duckdb_engine.run_plan(spec, plan)


def python_cell(value, domain) -> int:
    """A categorical column's cell, row by row (independent of releases.compute.readers)."""
    cats = domain["categories"]
    if value is None:
        return len(cats) + 1 if domain["missing"] == "category" else -1
    return cats.index(str(value)) if str(value) in cats else len(cats)


def python_tables(rows, columns, marginals) -> list[np.ndarray]:
    sizes = [len(d["categories"]) + 1 + (d["missing"] == "category") for d in columns]
    index = {d["name"]: SCHEMA.names.index(d["name"]) for d in columns}
    cells = [tuple(python_cell(row[index[d["name"]]], d) for d in columns) for row in rows]
    kept = [c for c in cells if all(k >= 0 for k in c)]  # a row any column drops: in no table
    out = []
    for m in Workload.of(sizes, marginals).maximal:
        counts = Counter(tuple(c[i] for i in m) for c in kept)
        table = np.zeros(tuple(sizes[i] for i in m), dtype=np.int64)
        for cell, n in counts.items():
            table[cell] = n
        out.append(table)
    return out


def same(got, expected) -> bool:
    return len(got) == len(expected) and all(
        isinstance(a, np.ndarray) and a.dtype == np.int64 and a.shape == b.shape and (a == b).all()
        for a, b in zip(got, expected, strict=True)
    )


WORKLOADS = [
    [[0, 1], [0, 2], [1, 2], [0], []],
    [[0, 1, 2]],
    [[2, 0], [1], [0]],
    [[0], [1], [2], []],
    [[]],
]


@pytest.mark.parametrize("marginals", WORKLOADS)
def test_the_readers_count_each_maximal_table_like_a_histogram(media, marginals):
    columns = [COLOUR, SIZE, SHAPE]
    spec = release_spec(write(media, ROWS), [crosstab(columns, marginals)])
    (got,) = readers_aggregates(spec, media)
    expected = python_tables(ROWS, columns, marginals)
    assert same(got, expected), (got, expected)
    sizes = [4, 4, 5]  # colour: 3 + Other; size: 2 + Other + Missing; shape: 4 + Other
    maximal = Workload.of(sizes, marginals).maximal
    assert [a.shape for a in got] == [tuple(sizes[i] for i in m) for m in maximal]
    if () in maximal:  # 3 rows miss a colour or a shape (policy "drop"): in no table
        assert got[maximal.index(())].shape == () and int(got[maximal.index(())]) == len(ROWS) - 3


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("with_id", [False, True])
@pytest.mark.parametrize("marginals", WORKLOADS)
def test_the_duckdb_plan_equals_the_readers(media, marginals, with_id, via):
    columns = [COLOUR, SIZE, SHAPE]
    statistics = [
        crosstab(columns, marginals),
        {
            "kind": "histogram",
            "position": 1,
            "label": "",
            "category": None,
            "epsilon": "1",
            "delta": "0",
            "columns": [COLOUR, SIZE],
        },  # fmt: skip
        crosstab([SHAPE, X_BINS, COLOUR], [[0, 1], [1, 2]], position=2),
    ]
    spec = release_spec(write(media, ROWS), statistics, "person" if with_id else "")
    prepare(spec, media, via)
    got = plan_aggregates(spec)
    expected = readers_aggregates(spec, media)
    assert same(got[0], expected[0]) and same(got[2], expected[2]), (got, expected)
    assert (got[1] == expected[1]).all()
    kept = [r for r in ROWS if r[-1] is not None] if with_id else ROWS
    assert same(got[0], python_tables(kept, columns, marginals))


def test_one_grouping_set_per_maximal_table_in_one_query(media):
    spec = release_spec(write(media, ROWS), [crosstab([COLOUR, SIZE, SHAPE], WORKLOADS[0])])
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    sql = plan.aggregate_sql("t")
    assert (
        sql.count("GROUPING SETS") == 1 and sql.count("SELECT") == 4
    )  # sets, flags, cells, values
    assert len(plan.groupings) == 3  # (0, 1), (0, 2), (1, 2); [0] and [] are sums of them
    # a column outside every table still decides which rows are in the cross-tabulation
    spec = release_spec(write(media, ROWS), [crosstab([COLOUR, SIZE, SHAPE], [[0, 1]])])
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan.source_columns == ["colour", "size", "shape"] and plan.groupings == [("c0", "c1")]
    # a column with a "Missing" cell drops no row: only the others are tested
    assert plan.flags == {"k0": "CASE WHEN c0 >= 0 AND c2 >= 0 THEN 1 END"}
    assert plan.aggregates == {"s0_n": "count(k0)"}
    spec = release_spec(write(media, ROWS), [crosstab([SIZE, X_BINS], [[0, 1]])])
    assert duckdb_engine.duckdb_plan(spec).aggregates == {"s0_n": "count(*)"}


def test_a_date_column_sends_the_crosstab_to_the_readers(media):
    date = {**COLOUR, "categories": ["2024"],
            "date": {"bin": "year", "lower": "2024-01-01", "upper": "2024-12-31"}}  # fmt: skip
    spec = release_spec(write(media, ROWS), [crosstab([date, SIZE], [[0, 1]])])
    assert duckdb_engine.duckdb_plan(spec) is None
    spec = release_spec(write(media, ROWS), [crosstab([COLOUR, SIZE], [[0, 1]])])
    assert duckdb_engine.duckdb_plan(spec) is not None


def test_lower_tables_are_sums_of_their_maximal_table(media):
    columns = [COLOUR, SIZE, SHAPE]
    workload_marginals = [[0, 1, 2], [0, 1], [0, 2], [1, 2], [0], [1], [2], []]
    spec = release_spec(write(media, ROWS), [crosstab(columns, workload_marginals)])
    (maximal_only,) = plan_aggregates(spec)
    assert len(maximal_only) == 1 and maximal_only[0].shape == (4, 4, 5)
    full = maximal_only[0]
    for k in range(3):
        for m in combinations(range(3), k):
            direct = release_spec(spec["parquet_file"], [crosstab(columns, [list(m)])])
            (alone,) = readers_aggregates(direct, media)
            summed = full.sum(axis=tuple(i for i in range(3) if i not in m))
            assert np.array_equal(summed, alone[0]) and summed.shape == alone[0].shape, m
    (total,) = plan_aggregates(release_spec(spec["parquet_file"], [crosstab(columns, [[]])]))
    assert int(total[0]) == int(full.sum()) == len(ROWS) - 3


def test_merge_adds_tables_elementwise_and_keeps_the_total_an_array():
    a = [np.arange(6, dtype=np.int64).reshape(2, 3), np.array(4, dtype=np.int64)]
    b = [np.ones((2, 3), dtype=np.int64), np.array(5, dtype=np.int64)]
    merged = merge(a, b)
    assert np.array_equal(merged[0], np.arange(6).reshape(2, 3) + 1)
    assert isinstance(merged[1], np.ndarray) and merged[1].shape == () and int(merged[1]) == 9


def test_an_empty_dataset_gives_zero_tables(media):
    spec = release_spec(write(media, []), [crosstab([COLOUR, SIZE, SHAPE], WORKLOADS[0])])
    expected = [np.zeros(s, dtype=np.int64) for s in [(4, 4), (4, 5), (4, 5)]]
    assert same(plan_aggregates(spec)[0], expected)
    assert same(readers_aggregates(spec, media)[0], expected)


values = {
    "colour": st.sampled_from(["red", "green", "blue", "pink", "", None]),
    "size": st.one_of(st.integers(0, 3), st.none()),
    "shape": st.sampled_from(["o", "x", "+", "-", "?", None]),
    "x": st.one_of(
        st.floats(-2, 12), st.sampled_from([float("nan"), float("inf"), 2.5]), st.none()
    ),
    "person": st.sampled_from(["p1", "p2", None]),
}
rows_strategy = st.lists(st.tuples(*(values[n] for n in SCHEMA.names)), max_size=40)


@st.composite
def workloads(draw):
    pool = [c for k in range(4) for c in combinations(range(4), k)]
    return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=rows_strategy,
    marginals=workloads(),
    missing=st.sampled_from(["drop", "category"]),
    with_id=st.booleans(),
)
def test_random_workloads_agree_on_duckdb_and_the_readers(media, rows, marginals, missing, with_id):
    columns = [{**COLOUR, "missing": missing}, SIZE, {**SHAPE, "missing": missing}, X_BINS]
    spec = release_spec(
        write(media, rows, row_group_size=7),
        [crosstab(columns, marginals)],
        "person" if with_id else "",
    )
    (got,) = plan_aggregates(spec)
    (expected,) = readers_aggregates(spec, media)
    assert same(got, expected), (rows, marginals, got, expected)


@pytest.mark.spark
@pytest.mark.parametrize("with_id", [False, True])
def test_spark_equals_duckdb_and_the_readers(media, spark, with_id):
    from releases.compute import spark_engine

    statistics = [
        crosstab([COLOUR, SIZE, SHAPE], WORKLOADS[0]),
        crosstab([SHAPE, X_BINS, COLOUR], [[0, 1, 2], []], position=1),
    ]
    spec = release_spec(write(media, ROWS), statistics, "person" if with_id else "")
    plan = spark_engine.spark_plan(spec)
    assert plan is not None and plan.dialect.name == "spark"
    got = spark_engine.run_plan(spec, plan)
    duck = plan_aggregates(spec)
    expected = readers_aggregates(spec, media)
    for g, d, e in zip(got, duck, expected, strict=True):
        assert same(g, e) and same(d, e), (g, d, e)
