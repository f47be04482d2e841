"""Cross-tabulations through the real compute path: the per-cell intervals cover the
true counts at their confidence, and every published table is consistent.

Each run is what the compute task does with one statistic: the rows read into the
maximal tables' counts by the reader (releases.compute), then the kind's noisy_entry
(the residual measurements, drawn once, and the reconstruction), then the kind's
intervals as every surface reads them. The data are fixed (numpy generates them; no
released value comes from numpy); the noise comes from SeededTestRandom.

False failures: per confidence level, the share of (run, cell) pairs covered is
compared with nominal within 3 standard errors of a binomial over RUNS runs (each run's
cells are correlated, so the run count is the honest sample size; pooling cells only
lowers the variance). A correct interval fails one check with probability ~1.35e-3
under the normal approximation; the seeds are fixed, so the outcome is reproducible.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pyarrow as pa

from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds
from releases.kinds.crosstab import entry_workload

RUNS = 500

COLUMNS = [
    {"name": "region", "kind": "categorical", "categories": ["N", "S", "E"], "missing": "drop"},
    {"name": "sex", "kind": "categorical", "categories": ["F", "M"], "missing": "drop"},
    {"name": "age", "kind": "categorical", "categories": ["young", "mid", "old"],
     "missing": "category"},
]  # fmt: skip


def _entry() -> dict:
    return {
        "position": 0, "kind": "crosstab", "label": "", "columns": COLUMNS, "category": None,
        "marginals": [[0, 1], [0, 2], [1, 2]], "total": True, "epsilon": "0.5",
        "delta": "1e-6",
    }  # fmt: skip


def _rows() -> pa.Table:
    data = np.random.default_rng(29)
    n = 4000
    region = data.choice(["N", "S", "E", "W"], n, p=[0.4, 0.3, 0.25, 0.05])
    sex = data.choice(["F", "M"], n)
    age = data.choice(["young", "mid", "old", None], n, p=[0.3, 0.4, 0.25, 0.05])
    return pa.table({"region": region, "sex": sex, "age": age})


def _truth(table: pa.Table, entry: dict) -> dict[tuple[int, ...], np.ndarray]:
    """Every published table counted directly, row by row (the test's own oracle)."""
    reader = compute.StatisticReader.from_spec(entry)
    codes = [axis.codes(table.column(axis.name)) for axis in reader.axes]
    keep = np.logical_and.reduce([c >= 0 for c in codes])
    workload = entry_workload(entry)
    out = {}
    for m in workload.marginals:
        shape = workload.shape(m)
        if not m:
            out[m] = np.array(int(keep.sum()))
            continue
        flat = np.ravel_multi_index(tuple(codes[i][keep] for i in m), shape)
        out[m] = np.bincount(flat, minlength=math.prod(shape)).reshape(shape)
    return out


def test_crosstab_intervals_cover_and_tables_agree():
    entry = _entry()
    table = _rows()
    reader = compute.StatisticReader.from_spec(entry)
    aggregate = reader.aggregate(table, table.num_rows)
    truth = _truth(table, entry)
    kind = kinds.get("crosstab")
    workload = entry_workload(entry)
    levels = ("0.9", "0.95", "0.99")
    covered = dict.fromkeys(levels, 0.0)
    for run in range(RUNS):
        out = dp.noisy_entry(
            entry=entry, aggregate=aggregate, mechanism="gaussian", confidence="0.95",
            contribution_bound=1, cells=reader.axes, rng=SeededTestRandom(1000 + run),
        )  # fmt: skip
        expected = np.concatenate([np.ravel(truth[m]) for m in workload.marginals])
        for level in levels:
            cells = kind.intervals(out, confidence=level)
            low = np.array([c.low for c in cells])
            high = np.array([c.high for c in cells])
            covered[level] += float(np.mean((low <= expected) & (expected <= high)))
        if run < 20:  # consistency: each lower table the sum of each higher one
            values = np.asarray(kind.values(out))
            tables, start = {}, 0
            for m in workload.marginals:
                size = workload.cells(m)
                tables[m] = values[start : start + size].reshape(workload.shape(m))
                start += size
            for low_m, high_m in combinations(workload.marginals, 2):
                if set(low_m) < set(high_m):
                    drop = tuple(k for k, i in enumerate(high_m) if i not in low_m)
                    assert np.allclose(tables[high_m].sum(axis=drop), tables[low_m], atol=1e-6)
    for level in levels:
        c = float(Fraction(level))
        se = math.sqrt(c * (1 - c) / RUNS)
        print(f"coverage at {level}: {covered[level] / RUNS:.4f} (3 SE = {3 * se:.4f})")
        assert abs(covered[level] / RUNS - c) <= 3 * se, (level, covered[level] / RUNS)
