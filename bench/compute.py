"""Benchmark: a release's true aggregation against the fastest tools' plain aggregates.

    .venv/bin/python bench/compute.py --rows 10000000 --repeat 3 --bound 1

Generates N rows with a person ID (cached under --dir), then runs each part in
its own child process (its own peak RSS), the parts interleaved round by round,
and prints medians and ratios (bench/compute_parts.py says what each part is):
before-row / before-person (the numpy readers, keep_mask for the person unit),
plan-row / plan-person (the DuckDB plan the task runs, releases.compute.
duckdb_engine; the person bound over the dataset itself), copy-person (the same
through the person-rows copy, made once before the rounds: its build time and
peak RSS are printed apart), and the floors duckdb and polars. Statistics: a 50-category
histogram, a 50 x 16 2-D histogram, a clipped sum and a mean; ours then draws
the noise (releases.dp.noisy_entry). Beside that table, the deciles of one column:
the task's quantiles path against DuckDB's quantile_cont and Polars
(bench/compute_deciles.py; alone with --suite deciles, left out with --no-deciles).
With --suite crosstab: a cross-tabulation of 8 categorical columns (all 1-way and
2-way marginals), the task's plan path against DuckDB's own GROUPING SETS on the
same file (bench/compute_crosstab.py). No database is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# run as a script, bench/ is first on sys.path: its modules must not shadow the stdlib's
sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.compute_crosstab import (  # noqa: E402
    CROSSTAB,
    crosstab_path,
    crosstab_table,
    run_crosstab_part,
)
from bench.compute_deciles import DECILES, deciles_table, run_deciles_part  # noqa: E402
from bench.compute_parts import CATS50, LOWER, PARTS, UPPER, generate, run_part  # noqa: E402


def stats_statistics() -> list[dict]:
    """A grouped mean of y over the 50 categories (+ Other) and three quantiles of y."""
    from dpportal.privacy.params import exact_str
    from releases import kinds

    cat50 = {"name": "cat50", "kind": "categorical", "categories": CATS50, "missing": "drop"}
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    common = {"category": None, "epsilon": "0.5", "delta": "0", "label": ""}
    gran = exact_str(
        kinds.get("grouped_mean").granularity(
            lower=LOWER, upper=UPPER, epsilon=Fraction(1, 2), contribution_bound=1
        )
    )
    grid = {"lower": str(LOWER), "upper": str(UPPER), "step": "1"}
    return [
        {**common, "position": 0, "kind": "grouped_mean", "columns": [y], "groups": [cat50],
         "lower": str(LOWER), "upper": str(UPPER), "granularity": gran, "sum_share": "1/2"},
        {**common, "position": 1, "kind": "quantiles", "columns": [y], "grid": grid,
         "quantiles": ["0.25", "0.5", "0.75"], "candidates": UPPER - LOWER + 1},
    ]  # fmt: skip


def _django() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()


def run_stats_ours(path: Path) -> dict:
    _django()
    import pyarrow.parquet as pq

    from releases import compute, dp

    statistics = stats_statistics()
    start = time.perf_counter()
    readers = [compute.StatisticReader.from_spec(s) for s in statistics]
    parquet = pq.ParquetFile(path)
    aggregates = compute.aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=None
    )
    for s, a, r in zip(statistics, aggregates, readers, strict=True):
        dp.noisy_entry(entry=s, aggregate=a, mechanism="laplace", confidence="0.95",
                       contribution_bound=1, cells=r.axes)  # fmt: skip
    return {"seconds": time.perf_counter() - start, "peak_rss_mb": _peak_rss_mb()}


def run_stats_baseline(path: Path) -> dict:
    """The same aggregation (group sums on the grid, group counts, grid-cell counts), bare."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    _django()  # the statistics' granularity comes from releases.kinds (not timed)
    g = float(Fraction(stats_statistics()[0]["granularity"]))
    start = time.perf_counter()
    table = pq.read_table(path, columns=["cat50", "y"])
    codes = pc.fill_null(pc.index_in(table["cat50"], value_set=pa.array(CATS50)), 50)
    codes = codes.to_numpy().astype(np.int64)
    y = table["y"].to_numpy().astype(np.float64)
    units = np.rint(np.clip(y / g, LOWER / g, UPPER / g))
    sums = np.bincount(codes, weights=units, minlength=51)
    counts = np.bincount(codes, minlength=51)
    edges = np.arange(LOWER, UPPER + 1, dtype=np.float64)
    ranks = np.cumsum(
        np.bincount(np.searchsorted(edges, y, side="right"), minlength=edges.size + 1)
    )
    seconds = time.perf_counter() - start
    assert sums.sum() > 0 and counts.sum() > 0 and ranks[-1] == y.size
    return {"seconds": seconds, "peak_rss_mb": _peak_rss_mb()}


