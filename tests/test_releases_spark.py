"""The aggregation plan on Spark (local[2]) equals DuckDB's and the numpy oracle's.

A real local Spark session (session-scoped: the JVM starts once, ~10 s). Property
tests with few examples (each Spark run takes about a second): the same random
datasets and statistics as test_releases_plan (categories / Other / Missing,
bins, clipping and half-even rounding, NaN / inf, missing codes, an ID column
with L large enough that nothing is dropped); then the bound itself on Spark:
each person keeps exactly min(L, their rows). End to end: a REAL Celery worker
computes and publishes a release of a dataset marked "spark".
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasets import storage
from datasets.models import Dataset
from dpportal.privacy.rng import SeededTestRandom
from releases import lifecycle
from releases.compute import dialect, duckdb_engine, keyed_hash, spark_engine
from releases.compute import plan as plan_module
from releases.compute.run import compute_backend, release_aggregate_numpy
from releases.models import Release, ReleaseResult
from tests.conftest import wait_for
from tests.releases_support import make_dataset, submitted, true_values
from tests.test_releases_plan import VIAS, datasets, normal, oracle, prepare, statistics, write

pytestmark = pytest.mark.spark


@pytest.fixture
def media(settings, tmp_path, spark):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=datasets(), stats=statistics(), with_id=st.booleans())
def test_the_spark_plan_equals_duckdb_and_the_numpy_readers(media, data, stats, with_id):
    spec = {
        "parquet_file": write(media, data),
        "statistics": stats,
        "privacy_unit": {"id_column": "person" if with_id else "", "contribution_bound": 1000},
    }
    plan = spark_engine.spark_plan(spec)
    assert plan is not None and plan.dialect.name == "spark"
    got = [normal(v) for v in spark_engine.run_plan(spec, plan)]
    duck = [normal(v) for v in duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))]
    expected = oracle(spec, media)
    assert got == duck == expected, repr(
        (data, [s for s, a, b in zip(stats, got, expected, strict=True) if a != b])
    )


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=datasets(), stats=statistics(), with_id=st.booleans())
def test_the_rolled_up_sets_equal_spark_grouping_sets(media, data, stats, with_id):
    """The finest-grain aggregate rolled up (spark_engine.aggregate) gives the rows Spark's
    own GROUPING SETS gives (the path past FINEST_CELLS), for the same key."""
    spec = {
        "parquet_file": write(media, data),
        "statistics": stats,
        "privacy_unit": {"id_column": "person" if with_id else "", "contribution_bound": 2},
    }
    plan = spark_engine.spark_plan(spec)
    rolled = spark_engine.run_plan(spec, plan, rng=SeededTestRandom(4))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spark_engine, "FINEST_CELLS", 0)
        grouped = spark_engine.run_plan(spec, plan, rng=SeededTestRandom(4))
    assert [normal(v) for v in rolled] == [normal(v) for v in grouped]


def test_exact_sums_past_32_bits_on_spark(media):
    """A sum of values whose grid units need more than 32 bits, of both signs, adds up
    exactly (the high and low halves summed apart): equal to Python's integers."""
    values = [2.0**40 - 1, -(2.0**40) + 3, 2.0**39 + 12345, -5.0, -(2.0**33) - 1, 7.0] * 5
    n = len(values)
    data = {"cat": ["a"] * n, "k": [0] * n, "x": values, "y": [0] * n, "person": ["p"] * n}
    x = {"name": "x", "kind": "numeric", "missing": "drop"}
    bounds = {"lower": str(-(2**40)), "upper": str(2**40), "granularity": "1"}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "", "contribution_bound": 1},
        "statistics": [{"kind": "sum", "columns": [x], **bounds}],
    }
    (total,) = spark_engine.run_plan(spec, spark_engine.spark_plan(spec))
    assert total == sum(int(v) for v in values)
    assert total == duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))[0]


