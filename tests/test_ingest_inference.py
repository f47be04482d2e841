"""Type inference from the sample: a column of digits alone is typed without the
patterns, exactly as the patterns would type it."""

from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets.ingest.common import (
    FLOAT,
    FLOAT_PATTERN,
    INT_PATTERN,
    INTEGER,
    LEADING_ZERO_PATTERN,
    STRING,
)
from datasets.ingest.reader import NUMERIC_SHARE, _infer_types


def by_the_patterns(cells: list[str]) -> str:
    """The inference's rule, cell by cell with Python's re."""
    floats = sum(1 for c in cells if re.search(FLOAT_PATTERN, c))
    if floats < NUMERIC_SHARE * len(cells) or floats == 0:
        return STRING
    ints = sum(1 for c in cells if re.search(INT_PATTERN, c))
    if ints == floats and any(re.search(LEADING_ZERO_PATTERN, c) for c in cells):
        return STRING
    return INTEGER if ints == floats else FLOAT


DIGITS = st.text("0123456789", min_size=1, max_size=20)
ODD = st.sampled_from(["1.5", " 7", "x", "-3", "+4", "1e3", "00", "0"])
CELLS = st.lists(st.one_of(DIGITS, DIGITS, DIGITS, ODD), min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(cells=CELLS, repeat=st.integers(1, 40))
def test_digits_are_typed_as_the_patterns_type_them(cells, repeat):
    # repeated cells take the counted (distinct texts) branch, unique ones the per-cell one
    for column in (cells, cells * repeat):
        table = pa.table({"c": pa.array(column, pa.string())})
        assert _infer_types(["c"], table, decimal_comma=False) == {"c": by_the_patterns(column)}


def test_the_cases_that_decide():
    cases = {
        ("12", "7", "0"): INTEGER,
        ("12", "007"): STRING,  # a code keeps its zeros
        ("123456789012345678", "1"): INTEGER,  # 18 digits: still an integer
        ("1234567890123456789", "1"): FLOAT,  # 19: too wide for one
    }
    for cells, expected in cases.items():
        table = pa.table({"c": pa.array(list(cells), pa.string())})
        assert _infer_types(["c"], table, decimal_comma=False) == {"c": expected}, cells
