"""The person bound through the person-rows copy (releases.compute.person_rows).

The copy's path and the three-pass path over the dataset itself give exactly the
same true aggregates for the same key (the same rows are kept); the per-person
selection equals a plain sort; rows read out of person order stop the
computation; a copy made for another ID column, another source or another format
is not used, and one that cannot keep the columns' names and types is not made.
(test_releases_plan runs its bound tests, each person keeping min(L, rows),
on both paths.)
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasets import person_rows
from datasets.storage import local_fingerprint
from dpportal.privacy.rng import SeededTestRandom
from releases.compute import duckdb_engine
from releases.compute import person_rows as copy_path
from tests.test_releases_plan import DATASET_ID, normal, prepare, statistics, write


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@st.composite
def people_data(draw):
    n = draw(st.integers(0, 80))
    people = st.one_of(st.none(), st.integers(0, 12).map(lambda i: f"p{i}"))
    return {
        "cat": draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n)),
        "k": draw(st.lists(st.one_of(st.integers(-3, 3), st.none()), min_size=n, max_size=n)),
        # few distinct values: rows equal in every read column (ties in h) are common
        "x": draw(st.lists(st.sampled_from([0.5, 1.5, -2.5, None]), min_size=n, max_size=n)),
        "y": draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)),
        "person": draw(st.lists(people, min_size=n, max_size=n)),
    }


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=people_data(), stats=statistics(), bound=st.integers(1, 5), seed=st.integers(0, 99))
def test_the_copy_gives_the_same_aggregates_as_the_dataset_for_the_same_key(
    media, data, stats, bound, seed
):
    spec = {
        "parquet_file": write(media, data),
        "statistics": stats,
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
    }
    plan = duckdb_engine.duckdb_plan(spec)
    runs = []
    for via in ("source", "copy"):
        prepare(spec, media, via)
        got = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(seed))
        runs.append([normal(v) for v in got])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("bound", [1, 2, 3])
def test_several_files_and_numeric_ids_give_the_same_aggregates(media, bound):
    """A dataset registered in place: row numbers across files, an integer ID column."""
    gen = np.random.default_rng(bound)  # test DATA, not noise
    files = []
    for part in range(3):
        n = 40 + 10 * part
        data = {"k": gen.integers(0, 60, n), "person": gen.integers(0, 25, n).astype(np.int64)}
        path = media / f"part-{part}.parquet"
        pq.write_table(pa.table(data), path, row_group_size=9)
        stat = path.stat()  # the frozen fingerprint, as registration records it
        files.append(
            {"path": str(path), "size": stat.st_size, "etag": local_fingerprint(path, stat)}
        )
    external = {"kind": "local", "location": str(media), "files": files}
    edges = [str(e) for e in range(61)]
    spec = {
        "dataset": DATASET_ID,
        "parquet_file": "",
        "external": external,
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [
            {
                "kind": "histogram",
                "columns": [
                    {"name": "k", "kind": "numeric", "bin_edges": edges, "missing": "drop"}
                ],
            }
        ],
    }
    plan = duckdb_engine.duckdb_plan(spec)
    without = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(4))[0].tolist()
    assert person_rows.build(
        paths=[f["path"] for f in files],
        id_column="person",
        identity=person_rows.source_identity(parquet_file="", external=external),
        target=person_rows.local_path(DATASET_ID),
        memory_mb=64,
        threads=1,
    )
    assert copy_path.copy_for(spec) is not None
    assert duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(4))[0].tolist() == without


@pytest.mark.parametrize("bound", [1, 3])
def test_rows_dropped_over_many_blocks_are_those_the_copy_drops(media, bound):
    """Thousands of rows: the dataset path keeps its dropped rows as bits of blocks of
    row numbers; the rows it keeps, block edges included, are the copy's."""
    gen = np.random.default_rng(20 + bound)  # test DATA, not noise
    n = 5 * (1 << duckdb_engine.BLOCK) + 17
    people = gen.integers(0, n // 3, n).astype(np.int64)
    table = pa.table({"k": gen.integers(0, 60, n), "person": people})
    pq.write_table(table, media / "d.parquet", row_group_size=1000)
    edges = [str(e) for e in range(61)]
    k = {"name": "k", "kind": "numeric", "bin_edges": edges, "missing": "drop"}
    spec = {
        "parquet_file": "d.parquet",
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    plan = duckdb_engine.duckdb_plan(spec)
    counts = []
    for via in ("source", "copy"):
        prepare(spec, media, via)
        counts.append(duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(7))[0].tolist())
    per_person = np.unique(people, return_counts=True)[1]
    assert sum(counts[0]) == int(np.minimum(per_person, bound).sum())
    assert counts[0] == counts[1]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), max_size=12),
    hashes=st.lists(st.integers(0, 3), min_size=108, max_size=108),
    bound=st.integers(1, 4),
)
def test_the_kept_rows_are_the_lowest_hash_then_position_per_person(sizes, hashes, bound):
    pid = np.repeat(np.arange(len(sizes)), sizes)
    # few hash values: ties; the top of the range: the largest 64-bit hashes
    h = np.array([2**64 - 1 - v if v == 3 else v for v in hashes[: len(pid)]], dtype=np.uint64)
    kept = copy_path.keep_lowest(pid, h, bound)
    assert copy_path.keep_lowest(pid, h, bound, rounds=0).tolist() == kept.tolist()  # the sort
    expected = np.zeros(len(pid), dtype=bool)
    for person in range(len(sizes)):
        rows = sorted(np.flatnonzero(pid == person), key=lambda i: (int(h[i]), i))
        expected[rows[:bound]] = True
    assert kept.tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.lists(st.booleans(), max_size=20), max_size=10))