STATS_PARTS = {"stats-ours": run_stats_ours, "stats-baseline": run_stats_baseline}


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(part: str, path: Path, bound: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--part", part, "--file", str(path), "--bound", str(bound)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp/dpportal-bench")
    parser.add_argument(
        "--suite", choices=["base", "stats", "deciles", "crosstab"], default="base",
        help="base: histograms, sum, mean (then the deciles); stats: grouped mean over 50 "
        "groups and three quantiles, ours and the floor interleaved --repeat times; "
        "deciles: nine quantiles, ours against DuckDB and Polars; crosstab: 36 marginals "
        "of 8 categorical columns, ours against DuckDB's GROUPING SETS",
    )  # fmt: skip
    parser.add_argument("--no-deciles", action="store_true", help="base suite: no deciles")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bound", type=int, default=1, help="L of the person-level unit")
    parser.add_argument("--parts", default=",".join(PARTS), help="base suite: parts to run")
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        if args.part in STATS_PARTS:
            result = STATS_PARTS[args.part](Path(args.file))
        elif args.part in CROSSTAB:
            result = run_crosstab_part(args.part, Path(args.file))
        elif args.part in DECILES:
            result = run_deciles_part(args.part, Path(args.file))
        else:
            result = run_part(args.part, Path(args.file), args.bound)
        sys.stdout.write(json.dumps(result) + "\n")
        return
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    if args.suite == "crosstab":
        _main_crosstab(crosstab_path(folder, args.rows), args)
        return
    path = folder / f"rows16-{args.rows}.parquet"
    if not path.exists():
        generate(path, args.rows)
    if args.suite == "stats":
        _main_stats(path, args)
        return
    if args.suite == "deciles":
        _main_deciles(path, args)
        return
    import statistics as st

    parts = args.parts.split(",")
    load_before = _load()
    built = _child("copy-build", path, args.bound) if "copy-person" in parts else None
    runs: dict[str, list[dict]] = {p: [] for p in parts}
    for _ in range(args.repeat):
        for part in parts:  # interleaved: every part once per round
            runs[part].append(_child(part, path, args.bound))
    med = {p: st.median(r["seconds"] for r in v) for p, v in runs.items()}
    rss = {p: max(r["peak_rss_mb"] for r in v) for p, v in runs.items()}
    floor = min((med[p] for p in ("duckdb", "polars") if p in med), default=float("nan"))
    lines = [
        f"rows: {args.rows:,}  (file {path.stat().st_size / 1e6:.1f} MB), person-level L = "
        f"{args.bound}, {args.repeat} interleaved rounds, medians; floor = the faster of "
        "DuckDB and Polars (plain aggregates, no bound)",
        f"load average (1, 5, 15 min) at the start: {load_before}, at the end: {_load()}",
        f"{'part':<14} {'median s':>9} {'x floor':>8} {'x duckdb':>9} {'x polars':>9} "
        f"{'x dk-pers':>9} {'peak RSS MB':>12}  runs",
    ]
    refs = ("duckdb", "polars", "duckdb-person")
    for p in parts:
        ratio = {f: med[p] / med[f] if f in med else float("nan") for f in refs}
        lines.append(
            f"{p:<14} {med[p]:>9.3f} {med[p] / floor:>8.2f} {ratio['duckdb']:>9.2f} "
            f"{ratio['polars']:>9.2f} {ratio['duckdb-person']:>9.2f} {rss[p]:>12.0f}  "
            f"{[round(r['seconds'], 2) for r in runs[p]]}"
        )
    if built is not None:
        lines.append(
            f"copy-build (once per dataset, not in the rounds): {built['seconds']:.2f} s, "
            f"peak RSS {built['peak_rss_mb']:.0f} MB"
        )
        if "duckdb-person" in med:
            first = built["seconds"] + med["copy-person"]
            lines.append(
                f"first release through the copy (build + copy-person): {first:.2f} s, "
                f"{first / med['duckdb-person']:.2f} x duckdb-person"
            )
    sys.stdout.write("\n".join(lines) + "\n")
    if not args.no_deciles:
        _main_deciles(path, args)


def _main_deciles(path: Path, args) -> None:
    runs: dict[str, list[dict]] = {p: [] for p in DECILES}
    for _ in range(args.repeat):
        for part in runs:  # interleaved: ours, duckdb, polars, ours, ...
            runs[part].append(_child(part, path, 1))
    sys.stdout.write("\n".join(deciles_table(runs, args.rows)) + "\n")


def _main_crosstab(path: Path, args) -> None:
    runs: dict[str, list[dict]] = {p: [] for p in CROSSTAB}
    for _ in range(args.repeat):
        for part in runs:  # interleaved: ours, duckdb, duckdb-max, ours, ...
            runs[part].append(_child(part, path, 1))
    lines = crosstab_table(runs, args.rows, path.stat().st_size / 1e6)
    sys.stdout.write("\n".join(lines) + "\n")


def _main_stats(path: Path, args) -> None:
    import statistics as st

    runs: dict[str, list[dict]] = {"stats-ours": [], "stats-baseline": []}
    for _ in range(args.repeat):
        for part in runs:  # interleaved: ours, floor, ours, floor, ...
            runs[part].append(_child(part, path, 1))
    med = {p: st.median(r["seconds"] for r in v) for p, v in runs.items()}
    rss = {p: max(r["peak_rss_mb"] for r in v) for p, v in runs.items()}
    lines = [
        f"rows: {args.rows:,}  grouped mean (51 cells) + 3 quantiles (1001 candidates), "
        f"{args.repeat} interleaved runs",
        f"ours  (task code): median {med['stats-ours']:.2f} s  "
        f"{[round(r['seconds'], 2) for r in runs['stats-ours']]}  "
        f"peak RSS {rss['stats-ours']:.0f} MB",
        f"floor (numpy)    : median {med['stats-baseline']:.2f} s  "
        f"{[round(r['seconds'], 2) for r in runs['stats-baseline']]}  "
        f"peak RSS {rss['stats-baseline']:.0f} MB",
        f"ratio of medians ours/floor: {med['stats-ours'] / med['stats-baseline']:.2f} (time)  "
        f"{rss['stats-ours'] / rss['stats-baseline']:.2f} (peak RSS)",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
