"""Reading the upload: the guarded byte stream, the header, type inference, CSV options.

Every check that can refuse a file before any Parquet is written lives here: size
after decompression (the gzip-bomb guard), NUL bytes, UTF-8, the header's names,
the column count, ragged rows.
"""

from __future__ import annotations

import csv
import io
import os
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from django.utils.translation import gettext_noop
from isal import igzip, isal_zlib

from datasets.ingest.common import (
    ARROW_TYPES,
    FLOAT,
    FLOAT_PATTERN,
    GZIP_MAGIC,
    INT_DIGITS,
    INT_PATTERN,
    INTEGER,
    LEADING_ZERO_PATTERN,
    STRING,
    ZIP_MAGIC,
    CsvDialect,
    IngestLimits,
    IngestRejected,
    single_zip_member,
)
from datasets.ingest.decoding import Transcoder
from datasets.ingest.header import check_header, header_warnings
from datasets.ingest.numbers import plain_numbers
from dpportal.messages import Record, record

SAMPLE_BYTES = 1 << 20  # type inference and header checks read this much first
READ_CHUNK = 1 << 20
BLOCK_SIZE = 1 << 20
PLAIN = CsvDialect()
NUMERIC_SHARE = 0.9  # a column is numeric when this share of its sample cells parse


class GuardedStream(io.RawIOBase):
    """The decompressed bytes of the upload, checked as they stream through.

    Decodes every byte in `encoding` (refusing an undecodable one with its line
    number) and yields UTF-8; with `encoding=None` the raw bytes pass unchecked
    (detection reads its sample this way). Refuses NUL characters, a line longer
    than `limits.max_row_bytes`, and more decompressed bytes than
    `limits.decompressed_limit(size on disk)` (the gzip-bomb guard). `fraction` is
    the share of the file on disk consumed so far (pyarrow may call read() from its
    own threads, so progress is reported by the caller's thread, not from here).
    """

    def __init__(self, path: Path, *, limits: IngestLimits, encoding: str | None = "utf-8") -> None:
        super().__init__()
        self._raw: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed in close()
        size = os.fstat(self._raw.fileno()).st_size
        self._total = max(size, 1)
        head = self._raw.read(4)
        self._raw.seek(0)
        self.gzipped = head[:2] == GZIP_MAGIC
        self._stream: BinaryIO = self._raw
        self._archive: zipfile.ZipFile | None = None
        compressed = self.gzipped or head == ZIP_MAGIC
        self._max = limits.decompressed_limit(size) if compressed else size
        if self.gzipped:  # ISA-L's inflate: the same gzip, three times zlib's speed
            self._stream = igzip.IGzipFile(fileobj=self._raw)
        elif compressed:  # a zipped CSV: detection and preview read its one member
            self._stream = self._open_zip_member(limits)
        self._transcoder = Transcoder(encoding) if encoding else None
        self._limits = limits
        self._line = 0  # bytes since the last newline
        self._out = bytearray()  # transcoded bytes not yet returned
        self._eof = False
        self.fraction = 0.0
        self.consumed = 0
        self.error: IngestRejected | None = None

    def _open_zip_member(self, limits: IngestLimits) -> BinaryIO:
        try:
            self._archive = zipfile.ZipFile(self._raw)
            return self._archive.open(single_zip_member(self._archive, self._max, limits))
        except IngestRejected:
            self.close()
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError):
            self.close()
            raise IngestRejected(
                gettext_noop("The zip archive is damaged or uses an unsupported compression.")
            )

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = size if size and size > 0 else READ_CHUNK
        try:
            while len(self._out) < size and not self._eof:
                out = self._next(size)
                if not self._out and len(out) <= size:
                    return out  # the common case: no copy
                self._out += out
        except IngestRejected as exc:
            self.error = exc
            raise
        data = bytes(self._out[:size])
        del self._out[:size]
        return data

    def _next(self, size: int) -> bytes:
        try:
            data = self._stream.read(size)
        except (OSError, EOFError, zlib.error, isal_zlib.IsalError, zipfile.BadZipFile):
            self._fail(
                record(
                    gettext_noop("The zip archive is damaged or uses an unsupported compression.")
                    if self._archive is not None
                    else gettext_noop(
                        "The file looks compressed (gzip) but could not be decompressed."
                    )
                )
            )
        self.consumed += len(data)
        if self.consumed > self._max:
            self._fail(self._limits.decompressed_message())
        if not data:
            self._eof = True
        out = data
        if self._transcoder is not None:
            out = self._transcoder.feed(data, final=not data)
            if b"\x00" in out:
                self._fail(
                    record(gettext_noop("The file contains a NUL byte: it is not a text CSV file."))
                )
            self._check_lines(out)
        self.fraction = min(self._raw.tell() / self._total, 1.0)
        return out

    def _check_lines(self, data: bytes) -> None:
        """Refuse a line longer than the limit, wherever it falls across reads."""
        self._line = open_line_after(data, self._limits.max_row_bytes, self._line)
        if self._line < 0:
            self._fail(self._limits.row_message())

    def drain(self) -> None:
        """Read to the end, checking everything; the fast way to refuse a bomb before parsing."""
        while self.read(READ_CHUNK):
            pass

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _fail(self, message: Record):
        self.error = IngestRejected.of(message)
        raise self.error

    def close(self) -> None:
        if self._stream is not self._raw:
            self._stream.close()
        if self._archive is not None:
            self._archive.close()
        self._raw.close()
        super().close()


