"""Column types decided from every value of a column, not from its first rows.

A reader that types a column from a sample and then meets a wider value later (a
decimal after ten thousand whole numbers) must not make that value missing. Two
helpers let a format reader decide from the whole column:

- `TextTally` counts, batch by batch, what the text cells of each column look like
  (for formats whose cells arrive as text, such as spreadsheets), and `types()`
  applies the CSV reader's rule (datasets.ingest.reader._infer_types) to the counts
  of the whole column;
- `wider(a, b)` is the narrower type that holds both (integer < float < string), for
  readers that see typed batches and keep the widest type seen.

`unreadable_warnings(profiles)` turns the cells a numeric column could not read (made
missing, counted in the profile) into upload warnings that name the column and count.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from django.utils.translation import gettext_noop

from datasets.ingest.common import (
    FLOAT,
    FLOAT_PATTERN,
    INT_PATTERN,
    INTEGER,
    LEADING_ZERO_PATTERN,
    STRING,
)
from datasets.ingest.profile import ColumnProfile
from dpportal.messages import Record, plural, record

#: a column is numeric when this share of its non-empty cells read as numbers (as CSV)
NUMERIC_SHARE = 0.9
_ORDER = {INTEGER: 0, FLOAT: 1, STRING: 2}


def wider(a: str, b: str) -> str:
    """The narrower of the column types that holds every value of `a` and of `b`."""
    return a if _ORDER[a] >= _ORDER[b] else b


@dataclass
class _Counts:
    cells: int = 0  # non-null cells
    integers: int = 0  # cells that read as whole numbers
    numbers: int = 0  # cells that read as numbers (whole or not)
    leading_zero: bool = False  # some cell is a number written with a leading zero


class TextTally:
    """What the text cells of each column look like, summed over every batch."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.counts = {name: _Counts() for name in names}

    def update(self, table: pa.Table) -> None:
        """Count one batch (a table of string columns named as `names`)."""
        for name in self.names:
            values = table.column(name).drop_null()
            if len(values) == 0:
                continue
            counts = self.counts[name]
            counts.cells += len(values)
            counts.integers += pc.sum(pc.match_substring_regex(values, INT_PATTERN)).as_py() or 0
            counts.numbers += pc.sum(pc.match_substring_regex(values, FLOAT_PATTERN)).as_py() or 0
            if not counts.leading_zero:
                zeros = pc.match_substring_regex(values, LEADING_ZERO_PATTERN)
                counts.leading_zero = bool(pc.any(zeros).as_py())

    def types(self) -> dict[str, str]:
        """Each column's type from all its cells, by the CSV reader's rule: codes with
        leading zeros stay text; a column whose cells are at least NUMERIC_SHARE numbers
        is integer when every number is whole, else float; the rest is text."""
        types = {}
        for name, c in self.counts.items():
            if c.cells == 0:
                types[name] = STRING
            elif c.leading_zero and c.integers == c.numbers:
                types[name] = STRING
            elif c.numbers > 0 and c.numbers >= NUMERIC_SHARE * c.cells:
                types[name] = INTEGER if c.integers == c.numbers else FLOAT
            else:
                types[name] = STRING
        return types


def unreadable_warnings(profiles: list[ColumnProfile]) -> list[Record]:
    """One warning per numeric column with cells that did not read as its type (they are
    stored as missing): the column's name and how many, never the cells themselves."""
    warnings = []
    for profile in profiles:
        if profile.suggested_type == STRING or not profile.unparseable:
            continue
        count = profile.unparseable
        msgid = plural(
            count,
            gettext_noop(
                "Column '%(name)s': %(count)s cell could not be read as a number and is "
                "treated as missing."
            ),
            gettext_noop(
                "Column '%(name)s': %(count)s cells could not be read as numbers and are "
                "treated as missing."
            ),
        )
        warnings.append(record(msgid, name=profile.name, count=f"{count:,}"))
    return warnings
