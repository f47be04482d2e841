"""Helpers for the releases tests: a ready dataset on disk, releases built through the services.

The true aggregates are computed here independently (plain numpy on the same
file), so tests can check the stored values are noisy and never the truth.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings
from django.utils import timezone

from datasets.models import Column, Dataset
from releases import lifecycle, services

REGIONS = ["north", "south", "east", "west"]


def write_dataset_file(
    *, name: str, rows: int, seed: int = 7, row_group_size: int = 2000, people: int | None = None
) -> str:
    """A Parquet file under MEDIA_ROOT; returns its path relative to MEDIA_ROOT."""
    gen = np.random.default_rng(seed)  # test DATA, not noise
    region = np.array(REGIONS + ["elsewhere"])[gen.integers(0, 5, rows)].astype(object)
    region[gen.random(rows) < 0.03] = None
    age = gen.integers(0, 110, rows).astype(np.int64)
    income = np.round(gen.gamma(2.0, 20000.0, rows), 2)
    income_mask = gen.random(rows) < 0.02
    n_people = people or rows
    person = np.array([f"p{i}" for i in gen.integers(0, n_people, rows)], dtype=object)
    table = pa.table(
        {
            "person": pa.array(person, type=pa.string()),
            "region": pa.array(region, type=pa.string()),
            "age": pa.array(age, type=pa.int64()),
            "income": pa.array(income, type=pa.float64(), mask=income_mask),
            "secret": pa.array(gen.integers(0, 10, rows), type=pa.int64()),
        }
    )
    relative = f"datasets/{name}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return relative


def make_dataset(
    *,
    project,
    owner,
    rows: int = 5000,
    name: str = "survey",
    id_column: str = "",
    bound: int = 1,
    row_group_size: int = 2000,
    people: int | None = None,
    status: str = Dataset.Status.READY,
    unit_confirmed: bool = True,
) -> Dataset:
    relative = write_dataset_file(
        name=f"{name}-{project.pk}", rows=rows, row_group_size=row_group_size, people=people
    )
    dataset = Dataset.objects.create(
        project=project,
        name=name,
        uploaded_by=owner,
        parquet_file=relative,
        status=status,
        id_column=id_column,
        contribution_bound=bound,
        declared=True,
        # the owner's explicit confirmation of the privacy unit (datasets.selectors)
        unit_confirmed_at=timezone.now() if unit_confirmed else None,
        unit_confirmed_by=owner if unit_confirmed else None,
    )
    Column.objects.create(
        dataset=dataset, name="person", position=0, suggested_type="string", kind="excluded"
    )
    Column.objects.create(
        dataset=dataset,
        name="region",
        position=1,
        suggested_type="string",
        kind="categorical",
        categories=REGIONS,
        missing="category",
    )
    Column.objects.create(
        dataset=dataset,
        name="age",
        position=2,
        suggested_type="integer",
        kind="numeric",
        lower=Decimal(0),
        upper=Decimal(100),
        bin_edges=[0, 18, 40, 65, 100],
    )
    Column.objects.create(
        dataset=dataset,
        name="income",
        position=3,
        suggested_type="float",
        kind="numeric",
        lower=Decimal(0),
        upper=Decimal(150000),
    )
    Column.objects.create(
        dataset=dataset, name="secret", position=4, suggested_type="integer", kind="excluded"
    )
    return dataset


def full_statistics() -> list[dict]:
    return [
        {"kind": "count"},
        {"kind": "count", "column": "region", "category": "south"},
        {"kind": "histogram", "column": "region"},
        {"kind": "histogram", "column": "region", "column2": "age"},
        {"kind": "sum", "column": "income"},
        {"kind": "mean", "column": "age", "n_guess": 5000},
        {"kind": "argmax", "column": "region"},
    ]


def builder_data(dataset, *, statistics=None, epsilon="0.7", **extra) -> dict:
    data = {
        "title": "Survey 2026",
        "dataset": dataset.pk,
        "mechanism": "laplace",
        "confidence": "0.95",
        "epsilon": epsilon,
        "statistics": statistics if statistics is not None else full_statistics(),
    }
    data.update(extra)
    return data


def draft(*, project, owner, dataset, **kwargs):
    return services.release_save_draft(
        project=project, actor=owner, data=builder_data(dataset, **kwargs)
    )


def submitted(*, project, owner, dataset, **kwargs):
    release = draft(project=project, owner=owner, dataset=dataset, **kwargs)
    return lifecycle.release_submit(release=release, actor=owner)


def true_values(dataset, *, mask=None) -> dict[str, object]:
    """Independent truth for the default statistics (row-level privacy unit)."""
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    region = table.column("region").to_pylist()
    age = np.asarray(table.column("age").to_numpy(), dtype=np.float64)
    income = table.column("income").to_pylist()
    n = table.num_rows
    region_cells = [sum(1 for r in region if r == c) for c in REGIONS]
    other = sum(1 for r in region if r is not None and r not in REGIONS)
    missing = sum(1 for r in region if r is None)
    income_sum = sum(min(max(v, 0.0), 150000.0) for v in income if v is not None)
    return {
        "count": n,
        "south": region_cells[1],
        "region_hist": [*region_cells, other, missing],
        "income_sum": income_sum,
        "age_mean": float(np.clip(age, 0, 100).mean()),
        "age_sum": float(np.clip(age, 0, 100).sum()),
    }
