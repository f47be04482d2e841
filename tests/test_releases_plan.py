"""The aggregation plan on DuckDB equals the numpy readers (the oracle), and the person bound.

Property tests (hypothesis) on small random Parquet files: every kind on the plan,
declared categories / Other / Missing by policy, numeric bins (clamped, last
closed), clipping and half-even rounding to the grid, NaN / inf / -0.0, numeric
missing codes, an ID column with L large enough that nothing is dropped. Then the
bound itself: each person keeps exactly min(L, their rows), rows without an ID
are dropped, and the choice changes with the per-release key. Every test that
applies a bound runs on both paths: over the dataset itself (three passes) and
over the dataset's person-rows copy (datasets.person_rows, `via="copy"`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasets import person_rows
from dpportal.privacy.params import exact_str
from dpportal.privacy.rng import SeededTestRandom
from dpportal.privacy.unbounded_bounds import SearchGrid
from releases.compute import dialect, duckdb_engine, keyed_hash
from releases.compute import person_rows as copy_path
from releases.compute import plan as plan_module
from releases.compute.readers import StatisticReader
from releases.compute.readers_stats import Partial
from releases.compute.reading import aggregate_row_groups

CATS = ["a", "b", "c"]
HALVES = [0.5, 1.5, 2.5, -2.5, -0.5, 3.5, 0.0, -0.0, 7.25, 1e9, -1e9]
floats = st.one_of(
    st.sampled_from(HALVES),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(-20, 20),
    st.none(),
)


@st.composite
def datasets(draw):
    n = draw(st.integers(0, 40))
    return {
        "cat": draw(
            st.lists(st.sampled_from(["a", "b", "c", "d", "", None]), min_size=n, max_size=n)
        ),
        "k": draw(st.lists(st.one_of(st.integers(-3, 3), st.none()), min_size=n, max_size=n)),
        "x": draw(st.lists(floats, min_size=n, max_size=n)),
        "y": draw(st.lists(st.one_of(st.integers(-50, 50), st.none()), min_size=n, max_size=n)),
        "person": draw(st.lists(st.sampled_from(["p1", "p2", "p3", None]), min_size=n, max_size=n)),
    }


@st.composite
def statistics(draw):
    missing = st.sampled_from(["drop", "category"])
    cat = {"name": "cat", "kind": "categorical", "categories": CATS, "missing": draw(missing)}
    k = {
        "name": "k",
        "kind": "categorical",
        "categories": ["1", "-2", "0"],
        "missing": draw(missing),
    }
    codes = draw(st.sampled_from([[], ["-9"], ["2.5", "7"]]))
    edges = sorted(
        set(draw(st.lists(st.sampled_from([-5, -1, 0, 0.5, 2, 10, 100]), min_size=2, max_size=5)))
    )
    if len(edges) < 2:
        edges = [0, 1]
    xbins = {
        "name": "x",
        "kind": "numeric",
        "missing": draw(missing),
        "missing_codes": codes,
        "bin_edges": [str(e) for e in edges],
    }
    x = {"name": "x", "kind": "numeric", "missing": "drop", "missing_codes": codes}
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    lower = draw(st.sampled_from(["-10", "0", "-2.5", "1"]))
    upper = draw(st.sampled_from(["3", "10", "1000", "2.5"]))
    grid = {
        "lower": lower,
        "upper": upper,
        "granularity": exact_str(Fraction(2) ** draw(st.integers(-3, 1))),
    }
    common = {"epsilon": "1", "delta": "0", "label": "", "category": None}
    stats = [
        {"kind": "count", "columns": []},
        {"kind": "count", "columns": [cat], "category": draw(st.sampled_from([*CATS, "Other"]))},
        {"kind": "histogram", "columns": [cat]},
        {"kind": "histogram", "columns": [xbins]},
        {"kind": "histogram", "columns": [k, xbins]},
        {"kind": "argmax", "columns": [cat]},
        {"kind": "sum", "columns": [x], **grid},
        {"kind": "mean", "columns": [y], **grid},
        {"kind": "grouped_sum", "columns": [x], "groups": [cat], **grid},
        {"kind": "grouped_mean", "columns": [y], "groups": [cat, k], **grid},
        {"kind": "variance", "columns": [x], "groups": [], **grid},
        {"kind": "stddev", "columns": [y], "groups": [k], **grid},
        {"kind": "bounds", "columns": [x], **search_grid(draw)},
        {"kind": "bounds", "columns": [y], **search_grid(draw)},
    ]
    return [{**common, **s, "position": i} for i, s in enumerate(stats)]


def search_grid(draw) -> dict:
    """A private-bounds entry's search: its public grid (releases.kinds.bounds)."""
    grid = SearchGrid.of(
        centre=draw(st.sampled_from([Fraction(-3), Fraction(0), Fraction(5, 2)])),
        unit=draw(st.sampled_from([Fraction(1, 4), Fraction(1), Fraction(3)])),
        ratio=draw(st.sampled_from([Fraction(105, 100), Fraction(3, 2), Fraction(2)])),
        limit=draw(st.sampled_from([100, 10**6])),
    )
    return {"ends": "both", "outside": 5, "grid": grid.to_dict(), "steps": grid.steps()}