def test_a_local_session_has_few_shuffle_partitions_and_several_splits(settings):
    settings.DPPORTAL_SPARK_SHUFFLE_PARTITIONS = 0
    jvm = {
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
        "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
    }
    assert spark_engine.session_conf("local[2]") == {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.files.minPartitionNum": "8",
        "spark.shuffle.compress": "false",
        "spark.shuffle.spill.compress": "false",
        "spark.sql.adaptive.enabled": "false",
        **jvm,
    }
    assert spark_engine.session_conf("local")["spark.sql.shuffle.partitions"] == "4"
    assert spark_engine.session_conf("spark://m:7077") == {
        "spark.sql.shuffle.partitions": "16",
        **jvm,
    }
    settings.DPPORTAL_SPARK_SHUFFLE_PARTITIONS = 6
    assert spark_engine.session_conf("spark://m:7077")["spark.sql.shuffle.partitions"] == "6"


def test_the_session_jvm_collects_with_the_parallel_collector(spark):
    """The option reaches the JVM the session starts (a local master: the driver). The
    run's session (the fixture's, made by spark_session): one made here first would set
    the process's master for every later test."""
    jvm = spark.sparkContext._jvm
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}


def test_a_local_session_shuffles_uncompressed_without_adaptive_planning(spark):
    """The local settings reach the run's session (a local master): the shuffle's one
    read at session start, the planner's on every query."""
    assert spark.sparkContext.getConf().get("spark.shuffle.compress") == "false"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.one_of(st.integers(0, 6), st.none()), max_size=60), bound=st.integers(1, 4))
def test_each_person_keeps_exactly_min_L_rows_on_spark(media, rows, bound):
    people = [None if r is None else f"p{r}" for r in rows]
    n = len(rows)
    data = {"cat": ["a"] * n, "k": list(range(n)), "x": [0.0] * n, "y": [0] * n, "person": people}
    # one histogram cell per row (k = the row's position): the kept rows themselves
    edges = [str(e) for e in range(n + 1)] if rows else ["0", "1"]
    k = {"name": "k", "kind": "numeric", "missing": "drop", "bin_edges": edges}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    (kept,) = spark_engine.run_plan(spec, spark_engine.spark_plan(spec))
    assert set(kept.tolist()) <= {0, 1}
    per_person = Counter(people[i] for i in np.flatnonzero(kept))
    assert None not in per_person
    rows_of = Counter(p for p in people if p is not None)
    assert {p: per_person.get(p, 0) for p in rows_of} == {
        p: min(bound, n) for p, n in rows_of.items()
    }


def test_the_spark_choice_is_keyed_per_release(media):
    n = 200
    data = {
        "cat": ["a"] * n,
        "k": list(range(n)),
        "x": [0.0] * n,
        "y": [0] * n,
        "person": [f"p{i % 10}" for i in range(n)],
    }
    edges = [str(e) for e in range(n + 1)]
    k = {"name": "k", "kind": "numeric", "missing": "drop", "bin_edges": edges}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "person", "contribution_bound": 3},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    plan = spark_engine.spark_plan(spec)
    runs = [
        spark_engine.run_plan(spec, plan, rng=SeededTestRandom(s))[0].tolist() for s in (1, 1, 2)
    ]
    # the same key chooses the same rows; another key (almost surely: C(20, 3) subsets each) others
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert sum(runs[0]) == 30


def test_spark_status_names_the_version_and_executors(spark):
    status = spark_engine.spark_status()
    assert status.startswith(f"Spark {spark.version} at local[2]:")
    assert status.endswith("1 executor(s)")