def test_bits_packed_as_they_come_are_the_bits_packed_at_once(chunks):
    bits = copy_path._Bits()
    for chunk in chunks:
        bits.add(np.array(chunk, dtype=bool))
    whole = np.array([b for chunk in chunks for b in chunk], dtype=bool)
    assert bits.finish() == np.packbits(whole).tobytes()


def stream(*batches):
    """(pid, h, pos) batches, as the copy's heavy rows are read."""
    made = [
        pa.record_batch({"pid": p, "h": pa.array(h, pa.uint64()), "pos": q}) for p, h, q in batches
    ]
    return iter(made)


def test_rows_out_of_person_order_or_position_stop_the_selection():
    with pytest.raises(copy_path.OutOfOrder):  # a person number going back
        copy_path.kept_bitmap(
            stream(([1, 1, 2], [5, 4, 3], [7, 8, 9]), ([2, 1], [1, 1], [10, 11])), 1
        )
    with pytest.raises(copy_path.OutOfOrder):  # a row skipped
        copy_path.kept_bitmap(
            stream(([1, 1, 2], [5, 4, 3], [7, 8, 9]), ([2, 3], [1, 1], [11, 12])), 1
        )
    with pytest.raises(copy_path.OutOfOrder):  # positions out of order within a batch
        copy_path.kept_bitmap(
            stream(
                ([1, 1, 2], [5, 4, 3], [7, 9, 8]),
            ),
            1,
        )


def test_a_person_split_across_batches_is_bounded_as_one():
    start, bits = copy_path.kept_bitmap(
        stream(
            ([1, 2, 2], [9, 5, 4], [20, 21, 22]),
            ([2, 2, 2], [7, 6, 8], [23, 24, 25]),  # person 2 goes on over a whole batch
            ([2, 3, 3], [3, 1, 2], [26, 27, 28]),
        ),
        2,
    )
    kept = np.unpackbits(np.frombuffer(bits, dtype=np.uint8))[:9].tolist()
    # person 1: its one row; person 2: h 3 and 4 (rows 26, 22); person 3: both rows
    assert (start, kept) == (20, [1, 0, 1, 0, 0, 0, 1, 1, 1])


