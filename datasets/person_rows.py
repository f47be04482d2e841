"""The person-rows copy: a dataset's Parquet with each row's person row count beside it.

A person-level privacy unit keeps at most L rows per person. How many rows each
person has does not depend on the release, so it is counted ONCE per dataset and
ID column (datasets.services.person_rows, run by a worker after the owner
confirms the unit), and a release then reads this copy instead of grouping every
row by person again (releases.compute.person_rows).

The copy holds every stored column as read from the dataset (same names, same
types: checked after writing) and three more:

- `N`: the person's number of rows (NULL for a row without an ID);
- `PID`: a number per person, ordered by N (people with the same N in no set
  order); the rows are written in (PID, ROW) order, so one person's rows are
  adjacent and in row order, and the rows of people with more than L rows are
  one contiguous run (for any L), before the rows without an ID (no N, no PID);
- `ROW`: the row's number in the dataset, the same number the release computation
  gives it without this copy (its tie-break).

It is as private as the dataset: nothing of it is shown, logged or returned. It
lives in dpportal's own storage beside the dataset's Parquet
(`datasets/<id>/person_rows.parquet`, so it is deleted with the dataset), also
for a dataset registered in place (whose location is never written). Only on the
local disk: DuckDB, the only reader of the copy, reads the local disk only.

Freshness: the file's key-value metadata names the ID column and the source it
was made from (the stored Parquet's name and size, or the registered files'
paths and sizes); a release uses the copy only when both match its frozen spec.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from datasets import storage
from datasets.private_files import private_file, private_folder

NAME = "person_rows.parquet"
N, PID, ROW = "__dpportal_n", "__dpportal_pid", "__dpportal_row"
EXTRA = (N, PID, ROW)
VERSION = 1
META_KEY = b"dpportal_person_rows"
ROW_GROUP_SIZE = 122_880
#: the most threads a build uses, whatever it is given: at 100M rows (80M people) the
#: join of every row with its person's count ran out of a 192 MB limit on two threads
#: (allocations DuckDB cannot spill); on one, join and sort fit (DuckDB's peak 280 MB)
BUILD_THREADS = 1


def stored_name(dataset_id: int) -> str:
    return f"{storage.dataset_prefix(dataset_id)}/{NAME}"


def local_path(dataset_id: int) -> Path | None:
    """Where the copy of a dataset lives, or None when the storage is not the local disk."""
    if storage.is_remote():
        return None
    return Path(storage.filesystem_and_path(stored_name(dataset_id))[1])


def source_identity(*, parquet_file: str, external: dict[str, Any] | None) -> dict[str, Any]:
    """What the copy was made from: the registered files (path and size) or the stored
    Parquet's name and size. A release's spec gives the same from its frozen fields."""
    if external:
        return {"files": [[f["path"], int(f["size"])] for f in external["files"]]}
    _, path = storage.filesystem_and_path(parquet_file)
    return {"parquet_file": parquet_file, "size": Path(path).stat().st_size}


def fresh_path(*, dataset_id: int | None, id_column: str, identity: dict[str, Any]) -> str | None:
    """The local path of the dataset's copy if it was made for this ID column from this
    source; None otherwise (no copy, a stale one, or storage that is not local)."""
    path = local_path(dataset_id) if dataset_id else None
    if path is None or not path.is_file():
        return None
    try:
        meta = json.loads((pq.read_metadata(path).metadata or {}).get(META_KEY, b"null"))
    except (OSError, ValueError):
        return None
    expected = {"version": VERSION, "id_column": id_column, "source": identity}
    return str(path) if meta == expected else None


def build(
    *,
    paths: list[str],
    id_column: str,
    identity: dict[str, Any],
    target: Path,
    memory_mb: int,
    threads: int,
) -> bool:
    """Write the copy of the local Parquet `paths` to `target` (atomically: a temporary
    file renamed into place). False, and nothing written, when the dataset's columns
    cannot be copied faithfully (a name taken by the extra columns, a type not kept)."""
    private_folder(target.parent)
    spill = tempfile.mkdtemp(prefix="dpportal-person-rows-")
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        con = duckdb.connect(
            config={
                "threads": min(threads, BUILD_THREADS),
                "memory_limit": f"{memory_mb}MB",
                "temp_directory": spill,
                "preserve_insertion_order": False,
            }
        )
        try:
            made = _write(con, paths, id_column, identity, partial, Path(spill))
        finally:
            con.close()
        if made:
            private_file(partial)
            os.replace(partial, target)
        return made
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)


def _text(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _write(
    con, paths: list[str], id_column: str, identity: dict[str, Any], out: Path, spill: Path
) -> bool:
    """Two statements, each within the memory limit: the rows with their person's count
    (a join) into a private temporary file, then that file sorted into `out`. As one
    statement (join feeding the sort) it needed 192 MB with two threads, and failed
    below; apart, each spills and fits in 128 MB (10M rows, 7.7M people)."""
    files = ", ".join(_text(p) for p in paths)
    read = f"read_parquet([{files}], file_row_number = true)"
    described = con.execute(f"DESCRIBE SELECT * FROM read_parquet([{files}])").fetchall()  # noqa: S608 - literals quoted
    columns = [(name, kind) for name, kind, *_ in described]
    if any(name in EXTRA or name == "file_row_number" for name, _ in columns):
        return False
    person = _ident(id_column)
    # the same row number releases.compute.duckdb_engine gives a row without the copy
    row = "file_row_number" if len(paths) == 1 else "(file_index::BIGINT << 40) + file_row_number"
    stored = ", ".join(f"s.{_ident(name)}" for name, _ in columns)
    meta = json.dumps({"version": VERSION, "id_column": id_column, "source": identity})
    joined = _text(str(spill / "joined.parquet"))
    con.execute(
        f"COPY (SELECT {stored}, c.n AS {N}, c.pid AS {PID}, {row} AS {ROW} "  # noqa: S608 - names quoted, literals quoted
        f"FROM {read} AS s LEFT JOIN ("
        f"SELECT {person} AS person, count(*) AS n, row_number() OVER (ORDER BY count(*)) AS pid "
        f"FROM read_parquet([{files}]) WHERE {person} IS NOT NULL GROUP BY {person}"
        f") AS c ON c.person = s.{person}) TO {joined} (FORMAT parquet)"
    )
    con.execute(
        f"COPY (SELECT * FROM read_parquet({joined}) ORDER BY {PID} NULLS LAST, {ROW}) "  # noqa: S608 - names quoted, literals quoted
        f"TO {_text(str(out))} (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_SIZE}, "
        f"KV_METADATA {{{META_KEY.decode()}: {_text(meta)}}})"
    )
    copied = con.execute(f"DESCRIBE SELECT * FROM read_parquet({_text(str(out))})").fetchall()  # noqa: S608 - literals quoted
    return [(name, kind) for name, kind, *_ in copied[: len(columns)]] == columns
