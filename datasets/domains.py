"""Reading a stored column the way its owner declared it (Django-free, shared).

The stored Parquet keeps what the ingest inferred (integer, float or text); the
declaration may read it differently. Every release computation reads a column
through `read_declared` (releases.compute.reading), so the rules hold everywhere:

- missing-value codes: a cell equal to a declared code (e.g. "-9", "999") is missing
  (numerically for a numeric column, as text otherwise);
- a text column declared numeric: cells that do not read as a finite number
  ('abc', 'n/a', 'inf', '1e309') are missing;
- a date column (declared categorical over the bins of a public date range): a
  cell becomes its bin's label ("2024", "2024-Q2", "2024-05", "2024-05-17"); a date
  outside the public range becomes OUT_OF_RANGE (no category: counted as "Other");
  an unreadable date is missing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from datasets.ingest.common import FLOAT_PATTERN

DATE_BINS = ("year", "quarter", "month", "day")
_Y, _M, _D = r"(?P<y>[0-9]{4})", r"(?P<m>[0-9]{1,2})", r"(?P<d>[0-9]{1,2})"
#: the accepted date layouts -> a pattern of the cell's start; a time may follow
#: ("2024-05-17T10:00:00", "17/05/2024 10:00")
DATE_FORMATS = {
    "YYYY-MM-DD": rf"^\s*{_Y}-{_M}-{_D}(?:$|[T ])",
    "DD/MM/YYYY": rf"^\s*{_D}/{_M}/{_Y}(?:$|[T ])",
    "MM/DD/YYYY": rf"^\s*{_M}/{_D}/{_Y}(?:$|[T ])",
    "DD.MM.YYYY": rf"^\s*{_D}\.{_M}\.{_Y}(?:$|[T ])",
    "YYYYMMDD": r"^\s*(?P<y>[0-9]{4})(?P<m>[0-9]{2})(?P<d>[0-9]{2})(?:$|[T ])",
}
OUT_OF_RANGE = "\x00out of range"


def date_bin_label(day: dt.date, unit: str) -> str:
    if unit == "year":
        return f"{day.year:04d}"
    if unit == "quarter":
        return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"
    if unit == "month":
        return f"{day.year:04d}-{day.month:02d}"
    return day.isoformat()


def date_bin_labels(lower: dt.date, upper: dt.date, unit: str, *, limit: int) -> list[str] | None:
    """The labels of the bins covering [lower, upper], in order; None past `limit` bins."""
    labels: list[str] = []
    day = lower
    while day <= upper:
        label = date_bin_label(day, unit)
        if not labels or labels[-1] != label:
            labels.append(label)
            if len(labels) > limit:
                return None
        try:
            day = _next_bin_start(day, unit)
        except (ValueError, OverflowError):  # past 9999-12-31
            break
    return labels


def _next_bin_start(day: dt.date, unit: str) -> dt.date:
    if unit == "day":
        return day + dt.timedelta(days=1)
    if unit == "year":
        return dt.date(day.year + 1, 1, 1)
    months = 3 if unit == "quarter" else 1
    first = (day.month - 1) // months * months + months  # 0-based month of the next bin
    return dt.date(day.year + first // 12, first % 12 + 1, 1)


def read_declared(column: pa.ChunkedArray | pa.Array, domain: dict[str, Any]) -> pa.Array:
    """The column as its declaration reads it (see the module docstring)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    codes = [str(c) for c in domain.get("missing_codes") or []]
    date = domain.get("date") or {}
    if date:
        text = _as_text(column)
        if codes:
            text = _null_where(text, pc.is_in(pc.utf8_trim_whitespace(text), pa.array(codes)))
        return _date_labels(text, date)
    if domain.get("kind") == "numeric":
        values = numeric_values(column)
        if codes:
            numbers = pa.array([float(c) for c in codes], type=pa.float64())
            values = _null_where(values, pc.is_in(values, numbers))
        return values
    if codes:
        text = pc.utf8_trim_whitespace(_as_text(column))
        column = _null_where(column, pc.is_in(text, pa.array(codes)))
    return column


