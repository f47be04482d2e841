"""A statistic's epsilon is parsed once where it enters the math, not in every function.

For every registered kind and mechanism, noising a true aggregate (the function the
compute task calls) converts and checks an epsilon once for the statistic and at
most twice for each part it splits its epsilon into (a mean's sum and count, a
spread's three parts, each a new number): never once per step of a calibration
search, as when every function re-validated the same number (up to 271 times for a
Gaussian spread).
"""

from __future__ import annotations

import collections
from decimal import Decimal
from types import SimpleNamespace

import pytest

from dpportal.privacy import params
from dpportal.privacy.unbounded_bounds import SearchGrid
from releases import dp, kinds

AGGREGATES = {
    "count": 10,
    "histogram": [1, 2, 3, 4],
    "argmax": [5, 1, 2],
    "sum": 100,
    "mean": [100, 10],
    "grouped_sum": [1, 2, 3, 4],
    "grouped_mean": [[1, 2, 3, 4], [1, 1, 1, 1]],
    "quantiles": [1] * 22,
    "stddev": [[10, 10, 10, 10], [1, 1, 1, 1], [5, 5, 5, 5]],
    "variance": [[10, 10, 10, 10], [1, 1, 1, 1], [5, 5, 5, 5]],
    "crosstab": [[1, 2, 3, 4]],
    # private bounds: counts per cell of the search grid of SEARCH (2 * steps + 2 cells)
    "bounds": [3] * (2 * SearchGrid.of(limit=1000).steps() + 2),
    "keys": {"a": 1000, "b": 500, "c": 1},
    "rows_per_person": [3] * 28,  # the buckets of cap 100 (the stand-in's upper)
}
SEARCH = {"ends": "both", "outside": 5, "centre": "0", "unit": "1", "limit": "1000"}
#: a cross-tabulation's frozen columns and tables (one column: its table and the total)
CROSSTAB = {
    "columns": [
        {"name": "x", "kind": "categorical", "categories": ["a", "b", "c"], "missing": "drop"}
    ],
    "marginals": [[0]],
    "total": True,
}


def _axis(labels):
    return SimpleNamespace(labels=labels, categories=labels)


def _spends_delta(kind, mechanism: str) -> bool:
    """A Gaussian statistic, or one that a Laplace release cannot hold (it needs a delta)."""
    if kind.pure:
        return False
    return kind.mechanism(mechanism) == "gaussian" or bool(kind.mechanism_problem("laplace"))


def _entry(name: str, mechanism: str) -> dict:
    kind = kinds.get(name)
    stat = SimpleNamespace(
        lower=Decimal(0), upper=Decimal(100), epsilon=Decimal("0.5"), step=Decimal(5),
        group_column=None, group_column2=None, quantiles=["0.5"], column=None, n_guess=None,
        search=SEARCH,
    )  # fmt: skip
    entry = {
        "position": 0, "kind": name, "label": name, "columns": [{"name": "x"}],
        "category": None, "epsilon": "0.5",
        "delta": "0.000001" if _spends_delta(kind, mechanism) else "0",
        **kind.spec_fields(stat, contribution_bound=2),
    }  # fmt: skip
    if kind.grouped:
        entry["groups"] = [{"name": "g"}]
    if kind.aggregate == "marginals":
        entry.update(CROSSTAB)
    return entry


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("name", list(kinds.REGISTRY))
def test_a_statistic_epsilon_is_parsed_once_not_per_function(name, mechanism, monkeypatch):
    kind = kinds.get(name)
    if name not in AGGREGATES:
        pytest.fail(f"add a true aggregate for the kind {name!r}")
    counts: collections.Counter = collections.Counter()
    convert = params.to_fraction

    def counting(value, what):
        counts[what] += 1
        return convert(value, what)

    monkeypatch.setattr(params, "to_fraction", counting)
    entry = _entry(name, mechanism)
    axes = [_axis(["a", "b", "c"])] if name == "argmax" else [_axis(["a", "b", "c", "Other"])]
    out = dp.noisy_entry(
        entry=entry, aggregate=AGGREGATES[name], mechanism=kind.mechanism(mechanism),
        confidence="0.95", contribution_bound=2, cells=axes,
    )  # fmt: skip
    assert out["values"] or out.get("argmax") or out.get("bounds")
    parts = max(1, len(kind.part_units(granularity=1)))
    assert 1 <= counts["epsilon"] <= 1 + 2 * parts, counts