@pytest.mark.worker
def test_a_worker_computes_and_publishes_a_spark_release(celery_workers, project, owner, reviewer):
    worker = celery_workers.start(DPPORTAL_SPARK_MASTER="local[2]")
    dataset = make_dataset(project=project, owner=owner, rows=4000, row_group_size=500)
    dataset.compute_backend = "spark"
    dataset.save(update_fields=["compute_backend"])
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    wait_for(
        lambda: Release.objects.get(pk=release.pk).status == "computed",
        timeout=240,
        message=f"not computed\n{worker.log()}",
    )
    assert f"release {release.pk}: aggregating on spark" in worker.log()
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    assert Release.objects.get(pk=release.pk).status == "published"
    stats = ReleaseResult.objects.get(release=release).payload["statistics"]
    truth = true_values(dataset)
    noisy = [stats[0]["values"][0], stats[1]["values"][0], *stats[2]["values"]]
    exact = [truth["count"], truth["south"], *truth["region_hist"]]
    # each within the 1 - 1e-9 tail bound of its discrete Laplace noise, b ln(1e9) with
    # b = L / eps (L = 1): false failure <= 2e-9 per value, <= 2e-8 for these 8 values
    eps = [Decimal(release.spec["statistics"][i]["epsilon"]) for i in (0, 1, 2, 2, 2, 2, 2, 2)]
    for value, true, e in zip(noisy, exact, eps, strict=True):
        assert abs(value - true) <= math.log(1e9) / float(e), (value, true, e)


def test_the_backend_follows_the_dataset_and_auto_the_size(db, settings, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=3000)
    release = submitted(project=project, owner=owner, dataset=dataset)  # spec frozen
    settings.DPPORTAL_SPARK_MASTER = ""
    settings.DPPORTAL_SPARK_MIN_ROWS = 3000
    assert compute_backend(release) == "local"  # auto without a cluster: the worker
    settings.DPPORTAL_SPARK_MASTER = "local[2]"
    assert compute_backend(release) == "spark"  # auto, a cluster, rows >= the threshold
    settings.DPPORTAL_SPARK_MIN_ROWS = 3001
    assert compute_backend(release) == "local"
    for choice in ("spark", "local"):  # an explicit choice wins over the size
        Dataset.objects.filter(pk=dataset.pk).update(compute_backend=choice)
        release.dataset.refresh_from_db()
        assert compute_backend(release) == choice


def test_quantiles_are_not_on_the_spark_plan(settings, tmp_path):
    """spark_plan is None for a quantile (release_aggregate then goes on to the numpy path)."""
    settings.MEDIA_ROOT = str(tmp_path)
    data = {"cat": ["a"], "k": [1], "x": [1.0], "y": [1], "person": ["p"]}
    spec = {
        "parquet_file": write(tmp_path, data),
        "privacy_unit": {"id_column": "", "contribution_bound": 1},
        "statistics": [{"kind": "quantiles", "columns": [], "groups": []}],
    }
    assert spark_engine.spark_plan(spec) is None
    spec["statistics"] = [{"kind": "count", "columns": []}]
    assert spark_engine.spark_plan(spec) is not None


@pytest.mark.django_db
def test_spark_reads_the_bucket_and_agrees_with_the_local_path(
    project, owner, reviewer, s3_storage, spark
):
    """Object storage on Spark: executors read the bucket's row groups through pyarrow's S3
    filesystem (no hadoop-aws); the true aggregates equal the worker's local path's on the
    same objects, DuckDB's (Arrow streams from the same bucket) and the numpy readers'."""
    dataset = make_dataset(project=project, owner=owner, rows=3000, row_group_size=700)
    local = Path(django_settings.MEDIA_ROOT) / dataset.parquet_file
    storage.store_local_file(local, dataset.parquet_file)
    local.unlink()
    release = submitted(project=project, owner=owner, dataset=dataset)
    spec = release.spec
    paths, filesystem = spark_engine.open_source(spec)
    assert isinstance(filesystem, pafs.S3FileSystem)
    on_spark = spark_engine.run_plan(spec, spark_engine.spark_plan(spec))
    on_duckdb = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    local = release_aggregate_numpy(spec=spec, release_id=release.pk)
    assert [normal(a) for a in on_spark] == [normal(a) for a in local]
    assert [normal(a) for a in on_duckdb] == [normal(a) for a in local]
    assert on_spark[0] == 3000  # the count of every row: nothing was left unread


