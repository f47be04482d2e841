"""The private per-column profile: suggestions for the owners, never published.

What it may hold is only what an owner needs to declare a column, and nothing
that is an exact aggregate of the data:

- `type`: the suggested type (integer, float, string);
- `values`: frequent values, each seen in at least SUGGEST_MIN_ROWS rows, at most
  SUGGEST_MAX_VALUES of them (the most frequent), listed in value order. Rare
  values are never suggested: copied into a public declaration, a category that
  few rows have reveals that someone has it. Float columns get none (they cannot
  be categorical). No count is kept, and the threshold is shown nowhere;
- `more_values`: whether the column holds values that are not suggested;
- `range` (numeric): [lo, hi] rounded outward to a power of ten below its width, from the
  SUGGEST_MIN_ROWS-th smallest and largest values, so that no single extreme row
  moves it; None when there are too few values;
- `unreadable` (numeric): whether some cells could not be read as numbers (a
  yes/no, never how many);
- `value_labels` (Stata and SPSS files only): [[code, label], ...], the labels the
  file itself declares for the column's codes: metadata written by whoever made the
  file, not counted from the rows, so every declared code is listed. A suggested
  declaration of categories; nothing is public until the owner confirms it.
- `unreadable_share`: for a numeric column, and for a text column whose cells are
  mostly numbers (which the owner may declare numeric, the rest counting as
  missing), the share of its non-empty cells that do not read as finite numbers,
  rounded to a whole percent (never 0 or 1 when some are and some are not), as
  text ("0.14"); never a count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

import pyarrow as pa
import pyarrow.compute as pc

from datasets.ingest import batch_profile
from datasets.ingest.common import FLOAT, FLOAT_PATTERN, INTEGER, STRING

#: a value is suggested only if at least this many rows hold it (never shown to anyone)
SUGGEST_MIN_ROWS = 50
#: at most this many values are suggested per column (the most frequent ones)
SUGGEST_MAX_VALUES = 50
#: values are counted only while a column has at most this many distinct ones
TRACK_LIMIT = 1000
#: ... and while their keys hold at most this many UTF-8 bytes together (long distinct
#: texts are no categories, and a thousand of a megabyte each would hold a gigabyte).
#: Both limits are on the whole column's distinct values, so how the rows were split
#: into batches never changes the outcome.
TRACK_BYTES = 1 << 20

#: a text column's unreadable share is kept when at least this share of its cells are numbers
MOSTLY_NUMERIC = 0.5

PROFILE_KEYS = frozenset(
    {"type", "values", "more_values", "range", "unreadable", "unreadable_share", "value_labels"}
)


@dataclass
class ColumnProfile:
    """Private suggestions for one column (owners only, never published).

    The counts below live only in the ingest's memory; `to_dict` is what is stored.
    """

    name: str
    position: int
    suggested_type: str
    counts: dict[str, int] | None = field(default_factory=dict)  # None: too many values
    lows: list[float] = field(default_factory=list)  # the smallest values seen (sorted)
    highs: list[float] = field(default_factory=list)  # the largest values seen (sorted)
    unparseable: int = 0
    cells: int = 0  # non-empty cells (numeric columns: the readable ones)
    readable: int | None = 0  # text columns: cells that read as finite numbers; None: few
    value_labels: list[list[str]] | None = None  # from the file's metadata, not the rows
    counted_bytes: int = 0  # UTF-8 bytes of the keys of `counts` (0 once it is None)

    def __post_init__(self) -> None:
        if self.suggested_type == FLOAT:
            self.counts = None  # decimal numbers are declared numeric, never as categories

    def to_dict(self) -> dict:
        values = self.suggested_values()
        profile: dict = {
            "type": self.suggested_type,
            "values": values,
            "more_values": self.counts is None or len(self.counts) > len(values),
        }
        profile["range"] = None
        if self.suggested_type in (INTEGER, FLOAT):
            if len(self.lows) >= SUGGEST_MIN_ROWS and len(self.highs) >= SUGGEST_MIN_ROWS:
                lo, hi = self.lows[SUGGEST_MIN_ROWS - 1], self.highs[-SUGGEST_MIN_ROWS]
                profile["range"] = round_outward(min(lo, hi), max(lo, hi))
            profile["unreadable"] = self.unparseable > 0
            profile["unreadable_share"] = rounded_share(
                self.unparseable, self.cells + self.unparseable
            )
        elif self.readable is not None and self.cells:
            if self.readable >= MOSTLY_NUMERIC * self.cells:
                profile["unreadable_share"] = rounded_share(self.cells - self.readable, self.cells)
        if self.value_labels:
            profile["value_labels"] = self.value_labels
        return profile

    def suggested_values(self) -> list[str]:
        if not self.counts:
            return []
        frequent = [(n, v) for v, n in self.counts.items() if n >= SUGGEST_MIN_ROWS]
        frequent.sort(key=lambda item: (-item[0], item[1]))
        return _sorted_values([v for _, v in frequent[:SUGGEST_MAX_VALUES]], self.suggested_type)


def rounded_share(part: int, whole: int) -> str:
    """part / whole to a whole percent, as text; 0 or 1 only when exactly so."""
    if whole <= 0 or part <= 0:
        return "0"
    if part >= whole:
        return "1"
    share = (Decimal(part) / Decimal(whole)).quantize(Decimal("0.01"), ROUND_HALF_EVEN)
    return str(min(max(share, Decimal("0.01")), Decimal("0.99")))


def _sorted_values(values: list[str], kind: str) -> list[str]:
    if kind in (INTEGER, FLOAT):
        return sorted(values, key=float)
    return sorted(values)


def round_outward(lo: float, hi: float) -> list[str]:
    """[lo, hi] widened to multiples of the power of ten below its width (hi - lo), or
    below max(|lo|, |hi|) when it has none.

    E.g. [18, 93] -> [10, 100]; [0, 1234567.8] -> [0, 2000000]; [-3.2, 0.5] -> [-4, 1];
    years [1972, 2018] -> [1970, 2020] (by the width; by the magnitude: 1000 to 3000).
    """
    magnitude = max(abs(lo), abs(hi))
    if magnitude == 0 or not math.isfinite(magnitude):
        return ["0", "1"] if magnitude == 0 else ["", ""]
    width = hi - lo
    scale = width if width > 0 and math.isfinite(width) else magnitude
    step = Decimal(10) ** math.floor(math.log10(scale))
    nice_lo = (Decimal(repr(lo)) / step).to_integral_value(rounding="ROUND_FLOOR") * step
    nice_hi = (Decimal(repr(hi)) / step).to_integral_value(rounding="ROUND_CEILING") * step
    if nice_lo == nice_hi:
        nice_hi += step
    return [_plain(nice_lo), _plain(nice_hi)]


def _plain(number: Decimal) -> str:
    text = format(number, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def profile_update(profile: ColumnProfile, array: pa.Array) -> None:
    present = array.drop_null()
    profile.cells += len(present)
    if profile.suggested_type == STRING and profile.readable is not None and len(present):
        _count_readable(profile, present)
    if profile.counts is not None and len(present):
        counted = pc.value_counts(present)
        distinct = counted.field("values")
        if len(distinct) > TRACK_LIMIT or _text_bytes(distinct) > TRACK_BYTES:
            profile.counts, profile.counted_bytes = None, 0
        else:
            values = distinct.to_pylist()
            for value, n in zip(values, counted.field("counts").to_pylist(), strict=True):
                key = _as_text(value)
                if key not in profile.counts:
                    profile.counted_bytes += len(key.encode())
                profile.counts[key] = profile.counts.get(key, 0) + n
            if len(profile.counts) > TRACK_LIMIT or profile.counted_bytes > TRACK_BYTES:
                profile.counts, profile.counted_bytes = None, 0
    if profile.suggested_type in (INTEGER, FLOAT) and len(present):
        k = SUGGEST_MIN_ROWS
        low = present.take(pc.select_k_unstable(present, k=k, sort_keys=[("", "ascending")]))
        high = present.take(pc.select_k_unstable(present, k=k, sort_keys=[("", "descending")]))
        profile.lows = sorted(profile.lows + low.to_pylist())[:k]
        profile.highs = sorted(profile.highs + high.to_pylist())[-k:]


def _text_bytes(values: pa.Array) -> int:
    """The bytes of a text array's values (0 for numbers, whose keys are short)."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return pc.sum(pc.binary_length(values)).as_py() or 0
    return 0


def _count_readable(profile: ColumnProfile, present: pa.Array) -> None:
    """Count a text column's cells that read as finite numbers, while most of them do."""
    text = present if pa.types.is_string(present.type) else pc.cast(present, pa.string())
    profile.readable += pc.sum(reads_as_finite(text)).as_py() or 0
    if profile.readable < MOSTLY_NUMERIC * profile.cells:
        profile.readable = None  # a text column: stop counting (and spend no more time)


def reads_as_finite(text: pa.Array) -> pa.BooleanArray:
    """For each text (no nulls), whether it reads as a finite number (FLOAT_PATTERN,
    blanks around and a leading + allowed): the fast path's own test, one definition."""
    return batch_profile.reads_as_finite(text, FLOAT_PATTERN)


def profile_limits() -> dict:
    """What the fast path's child needs to keep the states this module keeps
    (datasets.ingest.batch_profile, which imports nothing of the project)."""
    return {
        "k": SUGGEST_MIN_ROWS,
        "track_limit": TRACK_LIMIT,
        "track_bytes": TRACK_BYTES,
        "mostly_numeric": MOSTLY_NUMERIC,
        "float_pattern": FLOAT_PATTERN,
    }


def _as_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)
