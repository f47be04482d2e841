"""Parquet files: the schema checked against our column types, read by row groups.

Integer columns stay integer (unsigned 64-bit only while they fit), floating and
decimal columns become float, text and dictionary-encoded text become text, and
booleans, dates and times become text (true/false, ISO 8601) for the owner to
declare. Nested (list, struct, map) and binary columns are refused: a dataset is a
flat table of numbers and text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.utils.translation import gettext_noop

from datasets.ingest.common import FLOAT, INTEGER, STRING, IngestLimits, IngestRejected
from datasets.ingest.formats.batches import Layout, check_names

BATCH_ROWS = 65_536


def _kind(name: str, arrow_type: pa.DataType) -> str:
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return INTEGER
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return FLOAT
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return STRING
    if pa.types.is_boolean(t) or pa.types.is_temporal(t):
        return STRING
    if pa.types.is_nested(t):
        raise IngestRejected(
            gettext_noop(
                "Column '%(name)s' is nested (lists, structs or maps): only flat columns of "
                "numbers, text, booleans or dates can be ingested. Flatten it first."
            ),
            name=name[:100],
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        raise IngestRejected(
            gettext_noop(
                "Column '%(name)s' holds binary data: only numbers, text, booleans or dates "
                "can be ingested."
            ),
            name=name[:100],
        )
    raise IngestRejected(
        gettext_noop("Column '%(name)s' has a type that cannot be ingested (%(type)s)."),
        name=name[:100],
        type=str(t),
    )


class ParquetReader:
    def __init__(self, path: Path, limits: IngestLimits) -> None:
        self.path, self.limits = path, limits

    def _open(self) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(self.path)
        except (pa.ArrowInvalid, OSError):
            raise IngestRejected(gettext_noop("The file is not a readable Parquet file."))

    def read_layout(self) -> Layout:
        with self._open() as parquet:
            schema = parquet.schema_arrow
        if len(schema) > self.limits.max_columns:
            raise IngestRejected(
                gettext_noop("The file has %(count)s columns; at most %(limit)s are allowed."),
                count=len(schema),
                limit=self.limits.max_columns,
            )
        names = check_names(schema.names, self.limits)
        types = {name: _kind(name, f.type) for name, f in zip(names, schema, strict=True)}
        return Layout(names=names, types=types)

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        with self._open() as parquet:
            groups = max(parquet.num_row_groups, 1)
            for group in range(parquet.num_row_groups):
                try:
                    table = parquet.read_row_group(group)
                except (pa.ArrowInvalid, OSError):
                    raise IngestRejected(
                        gettext_noop("The Parquet file is damaged: a row group is unreadable.")
                    )
                for batch in table.to_batches(BATCH_ROWS):
                    yield _flat(batch), (group + 1) / groups


def _flat(batch: pa.RecordBatch) -> pa.RecordBatch:
    arrays = []
    for array in batch.columns:
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        if pa.types.is_boolean(array.type):
            array = pc.if_else(array, "true", "false")
        elif pa.types.is_temporal(array.type) and not pa.types.is_date(array.type):
            array = pc.cast(array, pa.string())
        elif pa.types.is_date(array.type):
            array = pc.strftime(array, "%Y-%m-%d")
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