def open_line_after(data, limit: int, line: int = 0) -> int:
    """The length of the line still open at the end of `data` (bytes or an mmap), given
    `line` bytes of it before; -1 if a line in it is longer than `limit` bytes.

    From the open line's start, the last newline within the bytes the line may still
    take is searched backwards from the window's end (memrchr): none means a longer
    line; each search stops within a line of the window's end, so the data costs a few
    calls per limit's worth of bytes, not one per line."""
    position, size = 0, len(data)
    while size - position > limit - line:
        end = data.rfind(b"\n", position, position + limit - line + 1)
        if end < 0:
            return -1
        position, line = end + 1, 0
    last = data.rfind(b"\n", position)
    return size - last - 1 if last >= 0 else line + size - position


#: bytes per read when decompressing a gzip upload into its plain copy
COPY_CHUNK = 4 << 20
#: bytes per read when decoding text into the copy: Python's codecs hold the GIL for
#: a whole read, which the ingest's thread waits for (while the copy is written
#: by another thread, datasets.ingest.writer): a smaller read lets it in sooner
TRANSCODE_CHUNK = 1 << 20


def check_decompressed(path: Path, limits: IngestLimits) -> None:
    """Decompress a gzip upload once, keeping nothing, and refuse it if it is over the
    limits: a gzip bomb is refused in the time it takes zlib to expand the limit's
    worth of bytes, before any CSV parsing or Parquet writing. Plain files pass."""
    stream = GuardedStream(path, limits=limits, encoding=None)
    try:
        if stream.gzipped:
            stream.drain()
    finally:
        stream.close()


def plain_copy(
    path: Path,
    limits: IngestLimits,
    dialect: CsvDialect,
    destination: Path,
    *,
    transcode: bool,
    parts: Callable[[Path], None] | None = None,
    part_bytes: int = 0,
) -> tuple[CsvDialect, bool] | None:
    """Write the upload once, as a stream, as the plain UTF-8 file `destination`, and
    return the dialect to read it with and whether a line of it is longer than
    `limits.max_row_bytes` (seen on the way: the fast path need not search the copy);
    None, and nothing written, when there is nothing to undo (a plain UTF-8 file, or
    text not to transcode).

    Undoes a gzip compression (refusing a bomb as check_decompressed does) and, when
    `transcode`, decodes the text from `dialect.encoding` as the careful reader would
    (datasets.ingest.decoding.Transcoder: the same UTF-8 bytes, the BOM dropped).
    Every later pass (header, sample, the fast path, the careful reader) then reads
    the copy: the upload is decompressed and decoded once instead of once per pass.
    Text that cannot be decoded is left to the careful reader (None: it refuses the
    upload with the line of the first undecodable byte, after the checks that come
    before), so what is refused, and with which message, does not change.

    With `parts`, the copy is written as consecutive files (`part_path(destination, n)`)
    of at least `part_bytes` each, cut after a line break, and each is given to
    `parts` once complete, so that they can be parsed while the rest is decoded. When
    the copy fails or returns None, the parts already given are the caller's to remove
    (it may be reading them), the others are removed here.
    """
    stream = GuardedStream(path, limits=limits, encoding=None)
    transcoder = Transcoder(dialect.encoding) if transcode else None
    if transcoder is not None and transcoder.passthrough:
        transcoder = None
    written: list[Path] = []
    given = 0  # parts handed to `parts` (the caller's to remove)
    try:
        if not stream.gzipped and transcoder is None:
            return None
        line = 0  # bytes of the line still open; -1 once a line was over the limit
        target = part_path(destination, 0) if parts else destination
        written.append(target)
        out = open(target, "wb")  # noqa: SIM115 - closed below, or in the finally
        size = 0
        read_bytes = COPY_CHUNK if transcoder is None else min(COPY_CHUNK, TRANSCODE_CHUNK)
        try:
            while True:
                chunk = stream.read(read_bytes)
                data = chunk
                if transcoder is not None:
                    try:
                        data = transcoder.feed(chunk, final=not chunk)
                    except IngestRejected:
                        out.close()
                        for done in written[given:]:
                            done.unlink(missing_ok=True)
                        return None
                if line >= 0:
                    line = open_line_after(data, limits.max_row_bytes, line)
                cut = data.rfind(b"\n") + 1 if parts and size + len(data) >= part_bytes else 0
                if cut:  # this part ends after its last line break; the next takes the rest
                    out.write(data[:cut])
                    out.close()
                    given += 1
                    parts(target)
                    target = part_path(destination, len(written))
                    written.append(target)
                    out = open(target, "wb")  # noqa: SIM115
                    data, size = data[cut:], 0
                out.write(data)
                size += len(data)
                if not chunk:
                    break
        finally:
            out.close()
        if parts:
            given += 1
            parts(target)  # the last part (perhaps empty)
    except BaseException:
        for done in written[given:]:
            done.unlink(missing_ok=True)
        raise
    finally:
        stream.close()
    copied = replace(dialect, encoding="utf-8") if transcoder is not None else dialect
    return copied, line < 0