def test_the_keyed_row_hash_is_the_same_on_spark_and_duckdb(media):
    """keyed_hash.row_hash_sql gives the same 64 bits on both engines for the same key and row:
    floats of every kind (subnormal, the largest, powers of two, -0.0, NaN, inf), text
    of several UTF-8 lengths, integers of several widths and missing values."""
    floats = [0.1, -0.0, 0.0, 5e-324, 2.0**-1022, 2.225073858507201e-308, 1.7976931348623157e308]
    floats += [8.0, 0.5, 4.0 - 2**-50, -2.5, 1e-300, 2.0**53 + 2, 123456.789, math.pi, math.nan]
    floats += [math.inf, -math.inf, None, 1.0]
    n = len(floats)
    hash_rows = pa.table(
        {
            "x": pa.array(floats, pa.float64()),
            "f": pa.array([None if v is None else v for v in floats], pa.float32()),
            "t": pa.array(["", "ab", "北京", None, "a|b;c:", "x" * 40, *["q"] * (n - 6)]),
            "i": pa.array([*range(-5, n - 5)], pa.int16()),
            "u": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
        }
    )
    pq.write_table(hash_rows, media / "h.parquet", row_group_size=5)
    typed = [(f.name, f.type) for f in hash_rows.schema]
    key = 2**64 - 3
    duck = duckdb.connect()
    hashed = keyed_hash.row_hash_sql(dialect.DUCKDB, typed, "CAST($key::UBIGINT AS VARCHAR)")
    found = duck.execute(f"SELECT {hashed} FROM hash_rows AS s", {"key": key}).fetchall()
    expected = [h for (h,) in found]
    session = spark_engine.spark_session()
    frame = spark_engine.native_frame(session, [str(media / "h.parquet")], hash_rows.column_names)
    frame.createOrReplaceTempView("hashed_rows")
    sql = keyed_hash.row_hash_sql(dialect.SPARK, typed, ":key")
    got = session.sql(
        f"SELECT {sql} AS h FROM hashed_rows AS s ORDER BY s.__row", args={"key": str(key)}
    ).collect()
    assert [r["h"] for r in got] == expected
    assert len(set(expected)) == n


def test_the_person_bound_hash_is_the_same_on_spark_and_duckdb(media):
    """keyed_hash.bound_hash_sql gives the same value on both engines for the same key: integer
    IDs of several widths (the keyed integer mix, at BIGINT's extremes and across the
    31-bit pieces' edges, negative ones too) and text IDs (by their MD5), and on DuckDB the
    integer one is keyed_hash.mix."""
    big = [0, 1, -1, 2**63 - 1, -(2**63), 2**31 - 1, 2**31, -(2**31), 2**62, -(2**62) - 1]
    n = len(big)
    id_rows = pa.table(
        {
            "b": pa.array(big, pa.int64()),
            "i": pa.array([-(2**31), 2**31 - 1, *range(-4, n - 6)], pa.int32()),
            "u": pa.array([2**32 - 1, *range(n - 1)], pa.uint32()),
            "t": pa.array(["", "北京", "x" * 40, *[f"p{i}" for i in range(n - 3)]]),
            dialect.NTH: pa.array([1, 2, 3, 2**31 - 1, *range(4, n)], pa.int64()),
        }
    )
    pq.write_table(id_rows, media / "ids.parquet", row_group_size=4)
    key = 2**64 - 5
    duck = duckdb.connect()
    duck.register("id_rows", id_rows)
    session = spark_engine.spark_session()
    frame = spark_engine.native_frame(session, [str(media / "ids.parquet")], id_rows.column_names)
    frame.createOrReplaceTempView("id_rows")
    for field in id_rows.schema:
        if field.name == dialect.NTH:
            continue
        h = keyed_hash.bound_hash_sql
        duck_sql = h(dialect.DUCKDB, field.name, field.type, "CAST($key::UBIGINT AS VARCHAR)")
        expected = [
            v
            for (v,) in duck.execute(
                f"SELECT {duck_sql} FROM id_rows AS s", {"key": key}
            ).fetchall()
        ]
        spark_sql = h(dialect.SPARK, field.name, field.type, ":key")
        got = session.sql(
            f"SELECT {spark_sql} AS h FROM id_rows AS s ORDER BY s.__row", args={"key": str(key)}
        ).collect()
        assert [r["h"] for r in got] == expected, field.name
        assert len(set(expected)) == n, field.name
        if field.name == "b":
            mask = keyed_hash.MIX_P
            places = id_rows.column(dialect.NTH).to_pylist()
            assert expected == [
                keyed_hash.mix(key, [p & mask, x & mask, (x >> 31) & mask, (x >> 62) & 3])
                for x, p in zip(big, places, strict=True)
            ]


