"""The fast CSV conversion's child process: Polars parses the CSV and writes the Parquet.

Started by `datasets.ingest.fast` as `python -P polars_child.py` (a script, not a
module: it imports Polars and the standard library only, so it is ready in a tenth of
a second, and Polars' buffers, some 400 MB at 10M rows, go back to the system when it
exits instead of staying in a long-lived worker). It reads one job (JSON) on stdin,
writes the Parquet at `destination`, and answers one line of JSON on stdout:
{"ok": true}, or {"ok": false, "why": "..."} when Polars refused the file. Nothing
here decides a refusal and no value is ever printed: the parent then reads the file
the careful way, which refuses it with its reason or reads it. The parent also checks
what was written (datasets.ingest.parquet_profile) before it keeps it.

Written as pyarrow's reader writes: the declared types, snappy, the same row groups,
pyarrow's own ARROW:schema (text reads back as string, not large_string), with
statistics. A NaN is written as +inf, so that the row groups' statistics show every
value that is not finite (they leave NaN out) and the parent sees it without reading.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

import polars as pl

POLARS = {"integer": pl.Int64, "float": pl.Float64, "string": pl.String}


def main() -> None:
    _die_with_parent()
    job = json.loads(sys.stdin.readline())
    try:
        convert(job)
        answer = {"ok": True}
    except Exception as exc:  # noqa: BLE001 - any Polars refusal: the careful path decides
        answer = {"ok": False, "why": type(exc).__name__}  # its text may quote a cell
    answer["peak_rss_mb"] = _peak_rss_mb()
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    os._exit(0)  # no teardown: the system takes back Polars' memory at once


def _peak_rss_mb() -> float | None:
    """This process's peak resident memory (VmHWM), for the parent's log and bench."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _die_with_parent() -> None:
    """Linux: SIGKILL this process if the worker that started it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def convert(job: dict) -> None:
    names, kinds = job["names"], job["kinds"]
    frame = pl.scan_csv(
        job["source"],
        has_header=False,
        skip_lines=1 if job["header"] else 0,
        separator=job["delimiter"],
        quote_char=job["quote"],
        schema={name: POLARS[kind] for name, kind in zip(names, kinds, strict=True)},
        infer_schema=False,
        encoding="utf8",
        truncate_ragged_lines=False,
        raise_if_empty=False,
    )
    frame.select([_written(n, k) for n, k in zip(names, kinds, strict=True)]).sink_parquet(
        job["destination"],
        compression="snappy",
        row_group_size=job["row_group_rows"],
        statistics=True,
        metadata={"ARROW:schema": job["arrow_schema"]},  # string, as pyarrow writes it
    )


def _written(name: str, kind: str) -> pl.Expr:
    """The column as written: a NaN becomes +inf, so that the row groups' statistics
    show every value that is not finite (they leave NaN out)."""
    column = pl.col(name)
    if kind == "float":
        return pl.when(column.is_nan()).then(float("inf")).otherwise(column).alias(name)
    return column


if __name__ == "__main__":
    main()
