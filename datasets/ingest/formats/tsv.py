"""Tab-separated text (.tsv, .tab): the CSV reader's checks with a tab delimiter.

The bytes go through the CSV ingest's GuardedStream (UTF-8, NUL bytes, line
length); cells are read as text and typed as a CSV's (see batches.Layout's
text_numbers). Quoted cells follow the CSV convention (as pandas and Excel write
them).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv

from datasets.ingest.common import IngestLimits, IngestRejected
from datasets.ingest.formats.batches import Layout, check_names
from datasets.ingest.reader import GuardedStream, RaggedRows, _infer_types

SAMPLE_BYTES = 1 << 20


class TsvReader:
    def __init__(self, path: Path, limits: IngestLimits) -> None:
        self.path, self.limits = path, limits
        self.layout: Layout | None = None

    def _options(self, names: list[str] | None, ragged: RaggedRows):
        block = max(1 << 20, self.limits.max_row_bytes + 1)
        read = pa_csv.ReadOptions(
            column_names=names, skip_rows=1 if names else 0, block_size=block,
            autogenerate_column_names=False,
        )  # fmt: skip
        parse = pa_csv.ParseOptions(delimiter="\t", invalid_row_handler=ragged)
        convert = pa_csv.ConvertOptions(
            column_types={n: pa.string() for n in names or []},
            null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True,
            check_utf8=False,
        )  # fmt: skip
        return read, parse, convert

    def read_layout(self) -> Layout:
        stream = GuardedStream(self.path, limits=self.limits)
        try:
            head = stream.read(max(SAMPLE_BYTES, 2 * self.limits.max_row_bytes + 2))
        finally:
            stream.close()
        if not head.strip():
            raise IngestRejected("The file is empty.")
        if len(head) >= SAMPLE_BYTES:
            head = head[: head.rfind(b"\n") + 1]
        first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", errors="replace")
        names = check_names(first.lstrip("\ufeff").split("\t"), self.limits)
        ragged = RaggedRows()
        try:
            table = pa_csv.read_csv(io.BytesIO(head), *self._options(names, ragged))
        except pa.ArrowInvalid:
            raise IngestRejected(ragged.message() if ragged.found else "The file is not TSV.")
        if table.num_rows == 0:
            raise IngestRejected("The file has a header but no data rows.")
        self.layout = Layout(
            names=names, types=_infer_types(names, table, decimal_comma=False), text_numbers=True
        )
        return self.layout

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        assert self.layout is not None
        stream = GuardedStream(self.path, limits=self.limits)
        ragged = RaggedRows()
        try:
            reader = pa_csv.open_csv(stream, *self._options(self.layout.names, ragged))
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                yield batch, stream.fraction
        except pa.ArrowInvalid:
            if stream.error is not None:
                raise stream.error
            raise IngestRejected(ragged.message() if ragged.found else "The file is not TSV.")
        finally:
            stream.close()