@pytest.mark.parametrize(
    ("bound", "heap_bound"), [(1, 64), (2, 64), (2, 0)], ids=["least", "heap", "sort"]
)
@pytest.mark.parametrize("person_type", [pa.string(), pa.int64()])
def test_spark_and_duckdb_keep_the_same_rows_for_the_same_key(
    media, person_type, bound, heap_bound, monkeypatch
):
    """The same spec and key on both engines, as they run: the same rows kept per person (a
    histogram cell per row shows them), the same sums, means, spreads and histograms, and
    the same keys per person, exactly -- DuckDB over the dataset and through its
    person-rows copy; Spark ranking heavy persons by its least key (a bound of one), its
    bottom-k heap and its second sort (spark_engine.HEAP_BOUND). (Quantiles are not on
    Spark's plan: nothing to compare.)"""
    monkeypatch.setattr(spark_engine, "HEAP_BOUND", heap_bound)
    rng = np.random.default_rng(5)  # test DATA, not noise
    n = 300
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).tolist()
    ids = [None if i % 17 == 0 else int(v) for i, v in enumerate(rng.zipf(1.6, n))]
    people = [None if p is None or pa.types.is_integer(person_type) else f"p{p}" for p in ids]
    data = {
        "cat": [["a", "北", "c|d", "", None, "s4:"][i % 6] for i in range(n)],
        "k": list(range(n)),
        "x": [None if i % 23 == 0 else math.nan if i % 29 == 0 else v for i, v in enumerate(x)],
        "y": [None if i % 13 == 0 else int(v) for i, v in enumerate(rng.integers(-3, 3, n))],
        "person": ids if pa.types.is_integer(person_type) else people,
    }
    schema = pa.schema(
        [("cat", pa.string()), ("k", pa.int64()), ("x", pa.float64()), ("y", pa.int32()),
         ("person", person_type)]
    )  # fmt: skip
    pq.write_table(pa.table(data, schema=schema), media / "same.parquet", row_group_size=40)
    edges = [str(e) for e in range(n + 1)]
    k = {"name": "k", "kind": "numeric", "missing": "drop", "bin_edges": edges}
    x = {"name": "x", "kind": "numeric", "missing": "drop"}
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    cat = {"name": "cat", "kind": "categorical", "missing": "category", "categories": ["a", "北"]}
    grid = {"lower": "-8", "upper": "8", "granularity": "1/64"}
    common = {"epsilon": "1", "delta": "0", "label": "", "category": None}
    stats = [
        {"kind": "histogram", "columns": [k]},
        {"kind": "sum", "columns": [x], **grid},
        {"kind": "mean", "columns": [y], **grid},
        {"kind": "histogram", "columns": [cat]},
        {"kind": "grouped_mean", "columns": [x], "groups": [cat], **grid},
        {"kind": "variance", "columns": [x], "groups": [], **grid},
    ]
    spec = {
        "parquet_file": "same.parquet",
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{**common, **s, "position": i} for i, s in enumerate(stats)],
    }
    on_spark = spark_engine.run_plan(spec, spark_engine.spark_plan(spec), rng=SeededTestRandom(3))
    on_spark = [normal(v) for v in on_spark]
    for via in VIAS:
        prepare(spec, media, via)
        plan = duckdb_engine.duckdb_plan(spec)
        on_duckdb = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(3))
        assert [normal(v) for v in on_duckdb] == on_spark, via
    # another key: other rows (C(rows, bound) choices for each of the heavy persons)
    other = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(4))
    assert normal(other[0]) != on_spark[0]
    counts = Counter(p for p in data["person"] if p is not None)
    assert sum(on_spark[0]) == sum(min(bound, c) for c in counts.values())
    assert sum(c > bound for c in counts.values()) >= 5  # several persons were ranked
    # a keys statistic: each person's keys (at most one) chosen by the same key on both
    tag = {**cat, "categories": [], "missing": "drop", "type": "string"}
    keys = {**common, "kind": "keys", "columns": [tag], "delta": "0.00001",
            "keys_per_person": 1, "with_counts": True, "max_keys": 100}  # fmt: skip
    spec["statistics"] = [{**keys, "position": 0}, {**common, **stats[0], "position": 1}]
    plan = spark_engine.spark_plan(spec)
    on_spark = spark_engine.run_plan(spec, plan, rng=SeededTestRandom(3))
    plan = duckdb_engine.duckdb_plan(spec)
    on_duckdb = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(3))
    assert [normal(v) for v in on_spark] == [normal(v) for v in on_duckdb]
    # each person with a key among their kept rows counted once, in one of their keys
    kept = np.flatnonzero(on_spark[1])
    pairs = {(data["person"][i], data["cat"][i]) for i in kept}
    held = Counter(p for p, c in pairs if p is not None and c is not None)
    assert sum(on_spark[0].values()) == len(held)
    if bound > 1:  # one row kept: a person has one key or none, nothing to choose
        assert sum(c > 1 for c in held.values()) >= 3  # several persons' keys were chosen


