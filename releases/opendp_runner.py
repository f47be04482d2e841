"""The body of the OpenDP program a release's owner downloads (releases.opendp_program).

The product never imports this module: releases.opendp_program reads its source as
text and writes the release's parameters (RELEASE, a literal of typed values) between
its imports and its functions. It needs OpenDP's core Context API and Polars only to
read the file: OpenDP's own Polars API is tied to one Polars version, and this one
works with any.

Row-by-row steps (casting, declared cells, bins, the choice of at most L rows per
person) run in Polars before OpenDP sees the data. Each is a function of one row (or
of one person's rows), so it cannot increase how far two neighbouring datasets are
apart; OpenDP checks every step after them.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path
from typing import Any

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")

# --- the release ---


def load(path: str | Path) -> pl.DataFrame:
    """The data file as a Polars frame: Parquet by its suffix, otherwise CSV (every
    column read as text, then cast as each statistic declares, as the portal does)."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        return pl.read_parquet(path)
    return pl.read_csv(path, infer_schema=False)


def people_bounded(frame: pl.DataFrame, release: dict[str, Any]) -> pl.DataFrame:
    """At most L rows of each person (a uniformly random choice), when the privacy unit
    is a person named by an ID column; every row otherwise."""
    id_column, bound = release["id_column"], release["contribution_bound"]
    if not id_column:
        return frame
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=secrets.randbits(63))
    return shuffled.filter(pl.int_range(pl.len()).over(id_column) < bound)


def _missing(column: pl.Expr, codes: list[str]) -> pl.Expr:
    """True where a value is missing: null, or one of the column's declared missing codes."""
    missing = column.is_null()
    if codes:
        missing = missing | column.cast(pl.String).is_in(codes)
    return missing


def numbers(frame: pl.DataFrame, column: dict[str, Any]) -> list[float]:
    """The column's values as floats, missing and unreadable values dropped."""
    raw = pl.col(column["name"])
    value = raw.cast(pl.Float64, strict=False)
    kept = frame.select(
        pl.when(_missing(raw, column["missing_codes"])).then(None).otherwise(value).alias("v")
    )["v"]
    return [float(v) for v in kept.drop_nulls().drop_nans().to_list()]


def _cell_index(axis: dict[str, Any]) -> pl.Expr:
    """Each row's cell on one declared axis, as the portal numbers its cells; -1 for a row
    the statistic drops (a missing value when the column has no "Missing" cell)."""
    raw = pl.col(axis["name"])
    size = len(axis["cells"])
    if axis["categorical"]:
        categories = axis["categories"]
        found = raw.cast(pl.String).replace_strict(
            old=categories, new=list(range(len(categories))), default=len(categories)
        )
    else:
        edges = axis["edges"]
        clamped = raw.cast(pl.Float64, strict=False).clip(edges[0], edges[-1])
        found = pl.sum_horizontal([(clamped >= e).cast(pl.Int64) for e in edges[1:-1]])
        if len(edges) == 2:
            found = pl.lit(0, dtype=pl.Int64)
    missing = _missing(raw, axis["missing_codes"])
    if not axis["categorical"]:
        missing = missing | raw.cast(pl.Float64, strict=False).is_null()
    on_missing = size - 1 if axis["missing_cell"] else -1
    return pl.when(missing).then(on_missing).otherwise(found).cast(pl.Int64)


def cell_codes(frame: pl.DataFrame, axes: list[dict[str, Any]]) -> list[int]:
    """Each kept row's cell of a 1-D or 2-D table (row-major), rows any axis drops left out."""
    codes = [_cell_index(axis).alias(f"a{i}") for i, axis in enumerate(axes)]
    table = frame.select(codes).filter(pl.all_horizontal(pl.all() >= 0))
    if len(axes) == 1:
        return table["a0"].to_list()
    width = len(axes[1]["cells"])
    return (table["a0"] * width + table["a1"]).to_list()


def _context(data: list, domain, stat: dict[str, Any], release: dict[str, Any], weights):
    """One compositor for one statistic: the release's privacy unit, the statistic's own
    epsilon (and delta), split over its parts by `weights`."""
    if stat["delta"] > 0:
        loss = dp.loss_of(epsilon=stat["epsilon"], delta=stat["delta"])
    else:
        loss = dp.loss_of(epsilon=stat["epsilon"])
    return dp.Context.compositor(
        data=data,
        privacy_unit=dp.unit_of(contributions=release["contribution_bound"]),
        privacy_loss=loss,
        split_by_weights=weights,
        domain=domain,
    )


INTEGERS = dp.vector_domain(dp.atom_domain(T=int))
FLOATS = dp.vector_domain(dp.atom_domain(T=float, nan=False))


def _release(query, gaussian: bool, *, sensitivity: float, epsilon: float):
    """The query noised and released, its noise calibrated by OpenDP to the part's budget.
    A Gaussian scale is searched between sensitivity / (8 epsilon) and 64 sensitivity /
    epsilon (it lies well inside): OpenDP's search from 0 overflows for large sums."""
    if not gaussian:
        return query.laplace().release()
    return query.gaussian().release(
        bounds=(sensitivity / (8 * epsilon), 64 * sensitivity / epsilon)
    )


