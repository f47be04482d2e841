"""Result entries of the issue-14 kinds, made the way the worker makes them.

Known true aggregates go through dpportal.privacy's mechanisms (grouped means,
quantiles by permute-and-flip, spread), and the stored entries follow
/work/wt/briefs/stats14-format.md ("Stored RESULT entry"). `add_stats_entries`
appends them to a release built by tests.public_builders, with their frozen
specification, so the public page, downloads and members' page can be tested
without a worker.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np

from dpportal.privacy import (
    grouped_release,
    joint_quantiles,
    quantile_intervals,
    quantiles,
    sensitivity,
    spread,
    spread_parts,
)
from dpportal.privacy.rng import SeededTestRandom
from releases.kinds import quantiles as quantile_kind
from releases.models import Release, ReleaseResult, Statistic
from tests.public_builders import _domain

PLANS = ["Free", "25%", "50%"]
SEXES = ["female", "male"]
SPENDING_BOUNDS = (Fraction(0), Fraction(10000))
# true per-cell (sum of spending in grid units is derived below), rows per cell
TRUE_ROWS = [[400, 380], [300, 310], [120, 150]]
TRUE_MEAN = [[900, 850], [700, 650], [400, 420]]
QUANTILES = ["0.25", "0.5", "0.75"]


def _text(value: Fraction) -> str:
    return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


def grouped_mean_entry(*, epsilon: Fraction, rng) -> dict:
    lo, hi = SPENDING_BOUNDS
    gamma = sensitivity.sum_granularity(lo, hi, epsilon=epsilon / 2)
    rows = [n for line in TRUE_ROWS for n in line]
    means = [m for line in TRUE_MEAN for m in line]
    units = [int(Fraction(m) / gamma) * n for m, n in zip(means, rows, strict=True)]
    result = grouped_release.release_grouped_means(
        units, rows, lower=lo, upper=hi, granularity=gamma, mechanism="laplace",
        epsilon=epsilon, confidence="0.95", rng=rng,
    )  # fmt: skip
    explanation = result.to_dict()
    return {
        "kind": "grouped_mean",
        "label": "Mean spending by plan and sex",
        "columns": ["spending"],
        "group_columns": ["plan", "sex"],
        "cells": [f"{p} / {s}" for p in PLANS for s in SEXES],
        "shape": [len(PLANS), len(SEXES)],
        "row_labels": PLANS,
        "col_labels": SEXES,
        "values": list(explanation["estimates"]),
        "explanation": explanation,
    }


def quantiles_entry(*, epsilon: Fraction, rng, joint: bool = True) -> dict:
    """Quartiles as a release stores them: drawn jointly with their confidence intervals
    (at 95 %), or with `joint=False` one by one without intervals, as older releases were."""
    grid = quantiles.candidate_grid(0, 10000, 100)
    counter = quantiles.RankCounter(grid)
    counter.add(np.linspace(0, 4000, 2001))
    extra: dict = {}
    if joint:
        points, ends = quantile_kind.budget(epsilon)
        result = joint_quantiles.release_joint_quantiles(
            counter.rank_counts(), counter.n, candidates=grid, quantiles=QUANTILES,
            epsilon=points, rng=rng,
        )  # fmt: skip
        intervals = quantile_intervals.release_quantile_intervals(
            counter.rank_counts(), counter.n, candidates=grid, quantiles=QUANTILES,
            epsilon=ends, confidence=Fraction(95, 100), rng=rng,
        )  # fmt: skip
        extra = {"method": "joint", "intervals": intervals.to_dict(),
                 "interval_confidence": "0.95"}  # fmt: skip
    else:
        result = quantiles.release_quantiles(
            counter.rank_counts(), counter.n, candidates=grid, quantiles=QUANTILES,
            epsilon=epsilon, rng=rng,
        )  # fmt: skip
    explanation = result.to_dict()
    return {
        "kind": "quantiles",
        "label": "Spending quartiles",
        "columns": ["spending"],
        "group_columns": [],
        "cells": ["Lower quartile", "Median", "Upper quartile"],
        "shape": None,
        "quantiles": QUANTILES,
        "values": [part["value"] for part in explanation["quantiles"]],
        "explanation": explanation,
        **extra,
    }


def spread_entry(*, epsilon: Fraction, rng, kind: str = "stddev") -> dict:
    lo, hi = SPENDING_BOUNDS
    gamma = spread_parts.spread_granularity(lo, hi, epsilon=epsilon)
    aggregator = spread_parts.SpreadAggregator(lower=lo, upper=hi, granularity=gamma)
    aggregator.add(np.random.default_rng(3).normal(800, 300, size=1500).clip(0, 10000))
    result = spread.release_spread(
        aggregator.counts, aggregator.sums, aggregator.squares, lower=lo, upper=hi,
        granularity=gamma, mechanism="laplace", epsilon=epsilon, confidence="0.95", rng=rng,
    )  # fmt: skip
    explanation = result.to_dict()
    key = "sd" if kind == "stddev" else "variance"
    return {
        "kind": kind,
        "label": "Standard deviation of spending" if kind == "stddev" else "Variance of spending",
        "columns": ["spending"],
        "group_columns": [],
        "cells": ["All rows"],
        "shape": None,
        "values": [cell[key] for cell in explanation["cells"]],
        "explanation": explanation,
    }


def stats_entries(*, epsilon: str = "0.5", seed: int = 14) -> list[dict]:
    """A grouped mean (two grouping columns), quartiles and a standard deviation."""
    rng = SeededTestRandom(seed)
    eps = Fraction(epsilon)
    entries = [
        grouped_mean_entry(epsilon=eps, rng=rng),
        quantiles_entry(epsilon=eps, rng=rng),
        spread_entry(epsilon=eps, rng=rng),
    ]
    for entry in entries:
        entry.update(category=None, epsilon=epsilon, delta="0")
        entry.setdefault("row_labels", None)
        entry.setdefault("col_labels", None)
    return entries


def _spec(entry: dict) -> dict:
    spending = _domain("spending", kind="numeric", type="float", lower="0", upper="10000")
    plan = _domain("plan", categories=PLANS)
    sex = _domain("sex", categories=SEXES, missing="category")
    spec = {
        "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
        "columns": [spending], "groups": [], "category": None,
        "epsilon": entry["epsilon"], "delta": entry["delta"],
    }  # fmt: skip
    explanation = entry["explanation"]
    if entry["kind"] == "grouped_mean":
        spec.update(groups=[plan, sex], lower="0", upper="10000", sum_share="1/2",
                    granularity=explanation["sum"]["granularity"])  # fmt: skip
    elif entry["kind"] == "quantiles":
        spec.update(quantiles=QUANTILES, grid={"lower": "0", "upper": "10000", "step": "100"},
                    candidates=explanation["candidates"])  # fmt: skip
        if entry.get("method"):
            spec.update(method=entry["method"], interval_share="1/2")
    else:
        spec.update(lower="0", upper="10000", granularity=explanation["granularity"],
                    shares=["1/4", "1/4", "1/2"])  # fmt: skip
    return spec


def add_stats_entries(release: Release, entries: list[dict] | None = None) -> list[dict]:
    """Append the entries to the release's result and frozen spec (positions after the rest)."""
    entries = entries if entries is not None else stats_entries()
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    start = len(payload["statistics"])
    spec = dict(release.spec)
    for i, entry in enumerate(entries):
        entry["position"] = start + i
        payload["statistics"].append(entry)
        spec["statistics"] = [*spec["statistics"], _spec(entry)]
        Statistic.objects.create(
            release=release, position=entry["position"], kind=entry["kind"],
            label=entry["label"], epsilon=Decimal(entry["epsilon"]), delta=Decimal(0),
        )  # fmt: skip
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    Release.objects.filter(pk=release.pk).update(spec=spec)
    return entries