def test_a_copy_read_out_of_order_is_not_used(media, caplog):
    people = ["p1", "p2", "p1", "p2", "p3", "p3", "p3"]
    data = {"cat": ["a"] * 7, "k": list(range(7)), "x": [0.0] * 7, "y": [0] * 7, "person": people}
    spec = _spec(media, data)
    path = person_rows.local_path(DATASET_ID)
    table = pq.read_table(path)  # its metadata kept: the copy still looks fresh
    pq.write_table(table.take(list(reversed(range(table.num_rows)))), path)
    assert copy_path.copy_for(spec) is not None
    (count,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert count == 3  # three people, one row each: the dataset itself was read instead
    assert "read out of order or changed; not used" in caplog.text


def test_a_copy_changed_while_it_is_read_is_not_used(media, monkeypatch, caplog):
    people = ["p1", "p1", "p2"]
    data = {"cat": ["a"] * 3, "k": [1, 2, 3], "x": [0.0] * 3, "y": [0] * 3, "person": people}
    spec = _spec(media, data)
    path = person_rows.local_path(DATASET_ID)
    bitmap = copy_path.kept_bitmap

    def rebuilt_meanwhile(rows, bound):
        found = bitmap(rows, bound)
        path.write_bytes(path.read_bytes())  # rewritten: a new modification time
        return found

    monkeypatch.setattr(copy_path, "kept_bitmap", rebuilt_meanwhile)
    (count,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert count == 2
    assert "read out of order or changed; not used" in caplog.text


def _spec(media, data, id_column="person"):
    spec = {
        "parquet_file": write(media, data),
        "statistics": [{"kind": "count", "columns": []}],
        "privacy_unit": {"id_column": id_column, "contribution_bound": 1},
    }
    return prepare(spec, media, "copy")


DATA = {"cat": ["a", "b"], "k": [1, 2], "x": [0.5, 1.5], "y": [1, 2], "person": ["p", "p"]}


def test_a_copy_for_another_id_column_or_source_is_not_used(media):
    spec = _spec(media, DATA)
    assert copy_path.copy_for(spec) is not None
    assert copy_path.copy_for({**spec, "privacy_unit": {"id_column": "cat"}}) is None
    assert copy_path.copy_for({**spec, "dataset": DATASET_ID + 1}) is None
    # the dataset's file replaced by another (another size): the copy is stale
    write(media, {**DATA, "cat": ["a", "b, a longer value"]})
    assert copy_path.copy_for(spec) is None
    (count,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
    assert count == 1  # read from the dataset itself: one person, L = 1


def test_a_copy_of_another_format_is_not_used(media):
    spec = _spec(media, DATA)
    path = person_rows.local_path(DATASET_ID)
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[person_rows.META_KEY])
    meta["version"] = person_rows.VERSION + 1
    pq.write_table(table.replace_schema_metadata({person_rows.META_KEY: json.dumps(meta)}), path)
    assert copy_path.copy_for(spec) is None


def test_no_copy_when_a_column_takes_an_extra_name(media):
    pq.write_table(pa.table({"person": ["p"], person_rows.N: [1]}), media / "d.parquet")
    target = person_rows.local_path(DATASET_ID)
    made = person_rows.build(
        paths=[str(media / "d.parquet")],
        id_column="person",
        identity={},
        target=target,
        memory_mb=64,
        threads=1,
    )
    assert not made and not target.exists()
    assert list(target.parent.iterdir()) == []  # no partial file left behind


def test_a_copy_no_longer_fresh_when_read_is_not_used(media):
    spec = _spec(media, DATA)
    path = copy_path.copy_for(spec)
    stale = {**spec, "privacy_unit": {"id_column": "cat", "contribution_bound": 1}}
    plan = duckdb_engine.duckdb_plan(spec)
    with pytest.raises(copy_path.OutOfOrder):
        copy_path.aggregate(None, plan, stale, path, key=1, keyed_hash="0")


@pytest.mark.parametrize("bound", [1, 2])
def test_an_id_without_a_canonical_text_is_left_out_of_the_hash(media, bound):
    """A date ID (no text every engine spells alike): h hashes the row's place n alone, so the
    choice is still the person's own rows' and the key's. Each person keeps min(L, rows),
    the same rows through the copy, and another key chooses other rows."""
    gen = np.random.default_rng(7)  # test DATA, not noise
    n = 120
    days = gen.integers(0, 15, n)
    table = pa.table({"k": np.arange(n), "person": pa.array(days.astype("datetime64[D]"))})
    assert table.schema.field("person").type == pa.date32()
    pq.write_table(table, media / "dates.parquet", row_group_size=25)
    edges = [str(e) for e in range(n + 1)]
    k = {"name": "k", "kind": "numeric", "bin_edges": edges, "missing": "drop"}
    spec = {
        "parquet_file": "dates.parquet",
        "privacy_unit": {"id_column": "person", "contribution_bound": bound},
        "statistics": [{"kind": "histogram", "columns": [k]}],
    }
    runs = []
    for via in ("source", "copy"):
        prepare(spec, media, via)
        plan = duckdb_engine.duckdb_plan(spec)
        runs.append(duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(2))[0].tolist())
    assert runs[0] == runs[1]
    kept = np.bincount(days[np.flatnonzero(runs[0])], minlength=15)
    assert kept.tolist() == np.minimum(np.bincount(days, minlength=15), bound).tolist()
    # 9 distinct row counts (4 to 12): another key's choice is the same with odds < 1e-7
    other = duckdb_engine.run_plan(spec, plan, rng=SeededTestRandom(3))[0].tolist()
    assert other != runs[0]
