"""A synthetic, census-like CSV for the demo and the ingest benchmark.

Deterministic (numpy's seeded generator): this is made-up INPUT data, never noise.
Written in chunks, so memory stays flat for any number of rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

REGIONS = [f"Region {i:02d}" for i in range(1, 51)]
EDUCATION = ["none", "primary", "secondary", "vocational", "bachelor", "master", "doctorate"]
EDUCATION_WEIGHTS = np.array([0.04, 0.16, 0.34, 0.18, 0.18, 0.08, 0.02])
SEXES = ["female", "male"]
CHUNK_ROWS = 250_000


def census_chunk(rng: np.random.Generator, *, rows: int, first_row: int) -> pa.Table:
    """`rows` synthetic people-rows; about one person in five appears on several rows."""
    region_weights = 1.0 / np.arange(1, len(REGIONS) + 1) ** 1.1  # skewed, Zipf-like
    region_weights /= region_weights.sum()
    # Person ids: row i belongs to person floor(i * 0.8) shuffled a little, so
    # some people span two or more rows.
    index = np.arange(first_row, first_row + rows)
    person = (index * 4) // 5 + 100_000
    age = rng.integers(18, 91, size=rows)
    sex = rng.choice(len(SEXES), size=rows)
    region = rng.choice(len(REGIONS), size=rows, p=region_weights)
    education = rng.choice(len(EDUCATION), size=rows, p=EDUCATION_WEIGHTS)
    income = np.round(rng.lognormal(mean=10.3, sigma=0.8, size=rows), 2)
    income[rng.random(rows) < 0.001] = np.round(rng.pareto(1.2, size=1)[0] * 1e6 + 2e5, 2)
    hours = np.clip(np.round(rng.normal(38, 10, size=rows)), 0, 80).astype(np.int64)
    return pa.table(
        {
            "person_id": pa.array(person, pa.int64()),
            "age": pa.array(age, pa.int64()),
            "sex": pa.array(np.array(SEXES, dtype=object)[sex], pa.string()),
            "region": pa.array(np.array(REGIONS, dtype=object)[region], pa.string()),
            "education": pa.array(np.array(EDUCATION, dtype=object)[education], pa.string()),
            "income": pa.array(income, pa.float64()),
            "hours": pa.array(hours, pa.int64()),
        }
    )


def write_census_csv(path: Path, *, rows: int, seed: int = 2026) -> Path:
    """Write `rows` census-like rows (with a header) to `path` as CSV."""
    rng = np.random.default_rng(seed)
    writer = None
    try:
        for start in range(0, rows, CHUNK_ROWS):
            table = census_chunk(rng, rows=min(CHUNK_ROWS, rows - start), first_row=start)
            if writer is None:
                writer = pa_csv.CSVWriter(
                    str(path), table.schema, write_options=pa_csv.WriteOptions(quoting_style="none")
                )
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return path
