"""Persons per bucket of rows per person: the true aggregate of a "persons" statistic.

Per person (a non-null value of the dataset's ID column) count ALL of the person's
rows, before the per-person limit L (the statistic describes the raw distribution L
is chosen from; its sensitivity is 1 whatever L is: dpportal.privacy.rows_per_person),
put the count in its public bucket and count persons per bucket. One query: a GROUP BY
person inside a GROUP BY bucket, the same SQL on DuckDB and on Spark; the numpy
reader (`persons_numpy`) is the test oracle. Only the per-bucket counts leave the
engine, into this process's memory.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dpportal.privacy.rows_per_person import Bucket, buckets
from releases.compute import arrow_source
from releases.compute.dialect import DUCKDB, SPARK, Dialect
from releases.compute.duckdb_engine import _connection, open_source


def statistic_cap(entry: dict[str, Any]) -> int:
    """The frozen statistic's cap (the most rows per person it resolves)."""
    return int(entry["cap"])


def bucket_sql(rows: str, bucket_list: list[Bucket]) -> str:
    """The bucket index of a person with `rows` rows (a CASE over the public edges)."""
    branches = " ".join(
        f"WHEN {rows} <= {int(b.high)} THEN {i}"
        for i, b in enumerate(bucket_list)
        if b.high is not None
    )
    return f"CASE {branches} ELSE {len(bucket_list) - 1} END"


def persons_sql(relation: str, id_column: str, cap: int, d: Dialect) -> str:
    """Persons per bucket over `relation` (rows with the ID column): (bucket, persons)."""
    person = d.ident(id_column)
    bucket = bucket_sql("n", buckets(cap))
    return (
        f"SELECT {bucket} AS b, count(*) AS persons FROM ("  # noqa: S608 - names quoted (Dialect.ident), integers only
        f"SELECT count(*) AS n FROM {relation} WHERE {person} IS NOT NULL GROUP BY {person}"
        f") AS p GROUP BY {bucket}"
    )


def shape(rows: list[tuple], cap: int) -> np.ndarray:
    """The query's (bucket, persons) rows as one int64 count per bucket."""
    out = np.zeros(len(buckets(cap)), dtype=np.int64)
    for b, persons in rows:
        out[int(b)] = int(persons)
    return out


def persons_duckdb(spec: dict[str, Any], entry: dict[str, Any]) -> np.ndarray:
    """The statistic's true aggregate by DuckDB (memory only)."""
    id_column = spec["privacy_unit"]["id_column"]
    paths, _, filesystem = open_source(spec)
    spill = tempfile.mkdtemp(prefix="dpportal-duckdb-")
    try:
        with _connection(spill) as con:
            if filesystem is None:
                files = ", ".join(DUCKDB.text(p) for p in paths)
                relation = f"read_parquet([{files}])"
                reader = con
            else:
                relation = arrow_source.NAME
                stream = arrow_source.stream_opener(paths, filesystem, [id_column])
                reader = arrow_source.FreshSource(con, stream)
            sql = persons_sql(relation, id_column, statistic_cap(entry), DUCKDB)
            rows = reader.execute(sql).fetchall()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return shape(rows, statistic_cap(entry))


def persons_spark(spec: dict[str, Any], entry: dict[str, Any]) -> np.ndarray:
    """The statistic's true aggregate on Spark: the same SQL (collected here only)."""
    from releases.compute import spark_engine  # noqa: PLC0415 - pyspark only when asked

    id_column = spec["privacy_unit"]["id_column"]
    paths, filesystem = spark_engine.open_source(spec)
    session = spark_engine.spark_session()
    view = f"dpportal_persons_{uuid.uuid4().hex}"
    frame = spark_engine.source_frame(session, paths, filesystem, [id_column])
    frame.createOrReplaceTempView(view)
    try:
        sql = persons_sql(view, id_column, statistic_cap(entry), SPARK)
        rows = [tuple(r) for r in session.sql(sql).collect()]
    finally:
        session.catalog.dropTempView(view)
    return shape(rows, statistic_cap(entry))


def persons_numpy(parquet: pq.ParquetFile, *, id_column: str, cap: int) -> np.ndarray:
    """The oracle: the ID column read whole, rows per person counted, then bucketed."""
    column = parquet.read(columns=[id_column]).column(id_column)
    column = pc.drop_null(column)
    if len(column) == 0:
        return np.zeros(len(buckets(cap)), dtype=np.int64)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    counts = pc.value_counts(column).field("counts").to_numpy().astype(np.int64)
    highs = np.array([b.high for b in buckets(cap)[:-1]], dtype=np.int64)
    index = np.searchsorted(highs, counts, side="left")
    return np.bincount(index, minlength=len(buckets(cap))).astype(np.int64)
