"""Ingest throughput and memory: dpportal's ingest against the fastest tools doing the same work.

    DEBUG=1 .venv/bin/python bench/ingest.py --rows 10000000 --other-rows 1000000

Cases (each file generated once per run, in a subprocess; every phase runs in its
own subprocess so that each peak RSS (VmHWM) is its own; rounds interleave the
phases; times are medians, peak memory the highest seen):

* csv -- census-like rows (datasets.demo), UTF-8, comma-separated, `--rows` rows:
  dpportal (the real code path, `datasets.services.dataset_ingest` in-process on a
  throwaway test database, all our checks: encoding, NUL bytes, types, profile;
  only the ingest call is timed; a plain UTF-8 file is parsed by Polars in a child
  process, whose peak RSS is printed beside the worker's; as in a worker process that
  has ingested a file before (1,000 rows, not timed), an idle child is ready and the
  libraries' functions are built) next to Polars
  `scan_csv().sink_parquet()`, DuckDB
  `COPY (SELECT * FROM read_csv(...)) TO ... (FORMAT parquet)` and bare pyarrow
  (`csv.open_csv` streamed into a ParquetWriter), all writing snappy as dpportal does
  (Polars' own default is zstd);
* gzip -- the same rows gzip-compressed, `--rows` rows: dpportal next to DuckDB,
  pyarrow (both decompress as they stream) and Polars (which reads a gzip whole in
  memory); the goal is against whichever of them is fastest in the run;
* gb18030 -- the same rows with Chinese region names, semicolon-separated, in
  GB18030, `--other-rows` rows: dpportal (encoding and delimiter given, as the owner
  confirms them) next to pyarrow's CSV reader transcoding GB18030 into Parquet and
  to the file decoded in one go by Python and parsed by Polars (the goal is against
  the faster of the two);
* xlsx -- `--other-rows` rows in one sheet: dpportal next to openpyxl's read-only
  reader alone (every cell's value, nothing written);
* dta -- `--other-rows` rows in Stata 118: dpportal next to pyreadstat's chunked
  reader alone.

Prints seconds, rows/s and peak RSS per phase and the ratios of medians. Goals:
csv <= 1.2x Polars at 10M rows with peak RSS <= 500 MB, flat in rows, and <= 1.3x
below 10M rows (at 1M the ingest's fixed costs, a few tens of milliseconds, weigh more);
gzip <= 1.5x the fastest reader; gb18030 <= 1.3x the fastest transcode-and-parse;
xlsx, dta <= 1.5x the reading library.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this folder comes first on sys.path, and its other benchmarks
# (bench/http.py) would shadow standard modules: take the project root instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(ROOT)


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss it is not inherited across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


CHINESE_REGIONS = ["北京", "上海", "广东", "四川", "浙江", "湖北", "河南", "山东"]


def _timed(run) -> dict:
    started = time.perf_counter()
    run()
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb()}


# --- generating the files ------------------------------------------------------------


def generate(case: str, path: Path, rows: int) -> None:
    from datasets.demo import write_census_csv

    if case == "csv":
        write_census_csv(path, rows=rows)
        return
    if case == "gzip":  # the same CSV, gzip-compressed as it streams out (level 6)
        import gzip
        import shutil

        plain = path.with_suffix("")
        write_census_csv(plain, rows=rows)
        with open(plain, "rb") as source, gzip.open(path, "wb", compresslevel=6) as out:
            shutil.copyfileobj(source, out, 4 << 20)
        plain.unlink()
        return
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    from datasets.demo import CHUNK_ROWS, census_chunk

    rng = np.random.default_rng(2026)
    chunks = (
        census_chunk(rng, rows=min(CHUNK_ROWS, rows - start), first_row=start)
        for start in range(0, rows, CHUNK_ROWS)
    )
    if case == "gb18030":
        with open(path, "wb") as out:
            out.write("person_id;age;sex;地区;education;income;hours\n".encode("gb18030"))
            for table in chunks:
                regions = np.array(CHINESE_REGIONS, dtype=object)[
                    rng.integers(0, len(CHINESE_REGIONS), size=table.num_rows)
                ]
                table = table.set_column(3, "地区", pa.array(regions, pa.string()))
                sink = pa.BufferOutputStream()
                pa_csv.write_csv(
                    table,
                    sink,
                    write_options=pa_csv.WriteOptions(
                        include_header=False, delimiter=";", quoting_style="none"
                    ),
                )
                out.write(sink.getvalue().to_pybytes().decode("utf-8").encode("gb18030"))
    elif case == "xlsx":
        from openpyxl import Workbook

        book = Workbook(write_only=True)
        sheet = book.create_sheet("census")
        header = True
        for table in chunks:
            if header:
                sheet.append(table.column_names)
                header = False
            for row in zip(*(c.to_pylist() for c in table.columns), strict=True):
                sheet.append(row)
        book.save(path)
    elif case == "dta":
        import pandas as pd
        import pyreadstat

        frame = pd.concat([t.to_pandas() for t in chunks], ignore_index=True)
        pyreadstat.write_dta(frame, str(path), version=15)


# --- the phases (each in its own subprocess) ------------------------------------------


def phase_dpportal(path: Path, workdir: Path, case: str) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    # a fresh folder per round: the dataset's folder (the same ids in each round's test
    # database) must not hold the last round's Parquet, which the ingest would replace
    media = Path(tempfile.mkdtemp(dir=workdir, prefix="media-"))
    os.environ["MEDIA_ROOT"] = str(media)
    import django

    django.setup()
    from django.core.files import File
    from django.db import connection

    from budgets.services import project_create
    from datasets.models import Dataset
    from datasets.services import dataset_create, dataset_ingest
    from tests.factories import UserFactory

    options = {"encoding": "gb18030", "delimiter": "semicolon"} if case == "gb18030" else None
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        owner = UserFactory(username="bench-owner")
        project = project_create(
            name="Bench", description="bench", privacy_unit_description="row",
            epsilon_cap="1", delta_cap="0", created_by=owner,
        )  # fmt: skip

        def upload(source: Path, name: str):
            with open(source, "rb") as handle:
                dataset = dataset_create(
                    project=project, name=name, uploaded_file=File(handle, name=source.name),
                    uploaded_by=owner, dispatch=False, read_options=options,
                )  # fmt: skip
            if dataset.status != Dataset.Status.UPLOADED:
                raise SystemExit(f"upload not queued: {dataset.status}")
            return dataset

        # a worker process that has ingested a file before (not timed): its libraries'
        # functions built on their first use, and an idle Polars child, started after
        # that conversion, waiting for the next CSV (datasets.ingest.fast)
        warm = workdir / f"warm-{path.name}"
        generate(case, warm, 1000)
        _ingest(dataset_ingest, upload(warm, "warm").pk, Dataset)
        warm.unlink()
        dataset = upload(path, "bench")
        time.sleep(3)  # the spare child's start (about a second of a core) is over
        os.sync()  # the upload's copy was just written: its writeback is not the ingest's
        rss_before = peak_rss_mb()
        children = _watch_children()
        result = _timed(lambda: _ingest(dataset_ingest, dataset.pk, Dataset))
        # the fast CSV path's Polars child (datasets.ingest.fast) reports its own peak
        child = max((c.peak_rss_mb or 0 for c in children), default=0)
        return {**result, "rss_before_mb": rss_before, "child_peak_rss_mb": child}
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(media, ignore_errors=True)


def _watch_children() -> list:
    """The Polars children the ingest starts (to read their peak memory afterwards)."""
    from datasets.ingest import fast

    started: list = []
    original = fast.FastConversion.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        started.append(self)

    fast.FastConversion.__init__ = init
    return started


def _ingest(dataset_ingest, dataset_id: int, model) -> None:
    dataset = dataset_ingest(dataset_id=dataset_id)
    if dataset.status != model.Status.READY:
        raise SystemExit(f"ingest failed: {dataset.failure_reason}")


def phase_polars(path: Path, workdir: Path, case: str) -> dict:
    """Polars writing snappy, the codec dpportal writes (its default is zstd). Polars
    cannot scan a compressed CSV: a gzip is read (and decompressed) whole in memory."""
    import polars as pl

    out = workdir / "polars.parquet"
    if case == "gzip":
        return _timed(lambda: pl.read_csv(path).write_parquet(out, compression="snappy"))
    return _timed(lambda: pl.scan_csv(path).sink_parquet(out, compression="snappy"))


def phase_decoded_polars(path: Path, workdir: Path, case: str) -> dict:
    """GB18030 decoded in one go by Python, the UTF-8 text parsed by Polars (snappy)."""
    import io

    import polars as pl

    def run() -> None:
        text = path.read_bytes().decode("gb18030").encode("utf-8")
        frame = pl.read_csv(io.BytesIO(text), separator=";")
        frame.write_parquet(workdir / "decoded.parquet", compression="snappy")

    return _timed(run)


def phase_duckdb(path: Path, workdir: Path, case: str) -> dict:
    import duckdb

    out = workdir / "duckdb.parquet"
    con = duckdb.connect()
    return _timed(
        lambda: con.execute(
            f"COPY (SELECT * FROM read_csv('{path}')) TO '{out}' "  # noqa: S608 - our own temp paths
            "(FORMAT parquet, COMPRESSION snappy)"
        )
    )


def phase_pyarrow(path: Path, workdir: Path, case: str) -> dict:
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    def run() -> None:
        read = pa_csv.ReadOptions(encoding="gb18030" if case == "gb18030" else "utf8")
        parse = pa_csv.ParseOptions(delimiter=";" if case == "gb18030" else ",")
        reader = pa_csv.open_csv(path, read_options=read, parse_options=parse)
        with pq.ParquetWriter(workdir / "pyarrow.parquet", reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)

    return _timed(run)


def phase_openpyxl(path: Path, workdir: Path, case: str) -> dict:
    from openpyxl import load_workbook

    def run() -> None:
        book = load_workbook(path, read_only=True, data_only=True)
        for _row in book.worksheets[0].iter_rows(values_only=True):
            pass
        book.close()

    return _timed(run)


def phase_pyreadstat(path: Path, workdir: Path, case: str) -> dict:
    import pyreadstat

    def run() -> None:
        chunks = pyreadstat.read_file_in_chunks(pyreadstat.read_dta, str(path), chunksize=100_000)
        for _frame, _meta in chunks:
            pass

    return _timed(run)


PHASES = {
    "dpportal": phase_dpportal,
    "polars": phase_polars,
    "duckdb": phase_duckdb,
    "pyarrow": phase_pyarrow,
    "decoded_polars": phase_decoded_polars,
    "openpyxl": phase_openpyxl,
    "pyreadstat": phase_pyreadstat,
}
CASES = {  # case: (file name, the phases compared, the reference the goal names, goal)
    "csv": ("census.csv", ["dpportal", "polars", "duckdb", "pyarrow"], "polars", 1.2),
    # the reference: whichever other reader is fastest in the run
    "gzip": ("census.csv.gz", ["dpportal", "duckdb", "pyarrow", "polars"], "fastest", 1.5),
    "gb18030": ("census-gb18030.csv", ["dpportal", "pyarrow", "decoded_polars"], "fastest", 1.3),
    "xlsx": ("census.xlsx", ["dpportal", "openpyxl"], "openpyxl", 1.5),
    "dta": ("census.dta", ["dpportal", "pyreadstat"], "pyreadstat", 1.5),
}
#: `bench_case`: a CSV of fewer rows than SMALL_CSV_ROWS is held to SMALL_CSV_GOAL
SMALL_CSV_ROWS, SMALL_CSV_GOAL = 10_000_000, 1.3


def run_child(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_case(case: str, rows: int, repeat: int, workdir: Path) -> None:
    name, phases, reference, goal = CASES[case]
    if case == "csv" and rows < SMALL_CSV_ROWS:
        goal = SMALL_CSV_GOAL
    path = workdir / name
    started = time.perf_counter()
    run_child("--phase", "generate", "--case", case, "--file", str(path), "--rows", str(rows))
    size_mb = path.stat().st_size / 1e6
    took = time.perf_counter() - started
    print(f"\n{case}: {rows:,} rows, {size_mb:,.1f} MB, generated in {took:.1f}s")
    runs: dict[str, list[dict]] = {phase: [] for phase in phases}
    for _ in range(max(repeat, 1)):
        for phase in phases:  # interleaved: every round runs each phase once
            runs[phase].append(
                run_child(
                    "--phase", phase, "--case", case, "--file", str(path), "--workdir", str(workdir)
                )  # fmt: skip
            )
    medians = {p: statistics.median(r["seconds"] for r in rs) for p, rs in runs.items()}
    for phase, rs in runs.items():
        peak = max(r["peak_rss_mb"] for r in rs)
        before = max((r.get("rss_before_mb", 0) for r in rs), default=0)
        print(
            f"  {phase:>10}: {medians[phase]:7.2f}s  {rows / medians[phase]:>12,.0f} rows/s  "
            f"peak RSS {peak:7.1f} MB"
            + (f" (process before the ingest {before:.1f} MB)" if before else "")
            + (f"; its Polars child {child:.1f} MB" if (child := max(
                r.get("child_peak_rss_mb", 0) for r in rs)) else "")
            + "".join(f"  ratio {medians[phase] / medians[o]:.2f}x {o}" for o in phases
                      if phase == "dpportal" and o != "dpportal")
            + "\n" + " " * 14 + "rounds: " + ", ".join(f"{r['seconds']:.2f}" for r in rs)
        )  # fmt: skip
    if reference == "fastest":
        reference = min((p for p in phases if p != "dpportal"), key=medians.__getitem__)
    ratio = medians["dpportal"] / medians[reference]
    verdict = "met" if ratio <= goal else "NOT met"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"  goal dpportal <= {goal}x {reference}: {ratio:.2f}x ({verdict}); medians of {repeat}"
        f"; load average after the rounds {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the UTF-8 CSV case")
    parser.add_argument("--other-rows", type=int, default=1_000_000, help="rows of the other cases")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds; medians")
    parser.add_argument("--cases", default="csv,gzip,gb18030,xlsx,dta")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase == "generate":
        generate(args.case, args.file, args.rows)
        print(json.dumps({}))
        return
    if args.phase:
        print(json.dumps(PHASES[args.phase](args.file, args.workdir, args.case)))
        return
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix="dpportal-bench-") as tmp:
            rows = args.rows if case in ("csv", "gzip") else args.other_rows
            bench_case(case, rows, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()
