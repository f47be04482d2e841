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
is read back. Written as pyarrow's reader writes: the declared types, snappy, the same
row groups, pyarrow's own ARROW:schema (text reads back as string, not large_string),
with statistics.

A text column whose first rows repeat a few values is parsed as codes
(`coded_columns`): counting codes is about four times cheaper than counting texts,
and the Parquet written is the same; one that then holds more values than the
profile tracks is parsed again as text, from the start.
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
    feed = Sources(job)
    profiler = None
    try:
        coded = set(coded_columns(job, feed.first()))
        while True:
            profiler = batch_profile.Profiler(
                job["names"], job["kinds"], job["delimiter"], job["limits"], frozenset(coded)
            )
            try:
                convert(job, profiler, feed)
                break
            except Exception:
                if profiler.widen is None:
                    raise
                coded.discard(profiler.widen)  # too many values to code: again, as text
                feed.again()
        states = profiler.finish(feed.seen, job["header"], job["delimiter"])
        answer = {"ok": True, "states": states, "coded": sorted(coded)}  # names only
    except batch_profile.NotOk as exc:
        answer = {"ok": False, "why": str(exc)}  # our own words, never a value
    except Exception as exc:  # noqa: BLE001 - any Polars refusal: the careful path decides
        answer = {"ok": False, "why": type(exc).__name__}  # its text may quote a cell
        if profiler is not None and profiler.failure is not None:  # surfaced by Polars
            answer["why"] = str(profiler.failure)
    answer["peak_rss_mb"] = _peak_rss_mb()
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    os._exit(0)  # no teardown: the system takes back Polars' memory at once


#: `coded_columns`: the rows read ahead (at most, and within HEAD_BYTES), and the
#: most distinct texts among them (and at most one per CODED_SHARE rows) for a text
#: column to be parsed as codes
HEAD_ROWS = 4096
HEAD_BYTES = 1 << 18
CODED_MAX = 256
CODED_SHARE = 16


def coded_columns(job: dict, first: str | None) -> list[str]:
    """The text columns whose first HEAD_ROWS rows repeat a few values: Polars parses
    them as codes (`batch_profile.Profiler`). A column that turns out to hold more than
    the profile tracks is parsed again as text (`batch_profile.Widen`), so a wrong
    guess costs time, never a different result. The rows are the whole lines of the
    file's first HEAD_BYTES (a scan would parse a first chunk of megabytes)."""
    texts = [n for n, kind in zip(job["names"], job["kinds"], strict=True) if kind == "string"]
    if not texts or first is None:
        return []
    try:
        with open(first, "rb") as handle:
            head = handle.read(HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1]
        rows = _scan(job, head, job["header"], dict.fromkeys(job["names"], pl.String))
        rows = rows.head(HEAD_ROWS).select(texts).collect()
    except Exception:  # noqa: BLE001 - the conversion itself reports the file's faults
        return []
    if rows.height < CODED_SHARE:
        return []
    distinct = {n: rows.get_column(n).n_unique() for n in texts}
    return [n for n in texts if distinct[n] <= min(CODED_MAX, rows.height // CODED_SHARE)]


class Sources:
    """The file, or the parts of a copy as the worker names them on stdin (job["parts"])
    until "end"; `again` has the next pass read those seen so far first ("abort", or
    stdin closed without "end": the copy failed, and what was read cannot be vouched
    for)."""

    def __init__(self, job: dict) -> None:
        parts = bool(job.get("parts"))
        self.seen: list[str] = [] if parts else [job["source"]]
        self.ended = not parts
        self.read = 0  # of `seen`, in this pass

    def first(self) -> str | None:
        if not self.seen:
            self._next()
        return self.seen[0] if self.seen else None

    def again(self) -> None:
        self.read = 0

    def __iter__(self):
        while True:
            if self.read == len(self.seen) and not self.ended:
                self._next()
            if self.read == len(self.seen):
                return
            self.read += 1
            yield self.seen[self.read - 1]

    def _next(self) -> None:
        line = sys.stdin.readline()
        name = line.strip()
        if name == "end":
            self.ended = True
        elif not name or name == "abort":
            raise batch_profile.NotOk("the copy did not end")
        else:
            self.seen.append(name)


def _warm_up() -> None:
    """Convert and profile a tiny file while idle: Polars imports the parts of itself a
    scan, a batched read and a sink use on their first call, and pyarrow builds each
    compute function's wrapper (some 40 ms in all), which the first job need not wait for."""
    import base64
    import tempfile

    import pyarrow as pa

    limits = {"k": 1, "track_limit": 10, "track_bytes": 100, "mostly_numeric": 0.5}
    names = ["a", "b", "c", "d"]
    kinds = [pa.int64(), pa.float64(), pa.string(), pa.string()]
    schema = pa.schema(list(zip(names, kinds, strict=True)))
    with tempfile.TemporaryDirectory(prefix="dpportal-warm-") as folder:
        source = Path(folder) / "warm.csv"  # c repeats a value (coded), d does not (text)
        source.write_text("a,b,c,d\n" + "".join(f"{i},0.5,x,{i}\n" for i in range(32)))
        job = {
            "source": str(source), "destination": str(Path(folder) / "warm.parquet"),
            "names": names, "kinds": ["integer", "float", "string", "string"],
            "header": True, "delimiter": ",", "quote": '"', "row_group_rows": 2,
            "batch_rows": 1, "limits": {**limits, "float_pattern": "^7$"},
            "arrow_schema": base64.b64encode(schema.serialize().to_pybytes()).decode(),
        }  # fmt: skip
        feed = Sources(job)
        coded = frozenset(coded_columns(job, feed.first()))
        profiler = batch_profile.Profiler(names, job["kinds"], ",", job["limits"], coded)
        try:
            convert(job, profiler, feed)
            profiler.finish(feed.seen, True, ",")
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


def _scan(job: dict, source: str | bytes, header: bool, schema: dict) -> pl.LazyFrame:
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


def convert(job: dict, profiler, feed: Sources) -> None:
    names, kinds = job["names"], job["kinds"]
    schema = {name: POLARS[kind] for name, kind in zip(names, kinds, strict=True)}
    # each coded column its own categories: its codes are its values' alone
    parsed = {
        name: pl.Categorical(pl.Categories.random()) if name in profiler.coded else kind
        for name, kind in schema.items()
    }

    def batches(*_ignored) -> object:  # every column, every row: nothing to push down
        for index, source in enumerate(feed):
            frame = _scan(job, source, job["header"] and index == 0, parsed)
            for batch in frame.collect_batches(chunk_size=job["batch_rows"]):
                profiler.add(batch)
                yield batch

    register_io_source(batches, schema=parsed).sink_parquet(
        job["destination"],
        compression="snappy",
        row_group_size=job["row_group_rows"],
        statistics=True,
        metadata={"ARROW:schema": job["arrow_schema"]},  # string, as pyarrow writes it
    )


if __name__ == "__main__":
    main()
