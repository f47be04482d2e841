"""The parts bench/compute.py times, each run alone in a child process (its own peak RSS).

- before-row / before-person: today's numpy readers (releases.compute.reading:
  row-group chunks; the person unit through keep_mask), then the noise;
- plan-row / plan-person: the aggregation plan on DuckDB (releases.compute.
  duckdb_engine.run_plan, the task's code), then the noise; plan-person bounds
  persons over the dataset itself (three passes: the path without a copy);
- copy-person: the same through the dataset's person-rows copy (datasets.
  person_rows; made once beforehand by copy-build, which bench/compute.py times
  apart: a worker makes it once per dataset when the owner confirms the unit);
- duckdb-person: the person-level floor, DuckDB alone (its defaults: all the memory it
  wants): the rows with at most L per person kept by `QUALIFY row_number() OVER
  (PARTITION BY person ORDER BY keyed hash, row) <= L` into a temporary table, then
  the same plain aggregates as duckdb's;
- duckdb / polars: the floors, the same four statistics as plain aggregates (no
  person bound, no grid): a 50-category histogram, a 50 x 16 2-D histogram, a
  sum clipped to [0, 1000], a mean clipped to [0, 1000].
"""

from __future__ import annotations

import os
import resource
import time
from fractions import Fraction
from pathlib import Path

CATS50 = [f"c{i:02d}" for i in range(50)]
CATS16 = [f"k{i:02d}" for i in range(16)]
LOWER, UPPER = 0, 1000
ROW_GROUP = 262_144


def generate(path: Path, rows: int) -> None:
    """N rows: cat50 (50 categories + one other), cat16, x (1 % missing), y, person.

    person: drawn from 1.8 N IDs, so about 0.77 N people (7.7M at 10M rows).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    gen = np.random.default_rng(1)  # benchmark DATA, not noise
    schema = pa.schema([("cat50", pa.string()), ("cat16", pa.string()), ("x", pa.float64()),
                        ("y", pa.int64()), ("person", pa.string())])  # fmt: skip
    cats50 = np.array([*CATS50, "zz"], dtype=object)
    cats16 = np.array(CATS16, dtype=object)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            n = min(ROW_GROUP, rows - start)
            ids = pa.array(gen.integers(0, int(rows * 1.8), n)).cast(pa.string())
            table = pa.table(
                {
                    "cat50": pa.array(cats50[gen.integers(0, 51, n)], type=pa.string()),
                    "cat16": pa.array(cats16[gen.integers(0, 16, n)], type=pa.string()),
                    "x": pa.array(gen.gamma(2.0, 150.0, n), mask=gen.random(n) < 0.01),
                    "y": pa.array(gen.integers(-10, 1100, n), type=pa.int64()),
                    "person": pc.binary_join_element_wise("p", ids, ""),
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
    bounds = {"lower": str(LOWER), "upper": str(UPPER)}
    return [
        {**common, "position": 0, "kind": "histogram", "columns": [domain("cat50", CATS50)]},
        {**common, "position": 1, "kind": "histogram",
         "columns": [domain("cat50", CATS50), domain("cat16", CATS16)]},
        {**common, "position": 2, "kind": "sum", "columns": [x], **bounds, "granularity": g_sum},
        {**common, "position": 3, "kind": "mean", "columns": [y], **bounds, "granularity": g_mean},
    ]  # fmt: skip


def dataset_id(path: Path) -> int:
    """The benchmark file's stand-in dataset id (its row count): where its copy lives."""
    return int(path.stem.rsplit("-", 1)[1])


def _spec(path: Path, bound: int, person: bool, copy: bool = False) -> dict:
    import django
    from django.conf import settings

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    settings.MEDIA_ROOT = str(path.parent)
    unit = {"id_column": "person" if person else "", "contribution_bound": bound if person else 1}
    from releases import compute

    for s in spec_statistics():  # warm the lazy pyarrow imports (a worker has them): not timed
        compute.StatisticReader.from_spec(s)
    spec = {"parquet_file": path.name, "statistics": spec_statistics(), "privacy_unit": unit}
    if copy:  # without a dataset id the copy is never looked for
        spec["dataset"] = dataset_id(path)
    return spec


def _noise(spec: dict, aggregates: list) -> None:
    from releases import compute, dp

    for s, a in zip(spec["statistics"], aggregates, strict=True):
        dp.noisy_entry(entry=s, aggregate=a, mechanism="laplace", confidence="0.95",
                       contribution_bound=spec["privacy_unit"]["contribution_bound"],
                       cells=compute.StatisticReader.from_spec(s).axes)  # fmt: skip


