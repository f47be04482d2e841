"""The numpy readers' aggregate of a statistic of the categories found in the data.

Per key (a non-missing value of the column read as declared, as text, cut to
RELEASE_KEYS_MAX_KEY_CHARS characters): the number of distinct persons holding it
among the rows the privacy unit keeps, each person counted in at most
`keys_per_person` of their distinct keys, chosen uniformly at random (a 64-bit key
from the CSPRNG per distinct (person, key) pair, the smallest kept). Without a
person column every row is a person holding one key: the count of rows per key.

Row groups are read one at a time; the (person, key) pairs of the kept rows are
collected (bounded by the dataset's rows) and counted once at the end (`finish`).
This is the oracle of the engines' query (releases.compute.plan.Plan.keys_sql), which
counts the same distinct pairs through integer ids of the texts and chooses a person's
keys by a hash keyed with the release's secret: the same counts wherever the choice is
forced (rows as persons, or keys_per_person at least every person's keys); elsewhere
both choices are uniform, so the totals agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.conf import settings

from dpportal.privacy.rng import uniform_keys


def key_text(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column's values as keys: text, cut to RELEASE_KEYS_MAX_KEY_CHARS (nulls stay)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    text = column if pa.types.is_string(column.type) else pc.cast(column, pa.string())
    return pc.utf8_slice_codeunits(text, 0, int(settings.RELEASE_KEYS_MAX_KEY_CHARS))


@dataclass
class KeyPairs:
    """A partial aggregate: the kept rows' keys, with their persons (None: rows are persons)."""

    keys: list[pa.Array] = field(default_factory=list)
    persons: list[pa.Array] | None = None

    def merge(self, other: KeyPairs) -> KeyPairs:
        persons = None
        if self.persons is not None or other.persons is not None:
            persons = [*(self.persons or []), *(other.persons or [])]
        return KeyPairs(keys=[*self.keys, *other.keys], persons=persons)


def distinct_person_counts(
    keys: pa.Array, persons: pa.Array | None, *, keys_per_person: int
) -> dict[str, int]:
    """{key: distinct persons holding it}, each person in at most `keys_per_person` keys
    chosen uniformly at random; missing keys (and persons) are not counted."""
    if persons is None:
        present = pc.drop_null(keys)
        counts = pc.value_counts(present)
        return {
            str(v): int(n)
            for v, n in zip(
                counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
            )
        }
    keep = pc.and_(pc.is_valid(keys), pc.is_valid(persons))
    table = pa.table({"p": persons, "k": keys}).filter(keep)
    pairs = table.group_by(["p", "k"]).aggregate([])
    n = pairs.num_rows
    if n == 0:
        return {}
    person_codes = pc.dictionary_encode(pairs.column("p")).combine_chunks().indices
    groups = person_codes.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((uniform_keys(n), groups))
    sorted_groups = groups[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(sorted_groups[1:], sorted_groups[:-1], out=starts[1:])
    positions = np.arange(n, dtype=np.int64)
    first = np.maximum.accumulate(np.where(starts, positions, 0))
    chosen = order[(positions - first) < keys_per_person]
    kept = pairs.column("k").take(pa.array(np.sort(chosen)))
    counts = pc.value_counts(kept)
    return {
        str(v): int(c)
        for v, c in zip(
            counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
        )
    }


@dataclass
class KeysReader:
    """Turns row groups into a keys statistic's true aggregate (memory only)."""

    spec: dict[str, Any]
    id_column: str | None = None
    axes: list = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    @property
    def column_names(self) -> list[str]:
        names = [d["name"] for d in self.spec["columns"]]
        if self.id_column and self.id_column not in names:
            names.append(self.id_column)
        return names

    def empty(self) -> KeyPairs:
        return KeyPairs(persons=[] if self.id_column else None)

    def aggregate(self, table: pa.Table | None, n_rows: int) -> KeyPairs:
        keys = key_text(table.column(self.spec["columns"][0]["name"]))
        if not self.id_column:
            return KeyPairs(keys=[keys])
        persons = table.column(self.id_column).combine_chunks()
        return KeyPairs(keys=[keys], persons=[persons])

    def finish(self, partial: KeyPairs) -> dict[str, int]:
        keys = pa.concat_arrays(partial.keys) if partial.keys else pa.array([], pa.string())
        persons = None
        if partial.persons is not None:
            persons = (
                pa.concat_arrays([p.cast(partial.persons[0].type) for p in partial.persons])
                if partial.persons
                else pa.array([], pa.string())
            )
        return distinct_person_counts(
            keys, persons, keys_per_person=int(self.spec["keys_per_person"])
        )
