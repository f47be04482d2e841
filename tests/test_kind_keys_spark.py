"""Keys found in the data on Spark (local[2]): the same counts as DuckDB and the numpy oracle
where the choice of a person's keys is forced (rows as persons; keys_per_person at least
every person's distinct keys), and the same totals where it is not."""

from __future__ import annotations

import collections

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from releases.compute import duckdb_engine, keyed_hash, spark_engine
from releases.compute.plan import KeyIdCollision
from releases.compute.readers_keys import distinct_person_counts

pytestmark = pytest.mark.spark

DOMAIN = {"name": "tag", "kind": "categorical", "type": "string", "categories": [],
          "missing": "drop"}  # fmt: skip


@pytest.fixture
def media(settings, tmp_path, spark):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def _write(media) -> tuple[str, pa.Table]:
    people, tags = [], []
    for i in range(60):
        for j in range(1 + i % 3):
            people.append(f"p{i}")
            tags.append([f"k{i % 5}", f"k{(i * 7) % 3}", "<b>x</b>"][j])
        people.append(None if i % 10 == 0 else f"p{i}")  # a row without an ID is dropped
        tags.append(None)
    table = pa.table({"person": people, "tag": tags})
    pq.write_table(table, media / "tags.parquet", row_group_size=16)
    return "tags.parquet", table


@pytest.mark.parametrize(("with_id", "keys_per_person"), [(False, 1), (True, 3), (True, 1)])
def test_spark_counts_keys_as_duckdb_and_the_readers(media, with_id, keys_per_person):
    path, table = _write(media)
    entry = {"position": 0, "kind": "keys", "columns": [DOMAIN], "epsilon": "1",
             "delta": "0.00001", "keys_per_person": keys_per_person, "with_counts": True,
             "max_keys": 1000}  # fmt: skip
    spec = {
        "parquet_file": path,
        "statistics": [entry],
        "privacy_unit": {"id_column": "person" if with_id else "", "contribution_bound": 5},
    }
    plan = spark_engine.spark_plan(spec)
    assert plan is not None
    (on_spark,) = spark_engine.run_plan(spec, plan)
    (on_duckdb,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    oracle = distinct_person_counts(
        table.column("tag").combine_chunks(),
        table.column("person").combine_chunks() if with_id else None,
        keys_per_person=keys_per_person,
    )
    if not with_id or keys_per_person == 3:
        assert on_spark == on_duckdb == oracle
    else:
        persons = {p for p, t in zip(table.column("person").to_pylist(),
                                     table.column("tag").to_pylist(), strict=True)
                   if p is not None and t is not None}  # fmt: skip
        assert sum(on_spark.values()) == sum(on_duckdb.values()) == len(persons)
        assert collections.Counter(on_spark).keys() <= set(oracle) | set(on_duckdb)


def test_spark_refuses_texts_sharing_an_id_as_duckdb_does(media, monkeypatch):
    """Every text given one id on both engines: both refuse the release rather than publish
    the merged count under a text."""
    path, _ = _write(media)
    entry = {"position": 0, "kind": "keys", "columns": [DOMAIN], "epsilon": "1",
             "delta": "0.00001", "keys_per_person": 3, "with_counts": True,
             "max_keys": 1000}  # fmt: skip
    spec = {
        "parquet_file": path,
        "statistics": [entry],
        "privacy_unit": {"id_column": "person", "contribution_bound": 5},
    }
    monkeypatch.setitem(keyed_hash.HEX_BIGINT, "spark", "CAST(0 * length({x}) AS BIGINT)")
    monkeypatch.setitem(keyed_hash.HEX_BIGINT, "duckdb", "CAST(0 * strlen({x}) AS BIGINT)")
    with pytest.raises(KeyIdCollision):
        spark_engine.run_plan(spec, spark_engine.spark_plan(spec))
    with pytest.raises(KeyIdCollision):
        duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