def write(tmp, data) -> str:
    schema = pa.schema(
        [
            ("cat", pa.string()),
            ("k", pa.int64()),
            ("x", pa.float64()),
            ("y", pa.int64()),
            ("person", pa.string()),
        ]
    )
    pq.write_table(pa.table(data, schema=schema), tmp / "d.parquet", row_group_size=7)
    return "d.parquet"


DATASET_ID = 1
VIAS = ["source", "copy"]


def prepare(spec, media, via):
    """The spec as a release's (its dataset's id); via "copy": its person-rows copy made."""
    spec["dataset"] = DATASET_ID
    if via == "copy" and spec["privacy_unit"]["id_column"]:
        made = person_rows.build(
            paths=[str(media / spec["parquet_file"])],
            id_column=spec["privacy_unit"]["id_column"],
            identity=person_rows.source_identity(parquet_file=spec["parquet_file"], external=None),
            target=person_rows.local_path(DATASET_ID),
            memory_mb=64,
            threads=1,
        )
        assert made and copy_path.copy_for(spec) is not None
    else:
        person_rows.local_path(DATASET_ID).unlink(missing_ok=True)
        assert copy_path.copy_for(spec) is None
    return spec


def normal(value):
    if isinstance(value, Partial):
        return [list(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def oracle(spec, tmp):
    readers = [StatisticReader.from_spec(s) for s in spec["statistics"]]
    parquet = pq.ParquetFile(tmp / spec["parquet_file"])
    mask = None
    if spec["privacy_unit"]["id_column"]:
        ids = parquet.read(columns=["person"]).column(0).to_pylist()
        mask = np.array([i is not None for i in ids], dtype=bool)  # L large: only no-ID rows go
    out = aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=mask
    )
    return [normal(v) for v in out]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=datasets(), stats=statistics(), with_id=st.booleans())
@pytest.mark.parametrize("via", VIAS)
def test_the_duckdb_plan_equals_the_numpy_readers(media, data, stats, with_id, via):
    spec = {
        "parquet_file": write(media, data),
        "statistics": stats,
        "privacy_unit": {"id_column": "person" if with_id else "", "contribution_bound": 1000},
    }
    prepare(spec, media, via)
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    got = [normal(v) for v in duckdb_engine.run_plan(spec, plan)]
    expected = oracle(spec, media)
    assert got == expected, repr(
        (data, [s for s, a, b in zip(stats, got, expected, strict=True) if a != b])
    )


def test_quantiles_and_dates_stay_on_the_numpy_path(media):
    spec = {
        "parquet_file": write(
            media, {"cat": ["a"], "k": [1], "x": [1.0], "y": [1], "person": ["p"]}
        ),
        "privacy_unit": {"id_column": "", "contribution_bound": 1},
    }
    date = {
        "name": "cat",
        "kind": "categorical",
        "categories": ["2024"],
        "missing": "drop",
        "date": {"bin": "year", "lower": "2024-01-01", "upper": "2024-12-31"},
    }
    spec["statistics"] = [{"kind": "histogram", "columns": [date]}]
    assert duckdb_engine.duckdb_plan(spec) is None
    spec["statistics"] = [{"kind": "quantiles", "columns": [], "groups": []}]
    assert duckdb_engine.duckdb_plan(spec) is None
    spec["statistics"] = [{"kind": "count", "columns": []}]
    assert duckdb_engine.duckdb_plan(spec) is not None


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.one_of(st.integers(0, 6), st.none()), max_size=60), bound=st.integers(1, 4))
@pytest.mark.parametrize("via", VIAS)
def test_each_person_keeps_exactly_min_L_rows(media, rows, bound, via):
    people = [None if r is None else f"p{r}" for r in rows]
    data = {
        "cat": ["a"] * len(rows),
        "k": list(range(len(rows))),
        "x": [0.0] * len(rows),
        "y": [0] * len(rows),
        "person": people,
    }
    # one histogram cell per row (k = the row's position): the kept rows themselves
    k = {
        "name": "k",
        "kind": "numeric",
        "missing": "drop",
        "bin_edges": [str(e) for e in range(len(rows) + 1)] if rows else ["0", "1"],
    }
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    prepare(spec, media, via)
    (kept,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert set(kept.tolist()) <= {0, 1}
    per_person = Counter(people[i] for i in np.flatnonzero(kept))
    assert None not in per_person
    rows_of = Counter(p for p in people if p is not None)
    assert {p: per_person.get(p, 0) for p in rows_of} == {
        p: min(bound, n) for p, n in rows_of.items()
    }


@pytest.mark.parametrize("via", VIAS)
def test_the_choice_is_keyed_per_release(media, via):
    n = 200
    data = {
        "cat": ["a"] * n,
        "k": list(range(n)),
        "x": [0.0] * n,
        "y": [0] * n,
        "person": [f"p{i % 10}" for i in range(n)],
    }
    k = {
        "name": "k",
        "kind": "numeric",
        "missing": "drop",
        "bin_edges": [str(e) for e in range(n + 1)],
    }
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "person", "contribution_bound": 3},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    prepare(spec, media, via)
    plan = duckdb_engine.duckdb_plan(spec)
    runs = [
        duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(s))[0].tolist() for s in (1, 1, 2)
    ]
    # the same key chooses the same rows; another key (almost surely: C(20, 3) subsets each) others
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert sum(runs[0]) == 30