def test_a_worker_process_keeps_its_session_across_releases(media, spark):
    """A second release in the same process runs on the same session (no new JVM start)."""
    data = {"cat": ["a", "b"], "k": [1, 2], "x": [1.0, 2.0], "y": [1, 2], "person": ["p", "p"]}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "person", "contribution_bound": 1},
        "statistics": [{"kind": "count", "columns": []}],
    }
    for _ in range(2):
        assert spark_engine.run_plan(spec, spark_engine.spark_plan(spec)) == [1]
        assert spark_engine.spark_session() is spark
        assert spark_engine.spark_session().sparkContext is spark.sparkContext


def test_a_cluster_session_gives_idle_executors_back():
    conf = spark_engine.cluster_conf("spark://spark-master:7077")
    assert conf["spark.dynamicAllocation.enabled"] == "true"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert spark_engine.cluster_conf("local[2]") == {}


@pytest.mark.parametrize("more", [0, 70], ids=["tree", "array"])
def test_categories_holding_backslashes_and_quotes_are_found_on_spark(media, more):
    """Spark's parser reads a backslash in a text literal as an escape: declared categories
    holding backslashes and quotes are still found (not counted as Other, and a text
    ending in a backslash does not run on into the SQL after it), by the comparison tree
    and, past TREE_CATEGORIES, by the array; the same counts as DuckDB's."""
    texts = ["a\\b", "x\\' OR 1=1 --", "it's", "\\", "''", "C:\\new", "\\\\"]
    cats = texts + [f"z{i}" for i in range(more)]
    values = texts * 3 + ["other", None]
    n = len(values)
    data = {"cat": values, "k": [0] * n, "x": [0.0] * n, "y": [0] * n, "person": ["p"] * n}
    cat = {"name": "cat", "kind": "categorical", "categories": cats, "missing": "category"}
    spec = {
        "parquet_file": write(media, data),
        "privacy_unit": {"id_column": "", "contribution_bound": 1},
        "statistics": [{"kind": "histogram", "columns": [cat], "epsilon": "1", "delta": "0"}],
    }
    assert (len(cats) <= plan_module.TREE_CATEGORIES) == (more == 0)
    expected = [3] * len(texts) + [0] * more + [1, 1]  # then Other, Missing
    (counts,) = spark_engine.run_plan(spec, spark_engine.spark_plan(spec))
    assert list(counts) == expected
    (duck,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert list(duck) == expected
