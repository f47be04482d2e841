"""Benchmark: the release computation's data path against bare numpy/pyarrow.

    .venv/bin/python bench/compute.py --rows 10000000

Generates N rows (cached under --dir), then in two child processes (so each
peak RSS is its own):
- ours: the real task code in-process -- releases.compute.aggregate_row_groups
  with the StatisticReaders built from a frozen spec (row-group chunks, only the
  needed columns), then releases.dp.noisy_entry (noise drawn once);
- baseline: the same aggregates with bare pyarrow/numpy on the whole columns.
Statistics: a 50-category histogram, a 2-D histogram (50 x 8), a clipped sum
and a mean. Prints rows/s, peak RSS and the ratio ours/baseline.
No database is touched (the DB bookkeeping around it is a handful of queries).
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

CATS50 = [f"c{i:02d}" for i in range(50)]
CATS8 = [f"k{i}" for i in range(8)]
LOWER, UPPER = 0, 1000
ROW_GROUP = 262_144


def generate(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(1)  # benchmark DATA, not noise
    schema = pa.schema(
        [("cat50", pa.string()), ("cat8", pa.string()), ("x", pa.float64()), ("y", pa.int64())]
    )
    cats50 = np.array(CATS50 + ["zz"], dtype=object)
    cats8 = np.array(CATS8, dtype=object)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            n = min(ROW_GROUP, rows - start)
            table = pa.table(
                {
                    "cat50": pa.array(cats50[gen.integers(0, 51, n)], type=pa.string()),
                    "cat8": pa.array(cats8[gen.integers(0, 8, n)], type=pa.string()),
                    "x": pa.array(gen.gamma(2.0, 150.0, n), mask=gen.random(n) < 0.01),
                    "y": pa.array(gen.integers(-10, 1100, n), type=pa.int64()),
                },
                schema=schema,
            )
            writer.write_table(table, row_group_size=ROW_GROUP)
    tmp.rename(path)


def spec_statistics() -> list[dict]:
    from dpportal.privacy.params import exact_str
    from dpportal.privacy.sensitivity import sum_granularity

    def domain(name, cats):
        return {"name": name, "kind": "categorical", "categories": cats, "missing": "drop"}

    x = {"name": "x", "kind": "numeric", "missing": "drop"}
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    eps = "0.25"
    g_sum = exact_str(sum_granularity(LOWER, UPPER, epsilon=Fraction(eps)))
    g_mean = exact_str(sum_granularity(LOWER, UPPER, epsilon=Fraction(eps) / 2))
    common = {"category": None, "epsilon": eps, "delta": "0", "label": ""}
    return [
        {**common, "position": 0, "kind": "histogram", "columns": [domain("cat50", CATS50)]},
        {
            **common,
            "position": 1,
            "kind": "histogram",
            "columns": [domain("cat50", CATS50), domain("cat8", CATS8)],
        },
        {
            **common,
            "position": 2,
            "kind": "sum",
            "columns": [x],
            "lower": str(LOWER),
            "upper": str(UPPER),
            "granularity": g_sum,
        },  # fmt: skip
        {
            **common,
            "position": 3,
            "kind": "mean",
            "columns": [y],
            "lower": str(LOWER),
            "upper": str(UPPER),
            "granularity": g_mean,
        },  # fmt: skip
    ]


def run_ours(path: Path) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    import pyarrow.parquet as pq

    from releases import compute, dp

    statistics = spec_statistics()
    start = time.perf_counter()
    readers = [compute.StatisticReader.from_spec(s) for s in statistics]
    parquet = pq.ParquetFile(path)
    aggregates = compute.aggregate_row_groups(
        parquet=parquet,
        readers=readers,
        row_groups=range(parquet.num_row_groups),
        mask=None,
        on_chunk=lambda done: None,
    )
    entries = [
        dp.noisy_entry(
            entry=s,
            aggregate=a,
            mechanism="laplace",
            confidence="0.95",
            contribution_bound=1,
            cells=r.axes,
        )  # fmt: skip
        for s, a, r in zip(statistics, aggregates, readers, strict=True)
    ]
    seconds = time.perf_counter() - start
    assert len(entries) == 4
    return {"seconds": seconds, "peak_rss_mb": _peak_rss_mb()}


def run_baseline(path: Path) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    statistics = spec_statistics()
    start = time.perf_counter()
    table = pq.read_table(path, columns=["cat50", "cat8", "x", "y"])
    c50 = pc.fill_null(pc.index_in(table["cat50"], value_set=pa.array(CATS50)), 50)
    c50 = c50.to_numpy().astype(np.int64)
    c8 = pc.fill_null(pc.index_in(table["cat8"], value_set=pa.array(CATS8)), 8).to_numpy()
    hist50 = np.bincount(c50, minlength=51)
    hist2d = np.bincount(c50 * 9 + c8.astype(np.int64), minlength=51 * 9)
    x = pc.drop_null(table["x"]).to_numpy()
    g = float(Fraction(statistics[2]["granularity"]))
    total = int(np.rint(np.clip(x / g, LOWER / g, UPPER / g)).astype(np.int64).sum())
    y = table["y"].to_numpy().astype(np.float64)
    gm = float(Fraction(statistics[3]["granularity"]))
    mean_sum = int(np.rint(np.clip(y / gm, LOWER / gm, UPPER / gm)).astype(np.int64).sum())
    seconds = time.perf_counter() - start
    assert hist50.sum() > 0 and hist2d.sum() > 0 and total >= 0 and mean_sum >= 0
    return {"seconds": seconds, "peak_rss_mb": _peak_rss_mb()}


def stats_statistics() -> list[dict]:
    """Issue 14: a grouped mean of y over the 50 categories (+ Other) and three quantiles of y."""
    from releases import dp_stats

    cat50 = {"name": "cat50", "kind": "categorical", "categories": CATS50, "missing": "drop"}
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    common = {"category": None, "epsilon": "0.5", "delta": "0", "label": ""}
    gran = dp_stats.spec_granularity(
        kind="grouped_mean", lower=LOWER, upper=UPPER, epsilon=Fraction(1, 2), contribution_bound=1
    )
    grid = {"lower": str(LOWER), "upper": str(UPPER), "step": "1"}
    return [
        {**common, "position": 0, "kind": "grouped_mean", "columns": [y], "groups": [cat50],
         "lower": str(LOWER), "upper": str(UPPER), "granularity": gran, "sum_share": "1/2"},
        {**common, "position": 1, "kind": "quantiles", "columns": [y], "grid": grid,
         "quantiles": ["0.25", "0.5", "0.75"], "candidates": UPPER - LOWER + 1},
    ]  # fmt: skip


def run_stats_ours(path: Path) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
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


PARTS = {
    "ours": run_ours,
    "baseline": run_baseline,
    "stats-ours": run_stats_ours,
    "stats-baseline": run_stats_baseline,
}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp/dpportal-bench")
    parser.add_argument(
        "--suite", choices=["base", "stats"], default="base",
        help="base: histograms, sum, mean; stats (issue 14): grouped mean over 50 groups and "
        "three quantiles, ours and the floor interleaved --repeat times, ratio of medians",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--part", choices=list(PARTS), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        run = PARTS[args.part]
        sys.stdout.write(json.dumps(run(Path(args.file))) + "\n")
        return
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rows-{args.rows}.parquet"
    if not path.exists():
        generate(path, args.rows)
    if args.suite == "stats":
        _main_stats(path, args)
        return
    results = {}
    for part in ("ours", "baseline"):
        out = subprocess.run(
            [sys.executable, __file__, "--part", part, "--file", str(path)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        results[part] = json.loads(out.stdout.strip().splitlines()[-1])
    ours, base = results["ours"], results["baseline"]
    lines = [
        f"rows: {args.rows:,}  (file {path.stat().st_size / 1e6:.1f} MB)",
        f"ours     (task code): {args.rows / ours['seconds']:>14,.0f} rows/s  "
        f"{ours['seconds']:.2f} s  peak RSS {ours['peak_rss_mb']:.0f} MB",
        f"baseline (numpy)    : {args.rows / base['seconds']:>14,.0f} rows/s  "
        f"{base['seconds']:.2f} s  peak RSS {base['peak_rss_mb']:.0f} MB",
        f"ratio ours/baseline : {ours['seconds'] / base['seconds']:.2f} (time)  "
        f"{ours['peak_rss_mb'] / base['peak_rss_mb']:.2f} (peak RSS)",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def _main_stats(path: Path, args) -> None:
    import statistics as st

    runs: dict[str, list[dict]] = {"stats-ours": [], "stats-baseline": []}
    for _ in range(args.repeat):
        for part in runs:  # interleaved: ours, floor, ours, floor, ...
            out = subprocess.run(
                [sys.executable, __file__, "--part", part, "--file", str(path)],
                capture_output=True, text=True, check=True, cwd=ROOT,
            )  # fmt: skip
            runs[part].append(json.loads(out.stdout.strip().splitlines()[-1]))
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