INT64 = st.integers(-(2**63), 2**63 - 1)


def _bound_hashes(ids: pa.Array, key: int) -> list[int]:
    """keyed_hash.bound_hash_sql on DuckDB over the IDs `ids`, the i-th one's n being i + 1."""
    id_rows = pa.table({"p": ids, dialect.NTH: range(1, len(ids) + 1)})
    sql = keyed_hash.bound_hash_sql(dialect.DUCKDB, "p", ids.type, "CAST($key::UBIGINT AS VARCHAR)")
    con = duckdb.connect()
    con.register("id_rows", id_rows)
    return [h for (h,) in con.execute(f"SELECT {sql} FROM id_rows AS s", {"key": key}).fetchall()]


@settings(max_examples=30, deadline=None)
@given(ids=st.lists(INT64, min_size=1, max_size=40), key=st.integers(0, 2**64 - 1))
def test_the_integer_bound_hash_is_its_python_definition(ids, key):
    """keyed_hash.bound_hash_sql over an integer ID is keyed_hash.mix of n and the ID's
    31-bit pieces (every value below 2**63: no overflow on DuckDB, which raises on one), at
    the extremes of BIGINT and of the key too."""
    ids = [*ids, 0, -1, 2**63 - 1, -(2**63), 2**31, 2**31 - 1]
    found = _bound_hashes(pa.array(ids, pa.int64()), key)
    mask = keyed_hash.MIX_P
    expected = [
        keyed_hash.mix(key, [n & mask, x & mask, (x >> 31) & mask, (x >> 62) & 3])
        for n, x in enumerate(ids, start=1)
    ]
    assert found == expected
    assert all(0 <= h < mask for h in expected)


@settings(max_examples=20, deadline=None)
@given(ids=st.lists(st.text(max_size=12), min_size=1, max_size=20), key=st.integers(0, 2**64 - 1))
def test_the_text_bound_hash_is_its_python_definition(ids, key):
    """Over a text ID, keyed_hash.bound_hash_sql is keyed_hash.mix of n and 31 bits of the
    MD5 of K's decimal text, "|t|" and the ID's UTF-8 bytes (any text: empty, "|", CJK)."""
    ids = [*ids, "", "|", "北京", "a|t|b"]
    found = _bound_hashes(pa.array(ids), key)
    mask = keyed_hash.MIX_P
    expected = []
    for n, text in enumerate(ids, start=1):
        digest = hashlib.md5(f"{key}|t|{text}".encode()).hexdigest()  # noqa: S324 - its definition
        expected.append(keyed_hash.mix(key, [n & mask, int(digest[:8], 16) & mask]))
    assert found == expected


