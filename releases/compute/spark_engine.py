"""Running the aggregation plan (releases.compute.plan, `SPARK` dialect) on Apache Spark.

The same plan as releases.compute.duckdb_engine; only where the rows are read and
aggregated differs. Both give the same true aggregates, with a privacy unit too: for the
same key both keep the same rows per person (both order them by the engine-neutral
`keyed_hash.bound_hash_sql`) and the same keys per person (`Plan.keys_sql`); tests/
test_releases_spark.py runs the two. The session
comes from settings (DPPORTAL_SPARK_MASTER, default "local[*]") with the web UI
and the event log off and log level WARN; it is made once per process and kept
(a Celery worker process pays the JVM start once, not per release); nothing is
persisted or cached.

Reading. Local files: Spark's own (vectorized, columnar) Parquet reader, one read
per file, the row's number (the person bound's tie-break) from the reader's
`_metadata.row_index` -- the same number DuckDB's `file_row_number` gives,
plus the file's index << 40 when there are several files (duckdb_engine's
numbering). Object storage: Spark's reader would need the s3a connector
(hadoop-aws and the AWS SDK jars, not shipped with pyspark), so there the driver
lists the (file, row group) fragments from the Parquet footers and `mapInArrow`
over that list has each task read its fragment with pyarrow through the storage
layer's filesystem (the same numbering). No Python function runs per row.

Privacy unit (an ID column and a bound L): per person the L rows with the
smallest keyed hash `keyed_hash.bound_hash_sql` (integer arithmetic over the secret K,
the person and the row's place among the person's rows: the hash any engine
computes identically), ties broken by the row number; K a per-release 64-bit secret from
the CSPRNG (dpportal.privacy.rng.uniform_keys), bound as a query parameter,
never in SQL text. As in DuckDB's plan, only heavy persons' rows are hashed: the
rows (the plan's cell codes and grid units by then, `Plan.rows_sql`) are shuffled by
person and sorted once, counted and numbered per person (one window), and a heavy
person's L smallest (hash, row number) kept by the person's least rank key (L = 1) or
a bottom-k aggregate over the person's rows (`bound_relation`); a person with at most L
rows keeps them all.

What a cluster operator can see: the dataset's rows and task-level intermediate
rows (partial aggregates, counts per person, the shuffled rows of the person
bound) in executors' memory and shuffle/spill files, and K inside the executed
plan in the driver's memory. Never the result in a log or event log: the UI and
event log are off, logs are at WARN, and only the small per-cell result rows are
collected, into this worker process, to become the aggregates (`Plan.shape`)
noise is added to.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from django.conf import settings

from datasets import storage
from dpportal.privacy.rng import RandomSource, uniform_keys
from releases.compute.dialect import NTH, PERSON, ROW, SPARK
from releases.compute.keyed_hash import bound_hash_sql
from releases.compute.plan import Plan, checked_keys, plan_or_none

_lock = threading.Lock()
FRAGMENT_SCHEMA = "path STRING, row_group INT, offset BIGINT"
FILE_BITS = 40  # a row's number: the file's index above these bits (duckdb_engine's numbering)
#: `aggregate`: the most codes (product over the cell columns) aggregated at the finest grain
FINEST_CELLS = 1 << 16
#: `bound_relation`: the largest bound whose heavy persons are ranked by a bottom-k heap
HEAP_BOUND = 64
#: `rank_key`: the bits of a person's row's place n below its keyed hash
NTH_BITS = 32
#: the driver's and executors' JVM options (`session_conf`)
JVM_OPTIONS = "-XX:+UseParallelGC"
#: `session_conf`: a local master's shuffle files uncompressed, its plans not re-planned
LOCAL_CONF = {
    "spark.shuffle.compress": "false",
    "spark.shuffle.spill.compress": "false",
    "spark.sql.adaptive.enabled": "false",
}


def master() -> str:
    return getattr(settings, "DPPORTAL_SPARK_MASTER", "") or "local[*]"


def spark_session(url: str | None = None):
    """The process's Spark session (created once; the JVM start takes seconds)."""
    from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark (and a JVM) only when Spark runs

    # executors of a local master run this interpreter (with pyarrow); a cluster sets its own
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    url = url or master()
    with _lock:
        builder = SparkSession.builder.master(url)
        for name, value in {**session_conf(url), **cluster_conf(url)}.items():
            builder = builder.config(name, value)
        session = (
            builder.appName("dpportal-release")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.eventLog.enabled", "false")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("WARN")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # not a line per gateway connection
    return session


def local_cores(url: str) -> int | None:
    """The cores of a local master (local[N], local[*], local); None for a cluster."""
    if url == "local":
        return 1
    if url.startswith("local[") and url.endswith("]"):
        inner = url[len("local[") : -1].split(",")[0]
        return (os.cpu_count() or 1) if inner == "*" else int(inner)
    return None


def session_conf(url: str) -> dict[str, str]:
    """Spark settings of a release's session (any master).

    Shuffle partitions (the person bound's and the aggregate's): DPPORTAL_SPARK_SHUFFLE_
    PARTITIONS, or by default 4 per core of a local master (Spark's 200 are tiny tasks
    whose overhead dominates on a few cores) and 16 on a cluster (where adaptive
    execution coalesces small ones). Input splits: a local master's Parquet read is
    cut into at least 4 splits per core (spark.sql.files.minPartitionNum; a split is
    whole row groups), so every core has work and a slow split does not leave the
    others idle; a cluster keeps Spark's default (its executors' total cores).

    The JVMs collect garbage with the parallel (throughput) collector, not G1: a
    release allocates and drops rows at a high rate, and on two cores G1's barriers
    and concurrent work made a warm 10M-row person-level release take 22-23 s against
    19 s (repeated releases in one session; bench/compute_spark.py).

    A local master also writes its shuffle files uncompressed and plans without
    adaptive execution. The files never leave the machine (they are read back from
    the page cache), so compressing them spends the few cores on nothing; and the plan
    has no join and sets its partitions, so re-planning between its stages (what
    adaptive execution does) finds nothing to change. Together, on two cores, a
    10M-row person-level release took 17.4 s warm and 20.5 s first against 20.1 and
    24.4 s (medians of five and seven sessions, interleaved). A cluster keeps both:
    its shuffles cross the network."""
    cores = local_cores(url)
    partitions = int(settings.DPPORTAL_SPARK_SHUFFLE_PARTITIONS or 0)
    conf = {
        "spark.sql.shuffle.partitions": str(partitions or (4 * cores if cores else 16)),
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
    }
    if cores:
        conf["spark.sql.files.minPartitionNum"] = str(4 * cores)
        conf.update(LOCAL_CONF)
    return conf


def cluster_conf(url: str) -> dict[str, str]:
    """On a standalone cluster, each worker process keeps its session (its driver) between
    releases; dynamic allocation hands an idle session's executors back (their shuffle
    files tracked, no external shuffle service), so sessions of several worker processes
    share the cluster's cores instead of the first one holding them all for good."""
    if not url.startswith("spark://"):
        return {}
    return {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.timeout": "120s",
        "spark.dynamicAllocation.executorIdleTimeout": "30s",
    }


def spark_status(url: str | None = None) -> str:
    """One line for a connection check: the master, Spark's version and its executors."""
    session = spark_session(url)
    tracker = session.sparkContext.statusTracker()
    executors = len(tracker.getExecutorInfos())
    # local mode has one executor (the driver); a cluster lists the driver plus its executors
    workers = executors if executors == 1 else executors - 1
    return f"Spark {session.version} at {session.sparkContext.master}: {workers} executor(s)"


def open_source(spec: dict[str, Any]) -> tuple[list[str], pafs.FileSystem]:
    """The release's Parquet files and the filesystem they are read through (the storage
    layer's: the local disk or the S3 bucket; executors read with pyarrow, no hadoop-aws).

    A dataset registered in place (spec["external"]) is read from the file list frozen in
    the spec, never a fresh listing; a frozen file that vanished or changed is refused."""
    external = spec.get("external")
    if external:
        storage.check_external_unchanged(external)
        paths = [f["path"] for f in external["files"]]
        return paths, storage.external_filesystem(external["kind"])
    filesystem, path = storage.filesystem_and_path(spec["parquet_file"])
    return [path], filesystem


def read_schema(paths: list[str], filesystem: pafs.FileSystem) -> pa.Schema:
    with filesystem.open_input_file(paths[0]) as f:
        return pq.read_schema(f)


def spark_plan(spec: dict[str, Any], filesystem: pafs.FileSystem | None = None) -> Plan | None:
    """The spec's plan in the SPARK dialect, or None (not on the plan: the numpy path)."""
    paths, fs = open_source(spec)
    schema = read_schema(paths, filesystem or fs)
    unit = spec["privacy_unit"]
    if unit["id_column"] and unit["id_column"] not in schema.names:
        return None
    return plan_or_none(spec, schema, SPARK)


def bound_hash(plan: Plan, schema: pa.Schema, unit: dict[str, Any]) -> str:
    """The person bound's keyed hash of a row of `s`, its ID as `PERSON` (the key as the
    text parameter :key)."""
    return bound_hash_sql(plan.dialect, PERSON, schema.field(unit["id_column"]).type, ":key")


def fragments(paths: list[str], filesystem: pafs.FileSystem) -> list[tuple[str, int, int]]:
    """(file, row group, number of the group's first row) from the footers alone."""
    out: list[tuple[str, int, int]] = []
    for index, path in enumerate(paths):
        offset = index << FILE_BITS if len(paths) > 1 else 0
        with filesystem.open_input_file(path) as f:
            meta = pq.ParquetFile(f).metadata
        for group in range(meta.num_row_groups):
            out.append((path, group, offset))
            offset += meta.row_group(group).num_rows
    return out


def _spark_type(kind: pa.DataType) -> pa.DataType:
    """The Arrow type a column is handed to Spark as (what the plan's SQL expects)."""
    if pa.types.is_integer(kind) and kind != pa.uint64():
        return pa.int64()
    if pa.types.is_floating(kind):
        return pa.float64()
    return pa.string()  # text, and IDs of any other type (equality is all the bound needs)


def fragment_reader(
    filesystem: pafs.FileSystem, schema: pa.Schema
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The executors' function: fragments in, their rows (plan's columns + row number) out."""
    columns = [n for n in schema.names if n != ROW]

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, group, offset in zip(
                *(batch.column(i).to_pylist() for i in range(3)), strict=True
            ):
                with filesystem.open_input_file(path) as f:
                    table = pq.ParquetFile(f).read_row_group(group, columns=columns)
                rows = pa.array(np.arange(offset, offset + table.num_rows, dtype=np.int64))
                table = table.append_column(ROW, rows).cast(schema)
                yield from table.to_batches(max_chunksize=65536)

    return read


def source_frame(session, paths: list[str], filesystem: pafs.FileSystem, columns: list[str]):
    """The rows of `columns` (plus the row number) as a DataFrame: Spark's own reader for
    local files, the executors' pyarrow reader for object storage (module docstring)."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        return native_frame(session, paths, columns)
    from pyspark.sql.pandas.types import from_arrow_schema  # noqa: PLC0415 - see spark_session

    stored = read_schema(paths, filesystem)
    schema = pa.schema(
        [(c, _spark_type(stored.field(c).type)) for c in columns] + [(ROW, pa.int64())]
    )
    parts = fragments(paths, filesystem)
    listing = session.sparkContext.parallelize(parts, max(1, len(parts)))
    return session.createDataFrame(listing, FRAGMENT_SCHEMA).mapInArrow(
        fragment_reader(filesystem, schema), from_arrow_schema(schema)
    )


def native_frame(session, paths: list[str], columns: list[str]):
    """Local Parquet through Spark's reader: the columns as stored, the row's number from
    the reader's row index (a file's rows in file order, whatever the split)."""
    from pyspark.sql import functions as F  # noqa: N812, PLC0415 - see spark_session

    frames = []
    for index, path in enumerate(paths):
        row = F.col("_metadata.row_index")
        if len(paths) > 1:
            row = row + F.lit(index << FILE_BITS)
        read = session.read.parquet(str(path))
        named = [F.col(SPARK.ident(c)) for c in columns]
        frames.append(read.select(*named, row.cast("bigint").alias(ROW)))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionAll(other)
    return frame


def bound_relation(rows: str, columns: list[str], bound: int, order: str) -> str:
    """The rows the person bound keeps, as a query of `columns` over `rows` (a query of the
    plan's per-row columns with the person, `PERSON`, and the row number, `ROW`).

    The rows are the plan's cell codes and grid units, not the stored columns: the
    person bound's shuffle and sort move a few numbers per row instead of the stored
    texts (a 10M-row release about 1.7 s faster on two cores). One shuffle of the rows by
    person and one sort by (person, row number): over that one window order each row gets
    its person's row count and its place n among them. The keyed hash `order` (over n)
    is computed only for the rows of persons with more than `bound` rows; a lighter
    person's rows are all kept. Among a heavy person's rows the `bound` smallest (hash,
    n) are kept -- n orders a person's rows as their row numbers do, and both are
    packed in one BIGINT rank key (`rank_key`), cheaper to compare than a pair: for a
    bound of one, the rows whose key is the person's smallest (a plain min over the
    person's window); up to HEAP_BOUND by a bottom-k aggregate over the window (min_by
    with k: a heap per person, no second sort of the rows); above it by a second
    row_number window ordered by the key, a second sort of every row, which the heap's
    per-row copy of its k kept row numbers would outweigh. All keep the same rows: the
    key is unique within a person.

    Plans without the windows were slower on two cores (10M rows, L = 1: 21.5 s this
    way): a hash aggregate per person keeping each column's value at the least key
    (min_by) 32 s, the same grouped by 120 bits of the ID's MD5 101 s, a person's rows
    collected into one array, sorted and ranked by higher-order functions 32 s, and
    DuckDB's three passes (the heavy IDs' hashes aggregated, the rows joined to them,
    broadcast or not) 37-45 s."""
    person = SPARK.ident(PERSON)
    names = ", ".join(SPARK.ident(c) for c in columns)
    # the count's frame is the whole partition, but its window order is n's: one Window, one sort
    by = f"PARTITION BY s.{person} ORDER BY s.{ROW}"
    counted = (
        f"(SELECT s.*, count(*) OVER ({by} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED "  # noqa: S608 - names quoted (Dialect.ident)
        f"FOLLOWING) AS __n, row_number() OVER ({by}) AS {NTH} FROM ({rows}) AS s "
        f"WHERE s.{person} IS NOT NULL)"
    )
    keyed = (
        f"(SELECT s.*, CASE WHEN s.__n > {bound} THEN {rank_key(order)} END AS __k "  # noqa: S608 - names quoted (Dialect.ident)
        f"FROM {counted} AS s)"
    )
    whole = f"PARTITION BY s.{person}"
    if bound == 1:
        ranked, kept = f"min(s.__k) OVER ({whole})", "__n <= 1 OR __k = __ranked"
    elif bound <= HEAP_BOUND:
        ranked = f"min_by(s.{ROW}, s.__k, {bound}) OVER ({whole})"
        kept = f"__n <= {bound} OR array_contains(__ranked, {ROW})"
    else:
        ranked, kept = f"row_number() OVER ({whole} ORDER BY s.__k)", f"__ranked <= {bound}"
    return f"SELECT {names} FROM (SELECT s.*, {ranked} AS __ranked FROM {keyed} AS s) WHERE {kept}"  # noqa: S608 - names quoted (Dialect.ident)


def rank_key(order: str) -> str:
    """A heavy person's row's rank as one BIGINT: the keyed hash `order` (in [0, 2**31))
    above NTH_BITS bits of n, the row's place among its person's rows, so that keys order
    as the pairs (hash, n) do and no two of a person's rows share one. n is Spark's
    row_number, an INT (below 2**31), so it fits; the key stays below 2**63."""
    return f"({order}) * {1 << NTH_BITS} + s.{NTH}"


def cell_codes(plan: Plan) -> dict[str, int]:
    """Each cell column's number of codes (its axis' cells and -1, a dropped row)."""
    sizes: dict[str, int] = {}
    for part in plan.parts:
        for table in part.tables if part.tables is not None else [part]:
            for axis, column in zip(table.axes, table.grouping, strict=True):
                sizes[column] = axis.size + 1
    return sizes


def _summed(plan: Plan, sql: str) -> str | None:
    """The BIGINT expression an exact-sum aggregate of the plan sums; None for a count."""
    head, tail = plan.dialect.exact_sum.split("{x}")
    if sql.startswith(head) and sql.endswith(tail):
        return sql[len(head) : len(sql) - len(tail)]
    return None


def aggregate(session, plan: Plan, rows: str, args: dict[str, Any]) -> tuple[list, list[str]]:
    """The plan's result rows and column names (`Plan.grouping_sql`'s) over `rows` (a query
    of `Plan.rows_sql`'s columns: the rows the privacy unit keeps).

    Spark's GROUPING SETS copies every row once per set (Expand) and sums DECIMAL(38, 0)
    through BigDecimal. Instead, when the finest grain (every cell column grouped) has at
    most FINEST_CELLS codes, one aggregate at that grain, each exact sum as two BIGINT
    sums (the value's high 32 bits, arithmetic shift, and its low 32 bits: neither can
    overflow below 2**31 rows, and ANSI mode would raise rather than wrap), and every
    grouping set rolled up from its small result here: counts and integer sums add up
    exactly, so the rows are the ones GROUPING SETS gives (no row for an empty set)."""
    cells = plan.cell_columns
    codes = cell_codes(plan)
    if any(c not in codes for c in cells) or math.prod(codes[c] for c in cells) > FINEST_CELLS:
        frame = session.sql(plan.grouping_sql(f"({rows})"), args=args or None)
        return [tuple(r) for r in frame.collect()], list(frame.columns)
    outputs = list(cells)
    summed: dict[str, bool] = {}
    for name, sql in plan.aggregates.items():
        x = _summed(plan, sql)
        summed[name] = x is not None
        if x is None:
            outputs.append(f"{sql} AS {name}")
        else:
            outputs.append(f"sum(shiftright({x}, 32)) AS {name}__hi")
            outputs.append(f"sum(({x}) & {(1 << 32) - 1}) AS {name}__lo")
    group = f" GROUP BY {', '.join(cells)}" if cells else ""
    sql = f"SELECT {', '.join(outputs)} FROM ({rows}) AS r{group}"  # noqa: S608 - the plan's SQL
    fine = session.sql(sql, args=args or None).collect()
    if not cells and fine and all(v is None or v == 0 for v in fine[0]):
        fine = []  # a global aggregate over no rows: GROUPING SETS (()) gives no row
    names = ["gid", *cells, *plan.aggregates]
    rows = []
    for grouping in plan.groupings:
        gid = sum(1 << (len(cells) - 1 - i) for i, c in enumerate(cells) if c not in grouping)
        at = [cells.index(c) for c in grouping]
        totals: dict[tuple, list[int]] = {}
        for row in fine:
            total = totals.setdefault(tuple(row[i] for i in at), [0] * len(summed))
            k = len(cells)
            for j, name in enumerate(summed):
                if summed[name]:
                    total[j] += ((row[k] or 0) << 32) + (row[k + 1] or 0)
                    k += 2
                else:
                    total[j] += row[k] or 0
                    k += 1
        for key, total in totals.items():
            cell_values = [key[grouping.index(c)] if c in grouping else None for c in cells]
            rows.append((gid, *cell_values, *total))
    return rows, names


def run_plan(
    spec: dict[str, Any],
    plan: Plan,
    *,
    on_pass: Callable[[int], None] | None = None,
    rng: RandomSource | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> list[Any]:
    """The true aggregates of `spec` by `plan` on Spark (collected into this process only)."""
    paths, fs = open_source(spec)
    filesystem = filesystem or fs
    unit = spec["privacy_unit"]
    id_column = unit["id_column"]
    columns = list(plan.source_columns)
    if id_column and id_column not in columns:
        columns.append(id_column)
    session = spark_session()
    view = f"dpportal_source_{uuid.uuid4().hex}"
    source_frame(session, paths, filesystem, columns).createOrReplaceTempView(view)
    args: dict[str, Any] = {}
    if id_column:  # the plan's per-row columns first, then the bound over them
        order = bound_hash(plan, read_schema(paths, filesystem), unit)
        args["key"] = str(int(uniform_keys(1, rng)[0]))  # its decimal text (row_hash_sql)
        carried = {PERSON: SPARK.ident(id_column), ROW: SPARK.ident(ROW)}
        every = plan.rows_sql(f"{view} AS s", extra=carried)
        kept = [*plan.selects, *plan.flags, PERSON]
        rows = bound_relation(every, kept, int(unit["contribution_bound"]), order)
    else:
        rows = plan.rows_sql(f"{view} AS s")
    keys: dict[int, dict[str, int]] = {}
    try:
        result, names = [], []
        if plan.groupings:
            result, names = aggregate(session, plan, rows, args)
        for i, part in enumerate(plan.parts):  # categories found in the data: one query each
            if part.keys is not None:
                sql = plan.keys_sql_over(part, rows, bool(id_column), key=":key")
                found = session.sql(sql, args=args or None).collect()
                keys[i] = checked_keys(tuple(r) for r in found)
    finally:
        args.clear()
        session.catalog.dropTempView(view)
    (on_pass or (lambda done: None))(1)
    return plan.shape(result, names, keys)
