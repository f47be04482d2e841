"""Data in object storage, read by DuckDB as Arrow streams that pyarrow fetches.

DuckDB's own S3 reader (httpfs) is an extension downloaded at run time, and pyarrow's S3
filesystem wrapped for DuckDB as an fsspec filesystem failed intermittently ("Cannot
read past end of file", 1 run in 12 on one object). Here pyarrow reads the Parquet with
its own S3 filesystem (the one the storage layer uses) and hands DuckDB record batches:
each row group is fetched once, only the plan's columns, and the batches stream through
(memory: a few batches, not the file).

A stream is read once, and the person bound reads the data in three statements, so the
connection wrapper registers a FRESH stream before every statement: each statement reads
the source at most once. Each row carries the number the local path gives it
(file_row_number, and the file's index in the high bits when there are several files),
so both paths choose the same rows for the same key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from releases.compute.dialect import ROW

#: the name the plan's SQL reads the data by
NAME = "dpportal_source"
BATCH_ROWS = 65_536


def stream_opener(
    paths: list[str], filesystem: pafs.FileSystem, columns: list[str]
) -> Callable[[], pa.RecordBatchReader]:
    """A function that opens a new stream of `columns` plus the row number, in file order."""
    several = len(paths) > 1

    def batches() -> Iterator[pa.RecordBatch]:
        for index, path in enumerate(paths):
            with filesystem.open_input_file(path) as handle:
                parquet = pq.ParquetFile(handle)
                offset = index << 40 if several else 0
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
                    numbers = pa.array(range(offset, offset + batch.num_rows), pa.int64())
                    offset += batch.num_rows
                    yield pa.RecordBatch.from_arrays(
                        [*batch.columns, numbers], names=[*batch.schema.names, ROW]
                    )

    schema_of = pq.read_schema(paths[0], filesystem=filesystem)
    schema = pa.schema([schema_of.field(c) for c in columns] + [pa.field(ROW, pa.int64())])

    def open_stream() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(schema, batches())

    return open_stream


class FreshSource:
    """A DuckDB connection whose every statement finds a new stream under NAME."""

    def __init__(self, con: Any, open_stream: Callable[[], pa.RecordBatchReader]) -> None:
        self._con, self._open = con, open_stream

    def execute(self, sql: str, parameters: Any = None):
        self._con.register(NAME, self._open())
        if parameters is None:
            return self._con.execute(sql)
        return self._con.execute(sql, parameters)