@pytest.mark.parametrize("person", ["int", "text"])
@pytest.mark.parametrize("via", VIAS)
def test_the_keyed_choice_favours_no_row(media, via, person, tmp_path):
    """Persons of three rows each (consecutive IDs, the common case), L = 1: each of the
    three places is kept for about a third of them (a keyed hash that orders n = 1 before
    n = 2 for most persons would keep mostly first rows). 30,000 persons: each count
    within 4.5 standard deviations of 10,000 (sd 81.6); with a fixed key, the chance
    that a fair choice fails is about 2e-5."""
    persons = 30_000
    rows = 3 * persons
    ids = np.repeat(np.arange(1, persons + 1), 3)
    table = pa.table(
        {
            "place": np.tile(np.arange(3), persons),
            "person": ids if person == "int" else pa.array([f"p{i}" for i in ids]),
        }
    )
    pq.write_table(table, media / "d.parquet", row_group_size=rows // 4)
    place = {
        "name": "place",
        "kind": "numeric",
        "missing": "drop",
        "bin_edges": ["0", "1", "2", "3"],
    }
    spec = {
        "parquet_file": "d.parquet",
        "privacy_unit": {"id_column": "person", "contribution_bound": 1},
        "statistics": [{"kind": "histogram", "columns": [place]}],
    }
    prepare(spec, media, via)
    counts = duckdb_engine.run_plan(
        spec, duckdb_engine.duckdb_plan(spec), rng=SeededTestRandom(11)
    )[0].tolist()
    assert sum(counts) == persons
    sd = (persons * (1 / 3) * (2 / 3)) ** 0.5
    assert all(abs(c - persons / 3) < 4.5 * sd for c in counts), counts


@pytest.mark.parametrize("via", VIAS)
def test_a_persons_choice_depends_on_their_own_rows_alone(media, via):
    """Other people's rows before and between p1's change no choice of p1's rows (same key)."""
    mine = list(range(20))  # p1's rows, told apart by k
    others = list(range(20, 60))
    edges = [str(e) for e in range(61)]

    def kept_of_p1(order):
        n = len(order)
        data = {
            "cat": ["a"] * n,
            "k": order,
            "x": [0.0] * n,
            "y": [0] * n,
            "person": ["p1" if k < 20 else f"q{k % 7}" for k in order],
        }
        k = {"name": "k", "kind": "numeric", "missing": "drop", "bin_edges": edges}
        spec = {
            "parquet_file": write(media, data),
            "statistics": [{"kind": "histogram", "columns": [k]}],
            "privacy_unit": {"id_column": "person", "contribution_bound": 4},
        }
        prepare(spec, media, via)
        (hist,) = duckdb_engine.run_plan(
            spec, duckdb_engine.duckdb_plan(spec), rng=SeededTestRandom(3)
        )
        return [k for k in mine if hist[k]]

    alone = kept_of_p1(mine)
    mixed = kept_of_p1(
        [v for pair in zip(others[:20], mine, strict=True) for v in pair] + others[20:]
    )
    assert len(alone) == 4 and alone == mixed


def test_halves_round_to_even_on_the_grid(media):
    """Grid units exactly halfway round half to even, as numpy's rint (the oracle) does."""
    halves = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 4.5]
    n = len(halves)
    data = {"cat": ["a"] * n, "k": [0] * n, "x": halves, "y": [0] * n, "person": ["p"] * n}
    x = {"name": "x", "kind": "numeric", "missing": "drop"}
    grid = {"lower": "-10", "upper": "10", "granularity": "1"}
    common = {"epsilon": "1", "delta": "0", "label": "", "category": None}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "", "contribution_bound": 1},
        "statistics": [
            {**common, "kind": "variance", "columns": [x], "groups": [], "position": 0, **grid}
        ],
    }
    got = [normal(v) for v in duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))]
    assert got == oracle(spec, media)
    # centred units w = 2u: sum(w) = 2 * (0 + 2 + 2 + 4 + 0 - 2 - 2 + 4)
    assert got[0][1] == [16]


TEXTS = st.text(alphabet=st.sampled_from(["a", "b", "'", "\\", "北", "é", " ", "\x00"]), max_size=4)


@settings(max_examples=60, deadline=None)
@given(cats=st.lists(TEXTS, max_size=70), probes=st.lists(TEXTS, max_size=12))
def test_the_category_tree_finds_a_text_where_the_array_does(cats, probes):
    """A categorical cell found by the tree of comparisons (Spark's spelling, evaluated
    here on DuckDB, whose texts compare by bytes as Spark's do) is the first place of the
    text among the categories, or the number of categories for any other text: what
    `position` over the array gives. Repeated categories, empty texts, quotes,
    backslashes and non-ASCII included; up to 70 categories (the tree's leaves of 4)."""
    tree = plan_module._category_tree(cats, "x", dialect.DUCKDB)
    con = duckdb.connect()
    for probe in [*cats, *probes]:
        (found,) = con.execute(f"SELECT {tree} FROM (SELECT ? AS x)", [probe]).fetchone()
        assert found == (cats.index(probe) if probe in cats else len(cats))