def part_path(destination: Path, number: int) -> Path:
    """The `number`th part of a copy written in parts (see plain_copy): a name the ingest's
    clean-up finds (`.*.tmp`, datasets.ingest.writer.temporary_parquet_paths)."""
    return destination.with_name(f"{destination.name.removesuffix('.tmp')}.{number:05d}.tmp")


def read_header_and_sample(
    path: Path, limits: IngestLimits, dialect: CsvDialect = PLAIN
) -> tuple[list[str], bytes]:
    """The cleaned header names (or column_1, ... without a header) and the first
    complete lines (up to SAMPLE_BYTES), as UTF-8."""
    # room for the header and at least one row, each up to the row limit
    sample_bytes = max(SAMPLE_BYTES, 2 * limits.max_row_bytes + 2)
    stream = GuardedStream(path, limits=limits, encoding=dialect.encoding)
    try:
        head = b""
        while len(head) < sample_bytes:
            chunk = stream.read(sample_bytes - len(head))
            if not chunk:
                break
            head += chunk
        complete = len(head) < sample_bytes
    finally:
        stream.close()
    if not head.strip():
        raise IngestRejected(gettext_noop("The file is empty."))
    if not complete:
        head = head[: head.rfind(b"\n") + 1]
        if not head:
            raise IngestRejected.of(limits.row_message())
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        header = next(_rows(text, dialect))
    except (StopIteration, csv.Error):
        raise IngestRejected(gettext_noop("The file has no header line."))
    if not complete and _blank_after_first_line(text):
        raise IngestRejected.of(limits.row_message())  # the first row did not end in the sample
    if not dialect.header:
        return [f"column_{i}" for i in range(1, len(header) + 1)], head
    names = [name.strip() for name in header]
    check_header(names, limits)
    return names, head


def _rows(text: str, dialect: CsvDialect):
    """The sample's CSV records, its lines cut as they are read (split on "\n" as
    io.StringIO splits them): the header takes the first, and a copy of the whole
    sample (megabytes, as io.StringIO would hold) costs more than the read itself."""
    return csv.reader(_lines(text), delimiter=dialect.delimiter, quotechar=dialect.quote_char)


def _lines(text: str):
    start = 0
    while start < len(text):
        end = text.find("\n", start) + 1 or len(text)
        yield text[start:end]
        start = end


_NOT_BLANK = re.compile(r"\S")


def _blank_after_first_line(text: str) -> bool:
    """Whether nothing but whitespace follows the text's first line (searched in
    place: no copy of the rest)."""
    end = text.find("\n")
    return _NOT_BLANK.search(text, end + 1) is None


def inspect_sample(
    names: list[str],
    sample: bytes,
    *,
    dialect: CsvDialect = PLAIN,
    max_row_bytes: int = BLOCK_SIZE,
) -> tuple[dict[str, str], list[Record]]:
    """Each column's type from the sample (integer, float or string), and warnings."""
    text_types = {name: STRING for name in names}
    table = _read_all(
        io.BytesIO(sample), names, text_types, dialect=dialect, max_row_bytes=max_row_bytes
    )
    if table.num_rows == 0:
        raise IngestRejected(gettext_noop("The file has a header but no data rows."))
    types = _infer_types(
        names, table, decimal_comma=dialect.decimal_comma, thousands=dialect.thousands
    )
    return types, header_warnings(names, table, types)