def numeric_values(column: pa.Array) -> pa.Array:
    """float64 values; unreadable and non-finite cells are null."""
    if _stored_as_number(column.type):
        values = as_float64(column)
    else:
        text = _as_text(column)
        ok = pc.match_substring_regex(text, FLOAT_PATTERN)
        cleaned = pc.replace_substring_regex(pc.utf8_trim_whitespace(text), r"^\+", "")
        values = pc.cast(pc.if_else(ok, cleaned, pa.scalar(None, pa.string())), pa.float64())
    return _null_where(values, pc.invert(pc.is_finite(values)))


def _stored_as_number(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def as_float64(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Numbers as float64, each the nearest float64 to the stored value; never raises.

    pyarrow's default (safe) cast refuses an integer beyond 2**53 (int64 2**53 + 1,
    2**63 - 1): one person's value would decide whether a release computes. The
    unsafe cast rounds it to the nearest float64 instead, which is what every use
    here wants: the value is then clipped to public bounds, binned, or compared with
    public candidates. Rounding to nearest is monotone, so against a bound, bin edge or
    candidate c (a float64) fl(v) > c only if v > c, and fl(v) < c only if v < c: a value
    past a bound is clipped to exactly that bound (2**63 - 1 becomes the upper bound,
    never a wrapped negative). Only a value beyond 2**53 that rounds onto c itself, or
    that lies inside bounds reaching past 2**53, differs from its true reading, by its
    rounding (at most half a float64 step, within half the grid step such bounds need).
    Floats pass unchanged (NaN and +-inf included: `numeric_values` makes them missing).
    """
    if column.type == pa.float64():
        return column
    return pc.cast(column, pa.float64(), safe=False)


def _as_text(column: pa.Array) -> pa.Array:
    return column if pa.types.is_string(column.type) else pc.cast(column, pa.string())


def _null_where(array: pa.Array, mask: pa.Array) -> pa.Array:
    mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return array
    return pc.if_else(mask, pa.scalar(None, array.type), array)


def _date_labels(text: pa.Array, date: dict[str, Any]) -> pa.Array:
    parts = pc.extract_regex(text, DATE_FORMATS[date.get("format") or "YYYY-MM-DD"])
    fields = parts.type.names
    y, m, d = (pc.struct_field(parts, [fields.index(k)]) for k in "ymd")
    iso = pc.binary_join_element_wise(
        y, pc.utf8_lpad(m, width=2, padding="0"), pc.utf8_lpad(d, width=2, padding="0"), "-"
    )
    stamps = pc.strptime(iso, format="%Y-%m-%d", unit="s", error_is_null=True)
    # strptime rolls 2024-02-30 over to March: such a day is unreadable
    real = pc.and_(
        pc.equal(pc.day(stamps), pc.cast(d, pa.int64())),
        pc.equal(pc.month(stamps), pc.cast(m, pa.int64())),
    )
    stamps = _null_where(stamps, pc.invert(real))
    unit = date["bin"]
    if unit == "quarter":
        labels = pc.binary_join_element_wise(
            pc.strftime(stamps, format="%Y"), pc.cast(pc.quarter(stamps), pa.string()), "-Q"
        )
    else:
        layout = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}[unit]
        labels = pc.strftime(stamps, format=layout)
    lower = pa.scalar(dt.datetime.fromisoformat(date["lower"]), pa.timestamp("s"))
    upper = pa.scalar(dt.datetime.fromisoformat(date["upper"]), pa.timestamp("s"))
    outside = pc.or_(pc.less(stamps, lower), pc.greater(stamps, upper))
    return pc.if_else(pc.fill_null(outside, False), pa.scalar(OUT_OF_RANGE), labels)