def run_before(path: Path, bound: int, person: bool) -> float:
    spec = _spec(path, bound, person)
    import pyarrow.parquet as pq

    from releases import compute

    start = time.perf_counter()  # what run.release_aggregate_numpy does, minus the progress rows
    readers = [compute.StatisticReader.from_spec(s) for s in spec["statistics"]]
    parquet = pq.ParquetFile(path)
    mask = compute.keep_mask(parquet, id_column="person", bound=bound) if person else None
    aggregates = compute.aggregate_row_groups(
        parquet=parquet, readers=readers, row_groups=range(parquet.num_row_groups), mask=mask
    )
    _noise(spec, aggregates)
    return time.perf_counter() - start


def run_plan(path: Path, bound: int, person: bool, copy: bool = False) -> float:
    spec = _spec(path, bound, person, copy)
    from releases.compute import duckdb_engine, person_rows

    assert (person_rows.copy_for(spec) is not None) == copy, "copy-build first"
    start = time.perf_counter()
    plan = duckdb_engine.duckdb_plan(spec)
    assert plan is not None
    _noise(spec, duckdb_engine.run_plan(spec, plan))
    return time.perf_counter() - start


def run_copy(path: Path, bound: int, person: bool) -> float:
    return run_plan(path, bound, person, copy=True)


def run_build(path: Path, bound: int, person: bool) -> float:
    """What the worker's task does once per dataset (datasets.services.person_rows)."""
    _spec(path, bound, person)
    from django.conf import settings

    from datasets import person_rows

    start = time.perf_counter()
    made = person_rows.build(
        paths=[str(path)],
        id_column="person",
        identity=person_rows.source_identity(parquet_file=path.name, external=None),
        target=person_rows.local_path(dataset_id(path)),
        memory_mb=settings.DPPORTAL_COMPUTE_MEMORY_MB,
        threads=settings.DPPORTAL_COMPUTE_THREADS or os.cpu_count() or 1,
    )
    assert made
    return time.perf_counter() - start


def run_duckdb(path: Path, bound: int, person: bool) -> float:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect()
    src = f"read_parquet('{path}')"
    con.sql(f"SELECT cat50, count(*) FROM {src} GROUP BY cat50").fetchall()
    con.sql(f"SELECT cat50, cat16, count(*) FROM {src} GROUP BY cat50, cat16").fetchall()
    con.sql(
        f"SELECT sum(least(greatest(x, {LOWER}), {UPPER})), "
        f"avg(least(greatest(y, {LOWER}), {UPPER})) FROM {src}"
    ).fetchall()
    return time.perf_counter() - start


def run_duckdb_person(path: Path, bound: int, person: bool) -> float:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect()
    src = f"read_parquet('{path}', file_row_number = true)"
    h = "hash(person, cat50, cat16, x, y, 12345::UBIGINT)"
    con.execute(
        f"CREATE TEMP TABLE kept AS SELECT cat50, cat16, x, y FROM {src} "
        f"WHERE person IS NOT NULL QUALIFY row_number() OVER "
        f"(PARTITION BY person ORDER BY {h}, file_row_number) <= {bound}"
    )
    con.sql("SELECT cat50, count(*) FROM kept GROUP BY cat50").fetchall()
    con.sql("SELECT cat50, cat16, count(*) FROM kept GROUP BY cat50, cat16").fetchall()
    con.sql(
        f"SELECT sum(least(greatest(x, {LOWER}), {UPPER})), "
        f"avg(least(greatest(y, {LOWER}), {UPPER})) FROM kept"
    ).fetchall()
    return time.perf_counter() - start


def run_polars(path: Path, bound: int, person: bool) -> float:
    import polars as pl

    start = time.perf_counter()
    scan = pl.scan_parquet(path)
    pl.collect_all(
        [
            scan.group_by("cat50").len(),
            scan.group_by("cat50", "cat16").len(),
            scan.select(
                pl.col("x").clip(LOWER, UPPER).sum(), pl.col("y").clip(LOWER, UPPER).mean()
            ),
        ]
    )
    return time.perf_counter() - start


BUILD = {"copy-build": (run_build, True)}  # once, before the timed rounds
PARTS = {
    "before-row": (run_before, False),
    "plan-row": (run_plan, False),
    "before-person": (run_before, True),
    "plan-person": (run_plan, True),
    "copy-person": (run_copy, True),
    "duckdb-person": (run_duckdb_person, True),
    "duckdb": (run_duckdb, False),
    "polars": (run_polars, False),
}


def run_part(name: str, path: Path, bound: int) -> dict:
    run, person = {**PARTS, **BUILD}[name]
    seconds = run(path, bound, person)
    return {
        "seconds": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