def _infer_types(
    names: list[str], table: pa.Table, *, decimal_comma: bool, thousands: str = ""
) -> dict[str, str]:
    types = {}
    for name in names:
        values = table.column(name).drop_null()
        if decimal_comma or thousands:
            values = plain_numbers(values, decimal_comma=decimal_comma, thousands=thousands)
        n = len(values)
        if n == 0:
            types[name] = STRING
            continue
        # a column that repeats a few values (most do) has each distinct text matched
        # once, weighted by its cells: a pattern costs more than counting them
        # (its first cells tell, before all are counted)
        uses = None
        head = values.slice(0, 1024)
        if pc.count_distinct(head).as_py() * 4 <= len(head):
            counted = pc.value_counts(values)
            if len(counted) * 4 <= n:
                values, uses = counted.field("values"), counted.field("counts")
        digits = _digits_alone(values)
        if digits is not None:
            types[name] = digits
            continue
        floats = _cells_matching(values, uses, FLOAT_PATTERN)
        if floats < NUMERIC_SHARE * n or floats == 0:
            types[name] = STRING  # text: the other two patterns cannot make it a number
            continue
        ints = _cells_matching(values, uses, INT_PATTERN)
        if (
            ints == floats
            and pc.any(pc.match_substring_regex(values, LEADING_ZERO_PATTERN)).as_py()
        ):
            types[name] = STRING  # codes such as '007' keep their digits
        else:
            types[name] = INTEGER if ints == floats else FLOAT
    return types


def _digits_alone(values: pa.Array) -> str | None:
    """The type of a column whose every cell is ASCII digits alone (IDs, counts: the
    commonest numeric column), without the patterns: each such cell matches FLOAT_PATTERN,
    INT_PATTERN when it has at most INT_DIGITS, LEADING_ZERO_PATTERN when it starts with
    0 and has more; None when a cell is anything else, or longer (the patterns decide).
    A unique ID column's three pattern passes cost about three times these checks."""
    if not pc.all(pc.ascii_is_decimal(values)).as_py():  # false for an empty text
        return None
    lengths = pc.binary_length(values)
    if pc.max(lengths).as_py() > INT_DIGITS:
        return None
    leading_zero = pc.and_(pc.starts_with(values, "0"), pc.greater(lengths, 1))
    return STRING if pc.any(leading_zero).as_py() else INTEGER


def _cells_matching(values, uses, pattern: str) -> int:
    """The cells whose text matches `pattern`: `values` are the cells, or (with `uses`,
    the cells holding each) the distinct texts."""
    matched = pc.match_substring_regex(values, pattern)
    return pc.sum(matched if uses is None else pc.filter(uses, matched)).as_py() or 0


class RaggedRows:
    """Records the first ragged row so the message can say what was wrong (no values)."""

    def __init__(self) -> None:
        self.found: tuple[int, int] | None = None

    def __call__(self, row) -> str:
        if self.found is None:
            self.found = (row.actual_columns, row.expected_columns)
        return "error"

    def message(self) -> Record:
        actual, expected = self.found or (0, 0)
        return record(
            gettext_noop(
                "A row has %(actual)s fields but the header has %(expected)s: every row must "
                "have as many fields as the header (a cell containing the separator must be "
                "quoted)."
            ),
            actual=actual,
            expected=expected,
        )


def csv_options(
    names: list[str],
    types: dict[str, str],
    ragged: RaggedRows | None = None,
    *,
    dialect: CsvDialect = PLAIN,
    max_row_bytes: int = BLOCK_SIZE,
):
    # pyarrow needs every row to fit in one block
    block_size = max(BLOCK_SIZE, max_row_bytes + 1)
    read = pa_csv.ReadOptions(
        column_names=names, skip_rows=int(dialect.header), block_size=block_size
    )
    parse = pa_csv.ParseOptions(
        delimiter=dialect.delimiter, quote_char=dialect.quote_char, invalid_row_handler=ragged
    )
    convert = pa_csv.ConvertOptions(
        decimal_point="," if dialect.decimal_comma else ".",
        column_types={name: ARROW_TYPES[types[name]] for name in names},
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
        check_utf8=False,  # the stream has checked UTF-8 already
    )
    return read, parse, convert


def _read_all(
    source,
    names: list[str],
    types: dict[str, str],
    *,
    dialect: CsvDialect = PLAIN,
    max_row_bytes: int = BLOCK_SIZE,
) -> pa.Table:
    ragged = RaggedRows()
    read, parse, convert = csv_options(
        names, types, ragged, dialect=dialect, max_row_bytes=max_row_bytes
    )
    try:
        return pa_csv.read_csv(source, read, parse, convert)
    except pa.ArrowInvalid:
        if ragged.found:
            raise IngestRejected.of(ragged.message())
        raise IngestRejected(gettext_noop("The file could not be read as CSV."))
