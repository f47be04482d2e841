"""The deciles part of bench/compute.py: a release's nine quantiles against the engines' own.

- deciles-ours: the task's path for a "quantiles" statistic (quantiles 0.1 ... 0.9 of y
  over the public grid 0, 1, ..., 999: 1,000 candidates): the aggregation plan on DuckDB
  (releases.compute.duckdb_engine: counts per grid cell in SQL), then the kind's
  noisy_entry (nine exact permute-and-flip draws);
- deciles-numpy: the numpy readers the plan replaced (StatisticReader.from_spec,
  aggregate_row_groups: counts per grid cell, releases.compute.readers_stats), then the
  same noisy_entry;
- deciles-duckdb: SELECT quantile_cont(y, [0.1, ..., 0.9]) FROM read_parquet(...);
- deciles-polars: the same nine quantiles, linear interpolation, on a lazy scan.

Threads: DuckDB, Polars and ours get `threads()` (DPPORTAL_COMPUTE_THREADS, else the
machine's cores: what the task's DuckDB engine is given); the numpy path counts on one
Python thread while pyarrow decodes the Parquet pages on its own pool.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

QUANTILES = [f"0.{i}" for i in range(1, 10)]
GRID = {"lower": "0", "upper": "999", "step": "1"}


def threads() -> int:
    return int(os.environ.get("DPPORTAL_COMPUTE_THREADS") or 0) or os.cpu_count() or 1


def deciles_statistic() -> dict:
    y = {"name": "y", "kind": "numeric", "missing": "drop"}
    return {"category": None, "epsilon": "0.9", "delta": "0", "label": "", "position": 0,
            "kind": "quantiles", "columns": [y], "grid": GRID, "quantiles": QUANTILES,
            "candidates": 1000}  # fmt: skip


def _django(path: Path) -> None:
    import django
    from django.conf import settings

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    settings.MEDIA_ROOT = str(path.parent)


def run_ours(path: Path) -> float:
    _django(path)
    from releases import compute, dp
    from releases.compute import duckdb_engine

    statistic = deciles_statistic()
    spec = {"parquet_file": path.name, "statistics": [statistic],
            "privacy_unit": {"id_column": "", "contribution_bound": 1}}  # fmt: skip
    compute.StatisticReader.from_spec(statistic)  # warm the lazy imports (a worker has them)
    start = time.perf_counter()
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    (aggregate,) = duckdb_engine.run_plan(spec, plan)
    cells = compute.StatisticReader.from_spec(statistic).axes
    entry = dp.noisy_entry(entry=statistic, aggregate=aggregate, mechanism="laplace",
                           confidence="0.95", contribution_bound=1, cells=cells)  # fmt: skip
    seconds = time.perf_counter() - start
    assert int(aggregate.sum()) > 0 and entry
    return seconds


def run_numpy(path: Path) -> float:
    _django(path)
    import pyarrow.parquet as pq

    from releases import compute, dp

    statistic = deciles_statistic()
    compute.StatisticReader.from_spec(statistic)  # warm the lazy imports (a worker has them)
    start = time.perf_counter()
    reader = compute.StatisticReader.from_spec(statistic)
    parquet = pq.ParquetFile(path)
    (aggregate,) = compute.aggregate_row_groups(
        parquet=parquet, readers=[reader], row_groups=range(parquet.num_row_groups), mask=None
    )
    entry = dp.noisy_entry(entry=statistic, aggregate=aggregate, mechanism="laplace",
                           confidence="0.95", contribution_bound=1, cells=reader.axes)  # fmt: skip
    seconds = time.perf_counter() - start
    assert int(aggregate.sum()) > 0 and entry
    return seconds


def run_duckdb(path: Path) -> float:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect(config={"threads": threads()})
    qs = ", ".join(QUANTILES)
    (row,) = con.sql(f"SELECT quantile_cont(y, [{qs}]) FROM read_parquet('{path}')").fetchall()
    seconds = time.perf_counter() - start
    assert len(row[0]) == 9
    return seconds


def run_polars(path: Path) -> float:
    os.environ["POLARS_MAX_THREADS"] = str(threads())  # read when polars is first imported
    import polars as pl

    start = time.perf_counter()
    y = pl.col("y")
    out = pl.scan_parquet(path).select(
        [y.quantile(float(q), interpolation="linear").alias(q) for q in QUANTILES]
    )
    row = out.collect().row(0)
    seconds = time.perf_counter() - start
    assert len(row) == 9
    return seconds


DECILES = {
    "deciles-ours": run_ours,
    "deciles-numpy": run_numpy,
    "deciles-duckdb": run_duckdb,
    "deciles-polars": run_polars,
}


def run_deciles_part(name: str, path: Path) -> dict:
    seconds = DECILES[name](path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": peak}


def deciles_table(runs: dict[str, list[dict]], rows: int) -> list[str]:
    """Rows/s, median seconds, peak RSS and ours' ratio to each engine (ratio of medians)."""
    import statistics as st

    med = {p: st.median(r["seconds"] for r in v) for p, v in runs.items()}
    rss = {p: max(r["peak_rss_mb"] for r in v) for p, v in runs.items()}
    lines = [
        f"deciles of y: {rows:,} rows, quantiles 0.1 ... 0.9, ours over 1,000 candidates; "
        f"{len(runs['deciles-ours'])} interleaved rounds, medians; DuckDB and Polars on "
        f"{threads()} threads, ours too (the numpy path on one Python thread)",
        f"{'part':<15} {'median s':>9} {'rows/s':>12} {'ours / it':>10} {'peak RSS MB':>12}  runs",
    ]
    for p, v in runs.items():
        ratio = med["deciles-ours"] / med[p]
        lines.append(
            f"{p:<15} {med[p]:>9.3f} {rows / med[p]:>12,.0f} {ratio:>10.2f} {rss[p]:>12.0f}  "
            f"{[round(r['seconds'], 3) for r in v]}"
        )
    return lines
