"""The crosstab part of bench/compute.py: a cross-tabulation's tables against DuckDB's own.

Data: N rows of 8 text columns t2, t3, t4, t5, t6, t7, t8, t10 (column tK has K
categories, drawn uniformly, no missing values), cached under --dir. The workload:
every 1-way and 2-way marginal of the 8 columns (8 + 28 = 36 tables; the 28 pairs
are the maximal ones). Each table's cells are a histogram's: the K declared
categories plus "Other" (K + 1 cells).

- crosstab-ours: the task's plan path for a "crosstab" statistic (releases.compute.
  duckdb_engine.duckdb_plan, then run_plan: one GROUPING SETS query with a grouping
  set per maximal table, each row's cell codes computed in SQL, the result rows shaped
  into numpy tables) on DPPORTAL_COMPUTE_THREADS threads under DPPORTAL_COMPUTE_MEMORY_MB;
  the aggregation only (no noise);
- crosstab-duckdb: SELECT t2, ..., count(*) FROM read_parquet(...) GROUP BY GROUPING SETS
  over the 36 published marginals, on the same file, same threads, DuckDB's default
  memory limit;
- crosstab-duckdb-max: the same over the 28 maximal marginals only (what ours groups by).
"""

from __future__ import annotations

import math
import os
import resource
import time
from itertools import combinations
from pathlib import Path

SIZES = (2, 3, 4, 5, 6, 7, 8, 10)
NAMES = [f"t{k}" for k in SIZES]
ROW_GROUP = 262_144


def threads() -> int:
    return int(os.environ.get("DPPORTAL_COMPUTE_THREADS") or 0) or os.cpu_count() or 1


def categories(k: int) -> list[str]:
    return [f"v{i}" for i in range(k)]


def marginals() -> list[list[int]]:
    """Every 1-way and 2-way marginal of the 8 columns."""
    return [[i] for i in range(len(SIZES))] + [list(p) for p in combinations(range(len(SIZES)), 2)]


def generate(path: Path, rows: int) -> None:
    """N rows of the 8 categorical text columns (benchmark DATA, not noise)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(2)
    schema = pa.schema([(n, pa.string()) for n in NAMES])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            n = min(ROW_GROUP, rows - start)
            columns = {
                name: pa.DictionaryArray.from_arrays(
                    pa.array(gen.integers(0, k, n), type=pa.int32()), pa.array(categories(k))
                ).cast(pa.string())
                for name, k in zip(NAMES, SIZES, strict=True)
            }
            writer.write_table(pa.table(columns, schema=schema), row_group_size=ROW_GROUP)
    tmp.rename(path)


def crosstab_statistic() -> dict:
    columns = [
        {"name": n, "kind": "categorical", "categories": categories(k), "missing": "drop"}
        for n, k in zip(NAMES, SIZES, strict=True)
    ]
    return {"category": None, "epsilon": "1", "delta": "1/1000000", "label": "", "position": 0,
            "kind": "crosstab", "columns": columns, "marginals": marginals()}  # fmt: skip


def _registered() -> None:
    """Django set up, and the registry knowing "crosstab" (a stand-in stating only what the
    compute path reads, until releases.kinds has the kind)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    from releases import kinds
    from releases.kinds.base import StatisticKind

    if "crosstab" not in kinds.REGISTRY:
        stand_in = type("CrosstabStandIn", (StatisticKind,), {"aggregate": "marginals"})
        stand_in.name = "crosstab"
        kinds.REGISTRY["crosstab"] = stand_in()


def _rss_mb() -> float:
    """This process's resident memory now (Linux VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_ours(path: Path) -> tuple[float, float]:
    _registered()
    from django.conf import settings

    from releases.compute import StatisticReader, duckdb_engine

    settings.MEDIA_ROOT = str(path.parent)
    statistic = crosstab_statistic()
    StatisticReader.from_spec(statistic)  # warm the lazy imports (a worker has them)
    spec = {"parquet_file": path.name, "statistics": [statistic],
            "privacy_unit": {"id_column": "", "contribution_bound": 1}}  # fmt: skip
    before = _rss_mb()
    start = time.perf_counter()
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None and len(plan.groupings) == 28
    (tables,) = duckdb_engine.run_plan(spec, plan)
    seconds = time.perf_counter() - start
    rows = int(tables[0].sum())
    assert len(tables) == 28 and all(int(t.sum()) == rows > 0 for t in tables)
    return seconds, before


def _run_duckdb(path: Path, sets: list[list[int]]) -> tuple[float, float]:
    import duckdb

    before = _rss_mb()
    grouping = ", ".join("(" + ", ".join(NAMES[i] for i in m) + ")" for m in sets)
    start = time.perf_counter()
    con = duckdb.connect(config={"threads": threads()})
    rows = con.sql(
        f"SELECT {', '.join(NAMES)}, count(*) FROM read_parquet('{path}') "
        f"GROUP BY GROUPING SETS ({grouping})"
    ).fetchall()
    seconds = time.perf_counter() - start
    assert len(rows) == sum(math.prod(SIZES[i] for i in m) for m in sets)  # every cell seen
    return seconds, before


def run_duckdb(path: Path) -> tuple[float, float]:
    return _run_duckdb(path, marginals())


def run_duckdb_maximal(path: Path) -> tuple[float, float]:
    return _run_duckdb(path, [m for m in marginals() if len(m) == 2])


CROSSTAB = {
    "crosstab-ours": run_ours,
    "crosstab-duckdb": run_duckdb,
    "crosstab-duckdb-max": run_duckdb_maximal,
}


def run_crosstab_part(name: str, path: Path) -> dict:
    seconds, before = CROSSTAB[name](path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": peak, "rss_before_mb": before}


def crosstab_path(folder: Path, rows: int) -> Path:
    """The benchmark's file (made once per row count)."""
    path = folder / f"crosstab8-{rows}.parquet"
    if not path.exists():
        generate(path, rows)
    return path


def crosstab_table(runs: dict[str, list[dict]], rows: int, size_mb: float) -> list[str]:
    """Median seconds, rows/s, peak RSS, and ours' ratio to each (ratio of medians). The
    peak RSS is the child process's (ours: with Django and the app imported); "+agg" is
    the peak above the resident memory just before the timed part (the aggregation's own)."""
    import statistics as st

    med = {p: st.median(r["seconds"] for r in v) for p, v in runs.items()}
    rss = {p: max(r["peak_rss_mb"] for r in v) for p, v in runs.items()}
    grew = {p: max(r["peak_rss_mb"] - r["rss_before_mb"] for r in v) for p, v in runs.items()}
    ours = "crosstab-ours"
    lines = [
        f"crosstab: {rows:,} rows (file {size_mb:.1f} MB), 8 text columns of 2-10 categories, "
        f"36 marginals (28 maximal); {len(runs[ours])} interleaved rounds, medians; all on "
        f"{threads()} threads",
        f"{'part':<20} {'median s':>9} {'rows/s':>12} {'ours / it':>10} {'peak RSS MB':>12}"
        f" {'+agg MB':>8} {'ours +agg / it':>15}  runs",
    ]
    for p, v in runs.items():
        lines.append(
            f"{p:<20} {med[p]:>9.3f} {rows / med[p]:>12,.0f} {med[ours] / med[p]:>10.2f} "
            f"{rss[p]:>12.0f} {grew[p]:>8.0f} {grew[ours] / grew[p]:>15.2f}  "
            f"{[round(r['seconds'], 3) for r in v]}"
        )
    return lines
