"""A keys statistic on DuckDB under a small memory limit, and two texts sharing an id.

DuckDB's hash aggregate keeps a text group key's bytes where its memory limit cannot
evict them: the distinct (person, key) pairs over a million long texts do not fit in
32 MB on one thread as text, and fit as integer ids (plan.Plan.keys_sql)."""

from __future__ import annotations

import hashlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from releases.compute import duckdb_engine, keyed_hash
from releases.compute.plan import KeyIdCollision

DOMAIN = {"name": "tag", "kind": "categorical", "type": "string", "categories": [],
          "missing": "drop"}  # fmt: skip


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def _spec(path: str, keys_per_person: int) -> dict:
    entry = {"position": 0, "kind": "keys", "columns": [DOMAIN], "epsilon": "1",
             "delta": "0.00001", "keys_per_person": keys_per_person, "with_counts": True,
             "max_keys": 1000}  # fmt: skip
    return {
        "parquet_file": path,
        "statistics": [entry],
        "privacy_unit": {"id_column": "person", "contribution_bound": 5},
    }


def test_a_million_long_keys_are_counted_in_a_small_memory_limit(media, settings):
    """2M rows, 1M persons with 2 distinct keys each among 1M texts of 36 characters (each
    held by 2 persons), at 32 MB on one thread: every key counted at its 2 holders."""
    settings.DPPORTAL_COMPUTE_MEMORY_MB = 32
    settings.DPPORTAL_COMPUTE_THREADS = 1
    rows, keys = 2_000_000, 1_000_000
    duckdb.execute(
        "COPY (SELECT (i // 2)::BIGINT AS person, 'key-' || md5(((i * 7919) % "  # noqa: S608 - constants
        f"{keys})::VARCHAR) AS tag FROM range({rows}) AS t(i)) TO "
        f"'{media / 'long.parquet'}' (FORMAT parquet)"
    )
    (found,) = duckdb_engine.run_plan(
        _spec("long.parquet", 2), duckdb_engine.duckdb_plan(_spec("long.parquet", 2))
    )
    assert len(found) == keys
    assert set(found.values()) == {2}
    assert "key-" + hashlib.md5(b"7919").hexdigest() in found  # noqa: S324 - test data


def _tags(media) -> str:
    people = ["a", "a", "b", "c", "c", "c", None]
    tags = ["x", "y", "x", "y", "z", None, "x"]
    pq.write_table(pa.table({"person": people, "tag": tags}), media / "tags.parquet")
    return "tags.parquet"


@pytest.mark.parametrize("person_type", [pa.string(), pa.int64()])
def test_counts_are_distinct_persons_per_key(media, person_type):
    people = ["a", "a", "b", "c", "c", "c", None, "b"]
    if pa.types.is_integer(person_type):
        people = [None if p is None else ord(p) for p in people]
    tags = ["x", "y", "x", "y", "z", None, "x", "x"]
    table = pa.table({"person": pa.array(people, person_type), "tag": tags})
    pq.write_table(table, media / "tags.parquet")
    spec = _spec("tags.parquet", 3)
    (found,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert found == {"x": 2, "y": 2, "z": 1}
    spec = _spec("tags.parquet", 1)
    (found,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert sum(found.values()) == 3  # each person in one key
    assert found.get("z", 0) <= 1 and found.get("y", 0) <= 2


def test_two_texts_sharing_an_id_refuse_the_release(media, monkeypatch):
    """Every text given one id: the persons' keys merge into it, and the release is refused
    rather than publish the merged count under any of the texts; one text alone is not.
    The persons' texts share one id too: two persons are then counted as one (a collision
    lowers a count, never raises one)."""
    monkeypatch.setitem(keyed_hash.HEX_BIGINT, "duckdb", "CAST(0 * strlen({x}) AS BIGINT)")
    spec = _spec(_tags(media), 3)
    with pytest.raises(KeyIdCollision):
        duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    pq.write_table(pa.table({"person": ["a", "b", "a"], "tag": ["x", "x", "x"]}),
                   media / "one.parquet")  # fmt: skip
    spec = _spec("one.parquet", 3)
    (found,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert found == {"x": 1}
