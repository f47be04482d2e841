"""What every part of the ingest shares: limits, the rejection, column types."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

import pyarrow as pa
from django.utils.translation import gettext_noop

from dpportal.errors import RecordedError, ValidationFailed
from dpportal.messages import Record, record

#: the most digits an integer cell has (any more may not fit in 64 bits: read as a float)
INT_DIGITS = 18
INT_PATTERN = rf"^\s*[+-]?[0-9]{{1,{INT_DIGITS}}}\s*$"
FLOAT_PATTERN = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
LEADING_ZERO_PATTERN = r"^\s*[+-]?0[0-9]"
INTEGER, FLOAT, STRING = "integer", "float", "string"
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"
ARROW_TYPES = {INTEGER: pa.int64(), FLOAT: pa.float64(), STRING: pa.string()}


class IngestRejected(RecordedError, ValidationFailed):
    """The file cannot become a dataset; the message says why, without data values.

    Mostly raised in a worker and stored as the dataset's failure reason, so it keeps its
    message as records (translated when read), not as words in the worker's language.
    """


@dataclass(frozen=True)
class IngestLimits:
    """What an upload may be. A gzip upload may expand to at most
    `max_decompression_ratio` times its own size, and never past
    `max_decompressed_bytes`; no line (the header included) may be longer than
    `max_row_bytes`, and no value of a typed format (Parquet, Excel, Stata, SPSS, SAS)
    either. A typed format's reader hands on rows in batches of about
    `max_batch_bytes` decoded, and reads no more than `max_decompressed_bytes` of
    decoded values from one upload (however small its file)."""

    max_upload_bytes: int
    max_decompressed_bytes: int
    max_columns: int
    max_decompression_ratio: int = 100
    max_row_bytes: int = 1 << 20
    #: data rows of a spreadsheet (Excel's own limit is 1,048,575 below a header)
    max_sheet_rows: int = 1_000_000
    #: cells (rows times columns) read from a spreadsheet: bounds the worker's time
    xlsx_max_cells: int = 2_000_000
    #: any part of an .xlsx other than its sheets and shared strings, decompressed
    xlsx_max_part_bytes: int = 16 << 20
    #: distinct text values of an .xlsx (held in memory while its sheet is read)
    xlsx_max_shared_strings: int = 1_000_000
    #: the shared strings part decompressed, and its strings' size in memory
    xlsx_max_shared_strings_bytes: int = 64 << 20
    #: decoded bytes a typed format's reader hands on at a time
    max_batch_bytes: int = 16 << 20
    #: a Parquet page, uncompressed (pyarrow decompresses a page whole)
    max_page_bytes: int = 16 << 20

    def decompressed_limit(self, compressed_size: int) -> int:
        return min(self.max_decompressed_bytes, self.max_decompression_ratio * compressed_size)

    def decompressed_message(self) -> Record:
        return record(
            gettext_noop(
                "The file is too large when decompressed: a compressed upload may expand to "
                "at most %(ratio)s times its size, and to at most %(size)s."
            ),
            ratio=self.max_decompression_ratio,
            size=human_size(self.max_decompressed_bytes),
        )

    def row_message(self) -> Record:
        return record(
            gettext_noop(
                "A line of the file is longer than %(size)s, the limit per row: is it a CSV "
                "file with one record per line?"
            ),
            size=human_size(self.max_row_bytes),
        )


def human_size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
QUOTE_CHARS = {'"': "double quote", "'": "single quote"}


@dataclass(frozen=True)
class CsvDialect:
    """How to read a CSV upload: its encoding, separator, quote, decimal mark, header
    and thousands separator."""

    encoding: str = "utf-8"
    delimiter: str = ","
    quote_char: str = '"'
    decimal_comma: bool = False
    header: bool = True
    thousands: str = ""  # a thousands separator (datasets.ingest.numbers.THOUSANDS) or none

    def to_dict(self) -> dict:
        return {
            "encoding": self.encoding,
            "delimiter": self.delimiter,
            "quote_char": self.quote_char,
            "decimal_comma": self.decimal_comma,
            "header": self.header,
            "thousands": self.thousands,
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> CsvDialect:
        data = data or {}
        default = cls()
        return cls(
            encoding=data.get("encoding", default.encoding),
            delimiter=data.get("delimiter", default.delimiter),
            quote_char=data.get("quote_char", default.quote_char),
            decimal_comma=bool(data.get("decimal_comma", default.decimal_comma)),
            header=bool(data.get("header", default.header)),
            thousands=str(data.get("thousands", default.thousands) or ""),
        )

    @property
    def plain(self) -> bool:
        """UTF-8, comma-separated, double quotes, decimal point, a header: no question to ask."""
        return self == CsvDialect()


def zip_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The files of an archive, without folders and macOS resource forks."""
    return [
        info
        for info in archive.infolist()
        if not info.is_dir() and not info.filename.startswith("__MACOSX/")
    ]


def single_zip_member(archive: zipfile.ZipFile, allowed: int, limits: IngestLimits):
    """The one data file of a zip archive, refusing several, an encrypted one, or one that
    declares more than `allowed` bytes unpacked (the zip-bomb guard's first check)."""
    members = zip_members(archive)
    if len(members) != 1:
        raise IngestRejected(
            gettext_noop(
                "The zip archive holds %(count)s files; it must hold exactly one data file."
            ),
            count=len(members),
        )
    info = members[0]
    if info.flag_bits & 0x1:
        raise IngestRejected(
            gettext_noop("The zip archive is encrypted: upload it without a password.")
        )
    if info.file_size > allowed:
        raise IngestRejected.of(limits.decompressed_message())
    return info
