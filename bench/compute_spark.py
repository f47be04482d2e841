"""Benchmark: a person-level release on the Spark backend against DuckDB's, at equal cores.

    .venv/bin/python bench/compute_spark.py --rows 10000000 --repeat 3 --bound 1 --cores 1 2

The same data and statistics as bench/compute.py (bench/compute_parts.py: a
50-category histogram, a 50 x 16 2-D histogram, a clipped sum and a mean; a
person ID, about 0.77 N people), each run in its own child process, the parts
interleaved round by round (the order rotated each round); medians and the
ratios of medians. A part at c cores runs confined to c CPUs (its process and the
JVM it starts: sched_setaffinity), so that a JVM's garbage collector and compiler
threads do not borrow an idle CPU (--no-pin lets them). For each number of cores c
in --cores:

- plan-person@c: the DuckDB engine the worker runs by default (releases.compute.
  duckdb_engine.run_plan, DPPORTAL_COMPUTE_THREADS = c) plus the noise;
- spark-person@c: the Spark engine (releases.compute.spark_engine.run_plan) on
  local[c] (or --master) plus the noise, timed after the session is up (a worker
  keeps its session, warmed by a 10,000-row release); the session's start and the
  warm-up release are reported apart, with the driver JVM's peak RSS and the CPU
  seconds the JVM spent on the timed release (all its threads: less sensitive than
  the wall time to other processes on a shared machine).

Each part's process runs the release --runs times (default 2): the last is the warm
release timed (a worker whose session has run a release of this size before: the
JVM's compiler has seen the plan's loops at volume), the first is reported beside it
(for both engines: "first_seconds").

Every child reports the 1-minute load average when it starts and ends: on a
shared machine a speed-up between core counts means little under a load above
the cores. No database is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# run as a script, bench/ is first on sys.path: its modules must not shadow the stdlib's
sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.compute_parts import _noise, _spec, generate, run_part  # noqa: E402


def _vm_hwm_mb(pid: int) -> float:
    """A process's peak resident memory (Linux VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time so far (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_spark(path: Path, bound: int, master: str, runs: int) -> dict:
    load = os.getloadavg()[0]
    spec = _spec(path, bound, person=True)
    from django.conf import settings

    from releases.compute import spark_engine

    settings.DPPORTAL_SPARK_MASTER = master
    start = time.perf_counter()
    session = spark_engine.spark_session()
    started = time.perf_counter() - start
    warm = path.with_name("rows16-warm.parquet")  # a worker's session has run releases before
    if not warm.exists():
        generate(warm, 10_000)
    start = time.perf_counter()
    spark_engine.run_plan({**spec, "parquet_file": warm.name}, spark_engine.spark_plan(spec))
    warmed = time.perf_counter() - start
    jvm = session.sparkContext._gateway.proc.pid  # spark-submit execs the driver's JVM
    times, cpus = [], []
    for _ in range(runs):
        cpu = _cpu_seconds(jvm)
        start = time.perf_counter()
        plan = spark_engine.spark_plan(spec)
        assert plan is not None
        _noise(spec, spark_engine.run_plan(spec, plan))
        times.append(time.perf_counter() - start)
        cpus.append(_cpu_seconds(jvm) - cpu)
    return {
        "seconds": times[-1],
        "first_seconds": times[0],
        "session_start_seconds": started,
        "warm_up_seconds": warmed,
        "jvm_cpu_seconds": cpus[-1],
        "first_jvm_cpu_seconds": cpus[0],
        "load_start": load,
        "load_end": os.getloadavg()[0],
        "peak_rss_mb": _vm_hwm_mb(os.getpid()),
        "jvm_peak_rss_mb": _vm_hwm_mb(jvm),
    }


def _pinned(cores: int):
    """The child (and the JVM it starts) confined to `cores` CPUs: c cores means c CPUs
    for everything the engine runs, its garbage collector and compiler threads
    included, not c task threads beside an idle CPU that those borrow."""
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    return lambda: os.sched_setaffinity(0, cpus)


def run_duckdb(part: str, path: Path, bound: int, runs: int) -> dict:
    results = [run_part(part, path, bound) for _ in range(runs)]
    return {**results[-1], "first_seconds": results[0]["seconds"]}


def _child(
    part: str, path: Path, bound: int, master: str, cores: int, pin: bool, runs: int
) -> dict:
    cmd = [sys.executable, __file__, "--part", part, "--file", str(path),
           "--bound", str(bound), "--master", master, "--runs", str(runs)]  # fmt: skip
    env = {**os.environ, "DPPORTAL_COMPUTE_THREADS": str(cores)}
    load = os.getloadavg()[0]
    out = subprocess.run(
        cmd, capture_output=True, text=True, check=True, cwd=ROOT, env=env,
        preexec_fn=_pinned(cores) if pin else None,  # noqa: PLW1509 - no threads yet
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {"load_start": load, **result, "load_end": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp/dpportal-bench")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bound", type=int, default=1, help="L of the person-level unit")
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--master", help="a cluster's URL (default: local[c] for each c)")
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false",
        help="let a c-core part use every CPU (by default it is confined to c CPUs)",
    )  # fmt: skip
    parser.add_argument(
        "--runs", type=int, default=2,
        help="releases per part's process: the last is timed (a session that has run a "
        "release of this size), the first reported beside it",
    )  # fmt: skip
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part == "spark-person":
        result = run_spark(Path(args.file), args.bound, args.master, args.runs)
    elif args.part:
        result = run_duckdb(args.part, Path(args.file), args.bound, args.runs)
    if args.part:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rows16-{args.rows}.parquet"  # the file bench/compute.py uses
    if not path.exists():
        generate(path, args.rows)
    parts = [f"{p}@{c}" for c in args.cores for p in ("plan-person", "spark-person")]
    runs: dict[str, list[dict]] = {p: [] for p in parts}
    for round_ in range(args.repeat):
        shift = round_ % len(parts)
        for part in parts[shift:] + parts[:shift]:
            name, cores = part.split("@")
            master = args.master or f"local[{cores}]"
            runs[part].append(
                _child(name, path, args.bound, master, int(cores), args.pin, args.runs)
            )
            print(part, json.dumps(runs[part][-1]), flush=True)
    med = {p: st.median(r["seconds"] for r in runs[p]) for p in parts}
    pinned = "each part confined to its cores" if args.pin else "parts not confined"
    print(f"rows={args.rows} bound={args.bound} cores={args.cores} repeat={args.repeat}, {pinned}")
    for p in parts:
        extra = {k: round(st.median(r[k] for r in runs[p]), 1) for k in runs[p][0]}
        print(f"{p:16s} median {med[p]:.2f} s  {extra}")
    first = {p: st.median(r["first_seconds"] for r in runs[p]) for p in parts}
    for c in args.cores:
        ratio = med[f"spark-person@{c}"] / med[f"plan-person@{c}"]
        ratio_first = first[f"spark-person@{c}"] / first[f"plan-person@{c}"]
        print(
            f"{c} core(s): spark / duckdb (ratio of medians) {ratio:.2f} warm, "
            f"{ratio_first:.2f} on each process's first release"
        )
    low, high = min(args.cores), max(args.cores)
    if low != high:
        for p in ("spark-person", "plan-person"):
            speedup = med[f"{p}@{low}"] / med[f"{p}@{high}"]
            speedup_first = first[f"{p}@{low}"] / first[f"{p}@{high}"]
            print(
                f"{p}: {high} cores vs {low}: {speedup:.2f}x faster warm, "
                f"{speedup_first:.2f}x on the first release"
            )


if __name__ == "__main__":
    main()
