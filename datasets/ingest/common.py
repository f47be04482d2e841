"""What every part of the ingest shares: limits, the rejection, column types."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from dpportal.errors import ValidationFailed

INT_PATTERN = r"^\s*[+-]?[0-9]{1,18}\s*$"
FLOAT_PATTERN = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
LEADING_ZERO_PATTERN = r"^\s*[+-]?0[0-9]"
INTEGER, FLOAT, STRING = "integer", "float", "string"
ARROW_TYPES = {INTEGER: pa.int64(), FLOAT: pa.float64(), STRING: pa.string()}


class IngestRejected(ValidationFailed):
    """The file cannot become a dataset; the message says why, without data values."""


@dataclass(frozen=True)
class IngestLimits:
    max_upload_bytes: int
    max_decompressed_bytes: int
    max_columns: int


def human_size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
