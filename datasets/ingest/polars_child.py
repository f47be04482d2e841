"""The fast CSV conversion's child process: Polars parses the CSV and writes the Parquet,
and the rows are checked and profiled on their way (datasets.ingest.batch_profile).

Started by `datasets.ingest.fast` as `python -P polars_child.py` (a script, not a
module: it imports Polars, pyarrow, numpy and batch_profile.py beside it, no Django, and
is usually started ahead, idle on its stdin, so that none of this is waited for; and
Polars' buffers, some 200 MB, go back to the system when it exits instead of staying in
a long-lived worker). It reads one job (JSON) on stdin (then, for a copy the worker
writes in parts while this parses them, each part's name as it is complete, and "end"),
writes the Parquet at `destination`, and answers one line of JSON on stdout:
{"ok": true, "states": [...]} (each column's profile state: private, for the worker
only), or {"ok": false, "why": "..."} when Polars refused the file or the checks
cannot vouch for what it read. Nothing here decides a refusal and no value is ever
printed elsewhere: the parent then reads the file the careful way, which refuses it
with its reason or reads it.

The rows stream from the CSV scan in batches, each profiled in file order (as the
careful reader profiles its blocks) and handed on to Polars' Parquet writer: nothing
is read back. Written as pyarrow's reader writes: the declared types,
snappy, the same row groups, pyarrow's own ARROW:schema (text reads back as string, not
large_string), with statistics.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import signal
import sys
from pathlib import Path

import polars as pl
from polars.io.plugins import register_io_source


def _load_profile():
    """batch_profile.py beside this file, without the package (whose __init__ loads Django)."""
    spec = importlib.util.spec_from_file_location(
        "batch_profile", Path(__file__).with_name("batch_profile.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


batch_profile = _load_profile()

POLARS = {"integer": pl.Int64, "float": pl.Float64, "string": pl.String}


def main() -> None:
    _die_with_parent()
    _warm_up()
    job = json.loads(sys.stdin.readline())
    profiler = batch_profile.Profiler(job["names"], job["kinds"], job["delimiter"], job["limits"])
    sources: list[str] = []  # the file, or its parts as they were read
    try:
        convert(job, profiler, sources)
        states = profiler.finish(sources, job["header"], job["delimiter"])
        answer = {"ok": True, "states": states}
    except batch_profile.NotOk as exc:
        answer = {"ok": False, "why": str(exc)}  # our own words, never a value
    except Exception as exc:  # noqa: BLE001 - any Polars refusal: the careful path decides
        answer = {"ok": False, "why": type(exc).__name__}  # its text may quote a cell
        if profiler.failure is not None:  # raised while profiling, surfaced by Polars
            answer["why"] = str(profiler.failure)
    answer["peak_rss_mb"] = _peak_rss_mb()
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    os._exit(0)  # no teardown: the system takes back Polars' memory at once


def _warm_up() -> None:
    """Convert and profile a tiny file while idle: Polars imports the parts of itself a
    scan, a batched read and a sink use on their first call, and pyarrow builds each
    compute function's wrapper (some 40 ms in all), which the first job need not wait for."""
    import base64
    import tempfile

    import pyarrow as pa

    limits = {"k": 1, "track_limit": 10, "track_bytes": 100, "mostly_numeric": 0.5}
    schema = pa.schema([("a", pa.int64()), ("b", pa.float64()), ("c", pa.string())])
    with tempfile.TemporaryDirectory(prefix="dpportal-warm-") as folder:
        source = Path(folder) / "warm.csv"
        source.write_bytes(b"a,b,c\n1,0.5,x\n2,,7\n")
        job = {
            "source": str(source), "destination": str(Path(folder) / "warm.parquet"),
            "names": ["a", "b", "c"], "kinds": ["integer", "float", "string"],
            "header": True, "delimiter": ",", "quote": '"', "row_group_rows": 2,
            "batch_rows": 1, "limits": {**limits, "float_pattern": "^7$"},
            "arrow_schema": base64.b64encode(schema.serialize().to_pybytes()).decode(),
        }  # fmt: skip
        profiler = batch_profile.Profiler(job["names"], job["kinds"], ",", job["limits"])
        try:
            convert(job, profiler, sources := [])
            profiler.finish(sources, True, ",")
        except Exception:  # noqa: BLE001, S110 - a warm-up only: the job reports its own errors
            pass


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


def convert(job: dict, profiler, sources: list[str]) -> None:
    names, kinds = job["names"], job["kinds"]
    schema = {name: POLARS[kind] for name, kind in zip(names, kinds, strict=True)}

    def scan(source: str, header: bool) -> pl.LazyFrame:
        return pl.scan_csv(
            source,
            has_header=False,
            skip_lines=1 if header else 0,
            separator=job["delimiter"],
            quote_char=job["quote"],
            schema=schema,
            infer_schema=False,
            encoding="utf8",
            truncate_ragged_lines=False,
            raise_if_empty=False,
        )

    def batches(*_ignored) -> object:  # every column, every row: nothing to push down
        for source in _sources(job):
            sources.append(source)
            frame = scan(source, job["header"] and len(sources) == 1)
            for batch in frame.collect_batches(chunk_size=job["batch_rows"]):
                profiler.add(batch)
                yield batch

    register_io_source(batches, schema=schema).sink_parquet(
        job["destination"],
        compression="snappy",
        row_group_size=job["row_group_rows"],
        statistics=True,
        metadata={"ARROW:schema": job["arrow_schema"]},  # string, as pyarrow writes it
    )


def _sources(job: dict):
    """The file; or, for a copy the worker is still writing in parts (job["parts"]), each
    part as the worker names it on stdin, until "end" ("abort", or stdin closed without
    "end": the copy failed, and what was read cannot be vouched for)."""
    if not job.get("parts"):
        yield job["source"]
        return
    for line in sys.stdin:
        name = line.strip()
        if name == "end":
            return
        if not name or name == "abort":
            break
        yield name
    raise batch_profile.NotOk("the copy did not end")


if __name__ == "__main__":
    main()