def run_counts(frame, stat, release) -> dict[str, Any]:
    """A count (all rows, or the rows of one cell) or a histogram over the declared cells."""
    gaussian = stat["mechanism"] == "gaussian"
    scale = {"sensitivity": float(release["contribution_bound"]), "epsilon": stat["epsilon"]}
    if not stat["axes"]:
        ctx = _context([0] * frame.height, INTEGERS, stat, release, [1.0])
        return {"values": [_release(ctx.query().count(), gaussian, **scale)]}
    codes = cell_codes(frame, stat["axes"])
    ctx = _context(codes, INTEGERS, stat, release, [1.0])
    metric = dp.L2Distance[int] if gaussian else dp.L1Distance[int]
    cells = [stat["target"]] if stat["target"] is not None else list(range(stat["cells"]))
    query = ctx.query().count_by_categories(categories=cells, null_category=False, MO=metric)
    return {"values": list(_release(query, gaussian, **scale))}


def run_argmax(frame, stat, release) -> dict[str, Any]:
    """The most common declared category: Laplace noise on every declared category's
    count (the vector is epsilon-DP), then only the index of the largest is shown."""
    declared = len(stat["axes"][0]["categories"])
    codes = [c for c in cell_codes(frame, stat["axes"]) if c < declared]
    ctx = _context(codes, INTEGERS, stat, release, [1.0])
    noisy = ctx.query().count_by_categories(categories=list(range(declared)),
                                            null_category=False).laplace().release()  # fmt: skip
    best = max(range(declared), key=lambda i: noisy[i])
    return {"argmax": stat["axes"][0]["cells"][best]}


def run_sum(frame, stat, release) -> dict[str, Any]:
    """A clipped sum, or a mean as a clipped sum over a count (the budget split as the
    portal splits it)."""
    gaussian = stat["mechanism"] == "gaussian"
    values = numbers(frame, stat["column"])
    bounds = (stat["lower"], stat["upper"])
    share, bound = stat["sum_share"], release["contribution_bound"]
    sums = {"sensitivity": bound * max(abs(b) for b in bounds), "epsilon": stat["epsilon"] * share}
    if share == 1:
        ctx = _context(values, FLOATS, stat, release, [1.0])
        return {"values": [_release(ctx.query().clamp(bounds).sum(), gaussian, **sums)]}
    ctx = _context(values, FLOATS, stat, release, [share, 1 - share])
    total = _release(ctx.query().clamp(bounds).sum(), gaussian, **sums)
    counts = {"sensitivity": float(bound), "epsilon": stat["epsilon"] * (1 - share)}
    count = _release(ctx.query().count(), gaussian, **counts)
    mean = min(max(total / count, bounds[0]), bounds[1]) if count > 0 else None
    return {"values": [mean], "sum": total, "count": count}


def run_quantiles(frame, stat, release) -> dict[str, Any]:
    """Each quantile chosen among the public candidates by permute-and-flip (OpenDP's
    private_quantile), one at a time, the quantiles' budget split evenly over them."""
    values = numbers(frame, stat["column"])
    k = len(stat["quantiles"])
    points = {**stat, "epsilon": stat["epsilon_points"], "delta": 0.0}
    ctx = _context(values, FLOATS, points, release, [1.0] * k)
    out = []
    for q in stat["quantiles"]:
        query = ctx.query().private_quantile(dp.max_divergence(), stat["candidates"], q)
        out.append(query.release())
    return {"values": out}


def run_missing(frame, stat, release) -> dict[str, Any]:
    return {"missing": stat["reason"]}


RUNNERS = {
    "counts": run_counts,
    "argmax": run_argmax,
    "sum": run_sum,
    "quantiles": run_quantiles,
    "missing": run_missing,
}


def release_once(frame: pl.DataFrame, release: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statistic once, with fresh noise: one result per statistic, in order."""
    bounded = people_bounded(frame, release)
    return [
        {"label": stat["label"], **RUNNERS[stat["program"]](bounded, stat, release)}
        for stat in release["statistics"]
    ]


def _line(result: dict[str, Any]) -> str:
    if "missing" in result:
        return f"not available in OpenDP: {result['label']} ({result['missing']})"
    if "argmax" in result:
        return f"{result['label']}: {result['argmax']}"
    return f"{result['label']}: {', '.join(repr(v) for v in result['values'])}"


def main(argv: list[str], release: dict[str, Any]) -> int:
    parser = argparse.ArgumentParser(description=f"Release {release['id']} with OpenDP.")
    parser.add_argument("data", help="the data file (CSV or Parquet)")
    parser.add_argument(
        "--i-understand-this-spends-privacy-budget",
        action="store_true",
        dest="confirmed",
        help="required: each run spends the budget again",
    )
    args = parser.parse_args(argv)
    if not args.confirmed:
        print(BUDGET_WARNING, file=sys.stderr)
        print("Pass --i-understand-this-spends-privacy-budget to run it.", file=sys.stderr)
        return 2
    for result in release_once(load(args.data), release):
        print(_line(result))
    return 0


BUDGET_WARNING = (
    "WARNING: every run of this program on the real data spends its privacy budget "
    "AGAIN, outside the portal's ledger."
)
