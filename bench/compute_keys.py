"""Benchmark: a keys statistic (categories found in the data) on DuckDB, against DuckDB alone.

    .venv/bin/python bench/compute_keys.py --rows 10000000 --repeat 3

Two datasets of --rows rows with a person ID (BIGINT), made once under --dir: `census`
(a person in five on two rows; the key one of 7 short texts, as bench/whole_path.py's
education) and `long` (two rows per person, each a distinct key among 100,000 texts of
36 characters). Each part runs in its own child process (its own peak RSS, VmHWM),
the parts interleaved round by round; medians are printed:

- `ours`: releases.compute.duckdb_engine.run_plan of one keys statistic
  (keys_per_person 1, person bound 5), at DPPORTAL_COMPUTE_MEMORY_MB (--memory-mb);
- `duckdb`: DuckDB alone (its defaults: 80 % of RAM), the distinct (person, key) pairs
  counted per key -- no person bound and no choice of a person's keys: a floor.

--before PATH adds `before`: `ours` with dpportal imported from another checkout (the
same statistic before a change), interleaved with the others. No database is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# run as a script, bench/ is first on sys.path: its modules must not shadow the stdlib's
sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

DATASETS = ("census", "long")
PARTS = ("ours", "duckdb")
EDUCATION = "['none','primary','secondary','vocational','bachelor','master','doctorate']"


def generate(directory: Path, rows: int, names: list[str]) -> dict[str, Path]:
    import duckdb  # noqa: PLC0415 - children import what they run

    directory.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in names:
        path = directory / f"keys-{name}-{rows}.parquet"
        if not path.exists():
            if name == "census":
                person, key = "(i * 4) // 5", f"{EDUCATION}[1 + (hash(i) % 7)::INT]"
            else:
                person, key = "i // 2", "'key-' || md5(((i * 7919) % 100000)::VARCHAR)"
            duckdb.execute(
                f"COPY (SELECT ({person})::BIGINT AS person, {key} AS tag "  # noqa: S608 - constants
                f"FROM range({rows}) AS t(i)) TO '{path}' (FORMAT parquet)"
            )
        made[name] = path
    return made


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(part: str, path: str, memory_mb: int, tree: str) -> None:
    """One part, timed, in this process; prints a JSON line."""
    started = time.perf_counter()
    if part == "duckdb":
        import duckdb  # noqa: PLC0415

        found = duckdb.execute(
            f"SELECT tag, count(*) FROM (SELECT DISTINCT person, tag FROM '{path}' "  # noqa: S608 - a path
            "WHERE tag IS NOT NULL AND person IS NOT NULL) GROUP BY tag"
        ).fetchall()
        keys = len(found)
    else:
        sys.path.insert(0, tree)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
        import django  # noqa: PLC0415

        django.setup()
        from django.conf import settings  # noqa: PLC0415

        from releases.compute import duckdb_engine  # noqa: PLC0415

        settings.MEDIA_ROOT = str(Path(path).parent)
        settings.DPPORTAL_COMPUTE_MEMORY_MB = memory_mb
        domain = {"name": "tag", "kind": "categorical", "type": "string", "categories": [],
                  "missing": "drop"}  # fmt: skip
        entry = {"position": 0, "kind": "keys", "columns": [domain], "epsilon": "1",
                 "delta": "0.00001", "keys_per_person": 1, "with_counts": True,
                 "max_keys": 1000}  # fmt: skip
        spec = {"parquet_file": Path(path).name, "statistics": [entry],
                "privacy_unit": {"id_column": "person", "contribution_bound": 5}}  # fmt: skip
        started = time.perf_counter()  # the engine alone, not Django's start
        try:
            (found,) = duckdb_engine.run_plan(spec, duckdb_engine.duckdb_plan(spec))
            keys = len(found)
        except Exception as exc:  # noqa: BLE001 - an out-of-memory is a result here
            keys = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mb": peak_rss_mb(), "keys": keys}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/dpportal-bench-keys")
    parser.add_argument("--memory-mb", type=int, default=192)
    parser.add_argument("--tree", default=str(ROOT))
    parser.add_argument("--before", default="")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--child", nargs=2, metavar=("PART", "PATH"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.memory_mb, args.tree)
        return
    paths = generate(Path(args.dir), args.rows, args.datasets.split(","))
    results: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.repeat):
        for name in args.datasets.split(","):
            for part in [*PARTS, "before"] if args.before else PARTS:
                tree = args.before if part == "before" else args.tree
                command = [sys.executable, __file__, "--child", part, str(paths[name]),
                           "--memory-mb", str(args.memory_mb), "--tree", tree]  # fmt: skip
                out = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603 - this script
                line = json.loads(out.stdout.strip().splitlines()[-1])
                results.setdefault((name, part), []).append(line)
    load = os.getloadavg()
    print(f"rows {args.rows:,}, memory {args.memory_mb} MB, load {load[0]:.2f} {load[1]:.2f}")
    for (name, part), runs in results.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        reference = statistics.median(r["seconds"] for r in results[(name, "duckdb")])
        keys = runs[-1]["keys"]
        print(
            f"{name:7} {part:7} {seconds:7.1f} s  x{seconds / reference:5.2f}  "
            f"peak {peak:6.0f} MB  keys {keys}"
        )
        print("RESULT " + json.dumps({"dataset": name, "part": part, "seconds": seconds,
                                      "peak_mb": peak, "keys": keys, "load": load[0]}))  # fmt: skip


if __name__ == "__main__":
    main()
