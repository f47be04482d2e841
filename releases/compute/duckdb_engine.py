"""Running the aggregation plan (releases.compute.plan) on DuckDB, in this worker process.

DuckDB is embedded: the query runs on `threads` threads under `memory_limit`,
spilling to a private temporary directory (removed afterwards) when an operator
needs more. True aggregates come back only as the small per-cell result rows,
in this process's memory; nothing is written but DuckDB's own spill files and the
person bound's working tables, in a database file in the same directory.

Privacy unit (an ID column and a bound L): per person at most L rows, the ones
with the smallest keyed hash h(K, person, n), n the row's place among its person's
rows (1, 2, ... in row-number order), K a per-release 64-bit secret from the CSPRNG
(dpportal.privacy.rng.uniform_keys; passed as a query parameter, never in SQL text).
Rows without an ID are dropped. The choice for a person depends only on that
person's rows and K (DESIGN.md section 7): n counts only the person's own rows, never
another's. h is the engine-neutral `keyed_hash.bound_hash_sql` (a keyed integer mix of n and
the ID, a text ID by its MD5; an ID type without a canonical text, e.g. a date, is left
out), the hash Spark's plan orders by: for the same K both engines keep the same rows, and
so give the same true aggregates. It is computed for heavy persons' rows only. A keys
statistic's choice of a person's keys uses the same K (plan.keys_sql).

With a fresh person-rows copy of the dataset (datasets.person_rows: made once,
when the owner confirms the unit) the bound needs no grouping by person at all
(releases.compute.person_rows). Without one (not made yet, a stale one, object
storage) -- or when the copy is read out of order or changes meanwhile -- the
dataset itself is read (from object storage as Arrow streams:
releases.compute.arrow_source). A plain row_number() over all rows would hold every row;
instead three passes --

1. `heavy`: hashes of the IDs seen more than L times (an aggregate over the ID
   column alone; DuckDB's hash aggregate spills). A hash collision only lets a
   light person into step 2, where the ranking is by the real ID;
2. `dropped`: among the rows of heavy hashes only, the row numbers ranked past L
   within their person -- one window over the heavy rows by (ID, row number) gives n
   and the person's first row number, a second ranks by (h, row number) within that
   first row number -- kept as one bit per row in blocks of 1,024 consecutive row
   numbers (a few thousand blocks per 10M rows);
3. the plan's aggregation over the rows with an ID whose bit is not set (a join on
   the block, then the bit). Probing the small block table costs about a third of
   an anti join with the dropped row numbers themselves (millions of entries, past
   the CPU's caches, and partitioned to disk under `memory_limit` at 100M rows).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from django.conf import settings

from datasets import storage
from dpportal.privacy.rng import RandomSource, uniform_keys
from releases.compute import arrow_source, person_rows
from releases.compute.dialect import DUCKDB, NTH, ROW
from releases.compute.plan import Plan, checked_keys, plan_or_none

logger = logging.getLogger(__name__)


def open_source(spec: dict[str, Any]) -> tuple[list[str], pa.Schema, pafs.FileSystem | None]:
    """The ONE place the data is opened: (the files, the stored schema, and the object
    storage's filesystem -- None for the local disk, which DuckDB reads itself).

    A dataset registered in place (spec["external"]) is read from the file list frozen
    in the spec, never a fresh glob; a frozen file that vanished or changed size is refused.
    """
    external = spec.get("external")
    if external:
        storage.check_external_unchanged(external)
        filesystem = storage.external_filesystem(external["kind"])
        paths = [f["path"] for f in external["files"]]
    else:
        filesystem, path = storage.filesystem_and_path(spec["parquet_file"])
        paths = [path]
    schema = pq.read_schema(paths[0], filesystem=filesystem)
    if isinstance(filesystem, pafs.LocalFileSystem):
        return [str(Path(p)) for p in paths], schema, None
    return paths, schema, filesystem


def duckdb_plan(spec: dict[str, Any]) -> Plan | None:
    """The spec's plan on DuckDB, or None (a kind or a column the plan does not cover)."""
    paths, schema, filesystem = open_source(spec)
    unit = spec["privacy_unit"]
    if unit["id_column"] and unit["id_column"] not in schema.names:
        return None
    return plan_or_none(spec, schema, DUCKDB)


def compute_threads() -> int:
    return int(getattr(settings, "DPPORTAL_COMPUTE_THREADS", 0) or os.cpu_count() or 1)


def compute_memory_mb() -> int:
    return int(getattr(settings, "DPPORTAL_COMPUTE_MEMORY_MB", 192))


def _connect(spill: str, *, ordered: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection whose database is a fresh file in the private spill directory: the
    person bound's working tables (the heavy persons' hashes, the dropped rows: tens of
    millions of entries at 100M rows) are then written out and evicted under
    `memory_limit` like any spilled operator, where an in-memory database must keep
    them pinned and fails."""
    database = Path(tempfile.mkdtemp(dir=spill)) / "work.duckdb"
    return duckdb.connect(
        database=str(database),
        config={
            "threads": compute_threads(),
            "memory_limit": f"{compute_memory_mb()}MB",
            "temp_directory": spill,
            # only the person-rows copy's reading needs rows in file order
            "preserve_insertion_order": ordered,
            "enable_external_access": True,
        },
    )


def run_plan(
    spec: dict[str, Any],
    plan: Plan,
    *,
    on_pass: Callable[[int], None] | None = None,
    rng: RandomSource | None = None,
) -> list[Any]:
    """The true aggregates of `spec` by `plan` (memory only). on_pass(done) after each pass."""
    path, schema, filesystem = open_source(spec)
    unit = spec["privacy_unit"]
    id_column = unit["id_column"]
    d = plan.dialect
    id_type = schema.field(id_column).type if id_column else None  # h hashes the ID
    columns = list(plan.source_columns)
    if id_column and id_column not in columns:
        columns.append(id_column)
    if filesystem is None:
        files = ", ".join(d.text(p) for p in path)
        read = f"read_parquet([{files}], file_row_number = true)"
        # several files: a row's number is unique across them (the file's index, high bits)
        several = "(file_index::BIGINT << 40) + file_row_number"
        row = "file_row_number" if len(path) == 1 else several
        stream = None
    else:  # object storage: Arrow streams from pyarrow (releases.compute.arrow_source)
        read, row = arrow_source.NAME, ROW
        stream = arrow_source.stream_opener(path, filesystem, columns)
    projection = ", ".join([*(d.ident(c) for c in columns), f"{row} AS {ROW}"])
    source = f"(SELECT {projection} FROM {read})"  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
    spill = tempfile.mkdtemp(prefix="dpportal-duckdb-")
    report = on_pass or (lambda done: None)
    # the person-rows copy names persons by its own ID: a keys statistic reads the dataset
    copy = person_rows.copy_for(spec) if id_column and not plan.keys_parts else None
    try:
        rows, names, keys = None, [], {}
        if copy is not None:
            with _connection(spill, ordered=True) as con:
                try:
                    rows, names = _through_copy(con, plan, spec, copy, id_type, rng)
                except person_rows.OutOfOrder:
                    # never an aggregate from a misread copy: the dataset itself, as without one
                    logger.warning(
                        "dataset %s: person-rows copy read out of order or changed; not used",
                        spec.get("dataset"),
                    )
        if rows is None:
            with _connection(spill) as con:
                reader = con if stream is None else arrow_source.FreshSource(con, stream)
                rows, names, keys = _through_source(
                    reader, plan, source, unit, id_type, rng, report
                )
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    report(3 if id_column else 1)
    return plan.shape(rows, names, keys)


@contextmanager
def _connection(spill: str, *, ordered: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = _connect(spill, ordered=ordered)
    try:
        yield con
    finally:
        con.close()


def _through_source(con, plan: Plan, source: str, unit, id_type, rng, report):
    """The plan over the dataset itself (the person bound, if any, by `_bound_rows`); one
    key K for the bound and the keys statistics, as on Spark (the same choices)."""
    relation = f"{source} AS s"
    params: dict[str, int] = {}
    if unit["id_column"]:
        bound = int(unit["contribution_bound"])
        params["key"] = int(uniform_keys(1, rng)[0])
        relation = _bound_rows(con, source, unit["id_column"], id_type, bound, params, report)
    try:
        rows, names = [], []
        if plan.groupings:
            cursor = con.execute(plan.aggregate_sql(relation))
            rows, names = cursor.fetchall(), [c[0] for c in cursor.description]
        return rows, names, _keys(con, plan, relation, unit["id_column"], params)
    finally:
        params.clear()


def _keys(
    con, plan: Plan, relation: str, id_column: str | None, params
) -> dict[int, dict[str, int]]:
    """Each keys statistic's counts over the kept rows (plan.keys_sql), by its place; the
    choice of a person's keys keyed by the release's K (`params`)."""
    out: dict[int, dict[str, int]] = {}
    for i, part in enumerate(plan.parts):
        if part.keys is None:
            continue
        if not id_column:
            out[i] = checked_keys(con.execute(plan.keys_sql(part, relation, None)).fetchall())
            continue
        # one thread: at 100M rows (80M persons) the windows over the distinct (person,
        # key) pairs could not allocate 64 MiB under the 192 MB limit with two threads'
        # buffers beside them, and completed on one (114 s)
        con.execute("SET threads = 1")
        try:
            cursor = con.execute(plan.keys_sql(part, relation, id_column), params)
            out[i] = checked_keys(cursor.fetchall())
        finally:
            con.execute(f"SET threads = {compute_threads()}")
    return out


def _through_copy(con, plan: Plan, spec: dict[str, Any], path: str, id_type, rng):
    """The plan over the dataset's person-rows copy (releases.compute.person_rows)."""
    keyed = person_rows.keyed_hash_sql(plan.dialect, spec["privacy_unit"]["id_column"], id_type)
    key = int(uniform_keys(1, rng)[0])
    try:
        return person_rows.aggregate(con, plan, spec, path, key=key, keyed_hash=keyed)
    finally:
        del key


# the dropped rows as bits of blocks of 2**BLOCK rows (a row's block: its number >> BLOCK)
BLOCK = 10
BLOCK_ID, BLOCK_BITS = "__block", "__bits"


def _bound_rows(con, source: str, id_column: str, id_type, bound: int, params, report):
    """Steps 1 and 2 (module docstring); the relation of the rows the unit keeps. h is
    computed only in step 2, for the heavy persons' rows."""
    person = DUCKDB.ident(id_column)
    con.execute(
        f"CREATE TABLE heavy AS SELECT hash({person}) AS hp FROM {source} "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
        f"WHERE {person} IS NOT NULL GROUP BY hash({person}) HAVING count(*) > {bound}"
    )
    report(1)
    # h(K, person, n): n, the row's place among its person's rows, depends on that person's
    # rows alone (not on the rows of others before it); the row number breaks ties in h.
    # The ranking partitions by the person's first row number (in the same window as n: a
    # row number is unique, so it names the person) rather than by the ID, and its rows
    # carry the row number and h alone: narrower than the ID, it sorts and spills less.
    keyed = person_rows.keyed_hash_sql(DUCKDB, id_column, id_type)
    by_row = f"(PARTITION BY s.{person} ORDER BY s.{ROW})"
    last = (1 << BLOCK) - 1
    # the dropped rows' numbers first, their blocks' bits after: the bits aggregated straight
    # over the windows' output ran out of DuckDB's memory at 100M rows (20M heavy persons),
    # where the two steps finish at the same peak (the second takes under half a second)
    con.execute(
        f"CREATE TABLE dropped_rows AS SELECT {ROW} FROM ("  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
        f"SELECT s.{ROW}, row_number() OVER (PARTITION BY s.__first ORDER BY s.__h, s.{ROW}) AS rn "
        f"FROM (SELECT s.{ROW}, s.__first, {keyed} AS __h FROM ("
        f"SELECT s.{ROW}, s.{person}, row_number() OVER {by_row} AS {NTH}, "
        f"first_value(s.{ROW}) OVER {by_row} AS __first FROM {source} AS s "
        f"WHERE s.{person} IS NOT NULL AND hash(s.{person}) IN (SELECT hp FROM heavy)"
        f") AS s) AS s) AS ranked WHERE rn > {bound}",
        params,
    )
    con.execute(
        f"CREATE TABLE dropped AS SELECT {ROW} >> {BLOCK} AS {BLOCK_ID}, "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
        f"bitstring_agg(CAST({ROW} & {last} AS INTEGER), 0, {last}) AS {BLOCK_BITS} "
        f"FROM dropped_rows GROUP BY {BLOCK_ID}"
    )
    con.execute("DROP TABLE dropped_rows")
    report(2)
    bit = f"get_bit(x.{BLOCK_BITS}, CAST(s.{ROW} & {last} AS INTEGER))"
    return (
        f"{source} AS s LEFT JOIN dropped AS x ON x.{BLOCK_ID} = s.{ROW} >> {BLOCK} "  # noqa: S608 - names quoted
        f"WHERE s.{person} IS NOT NULL AND (x.{BLOCK_BITS} IS NULL OR {bit} = 0)"
    )
