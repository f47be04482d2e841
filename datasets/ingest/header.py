"""The header line's checks: names, their count and their shape.

A header is refused when it cannot name the columns (blank, too long or repeated
names, more columns than allowed, a line of numbers), and warned about when it looks
like a row of data (names shaped like their columns' values).
"""

from __future__ import annotations

import re

import pyarrow as pa
from django.utils.translation import gettext_noop

from datasets.ingest.common import FLOAT_PATTERN, IngestLimits, IngestRejected
from dpportal.messages import Record, record

MAX_NAME_LENGTH = 200
SHAPED_SHARE = 0.9  # a name looks like data when this share of its column's values share its shape


def header_problem(names: list[str], limits: IngestLimits) -> str | None:
    """'data' when every name is a number (the first line is data), else None."""
    if names and all(re.fullmatch(r"[+-]?[0-9.,]+(e[+-]?[0-9]+)?", n, re.I) for n in names if n):
        return "data" if any(names) else None
    return None


def check_header(names: list[str], limits: IngestLimits) -> None:
    if not names or names == [""]:
        raise IngestRejected(gettext_noop("The file has no header line."))
    if len(names) > limits.max_columns:
        raise IngestRejected(
            gettext_noop("The file has %(count)s columns; at most %(limit)s are allowed."),
            count=len(names),
            limit=limits.max_columns,
        )
    if header_problem(names, limits) == "data":
        raise IngestRejected(
            gettext_noop(
                "The first line looks like data, not a header: it must name every column "
                "(or choose 'the file has no header line')."
            )
        )
    # one sentence per problem, each translated whole (never clauses joined by "; ")
    problems = []
    for position, name in enumerate(names, start=1):
        if not name:
            problems.append(
                record(gettext_noop("Column %(position)s has a blank name."), position=position)
            )
        elif len(name) > MAX_NAME_LENGTH:
            problems.append(
                record(
                    gettext_noop("Column %(position)s's name is longer than %(limit)s characters."),
                    position=position,
                    limit=MAX_NAME_LENGTH,
                )
            )
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name and name in seen:
            problems.append(
                record(
                    gettext_noop("Columns %(first)s and %(second)s have the same name '%(name)s'."),
                    first=seen[name],
                    second=position,
                    name=name,
                )
            )
        seen.setdefault(name, position)
    if problems:
        raise IngestRejected.of(record(gettext_noop("The header is not usable.")), *problems)


def _shape(text: str) -> str:
    """'r12' -> 'a9', '2024-01' -> '9-9', 'AB 7' -> 'a 9': what a value looks like."""
    return re.sub(r"[^\W\d_]+", "a", re.sub(r"\d+", "9", text.strip()))


def header_warnings(names: list[str], table: pa.Table, types: dict[str, str]) -> list[Record]:
    """A warning when the header looks like a row of data (names only by position).

    A name looks like data when it is a number, or when it has digits and is shaped
    like most of its column's values ('r0' above 'r1', 'r2', ...). A header where
    every name is a number is refused outright (see check_header); this catches
    the rest: at least half of the names looking like data.
    """
    suspicious = []
    for position, name in enumerate(names, start=1):
        if re.fullmatch(FLOAT_PATTERN, name):
            suspicious.append(position)
            continue
        shape = _shape(name)
        if "9" not in shape:
            continue
        values = table.column(name).drop_null()
        if len(values) == 0:
            continue
        shapes = [_shape(v) for v in values.slice(0, 1000).to_pylist()]
        if sum(s == shape for s in shapes) >= SHAPED_SHARE * len(shapes):
            suspicious.append(position)
    if not suspicious or 2 * len(suspicious) < len(names):
        return []
    listed = ", ".join(str(p) for p in suspicious[:10]) + (", ..." if len(suspicious) > 10 else "")
    return [
        record(
            gettext_noop(
                "The first line may be data rather than a header: the names of %(n)s of the "
                "%(total)s columns (column %(listed)s) look like values. If the file has no "
                "header line, add one that names every column and upload it again."
            ),
            n=len(suspicious),
            total=len(names),
            listed=listed,
        )
    ]
