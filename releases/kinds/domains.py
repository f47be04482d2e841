"""A declared column's public domain as a frozen specification states it.

Categories, bounds, bin edges and the missing-value rule, all as exact strings, so
the specification's JSON (and its hash) is canonical. The categories' labels
(code -> {"en", "zh-hans"}) are frozen with them at submission, so a published
release keeps the labels it was approved with whatever the owner changes later;
`cell_labels` reads them back for a statistic's cells.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from budgets.amounts import fmt
from datasets.models import Column
from dpportal.bilingual import EN, ZH, category_label


def column_domain(column: Column) -> dict[str, Any]:
    domain = {
        "name": column.name,
        "kind": column.kind,
        "type": column.suggested_type,
        "categories": [str(c) for c in (column.categories or [])],
        "lower": fmt(column.lower) if column.lower is not None else None,
        "upper": fmt(column.upper) if column.upper is not None else None,
        "bin_edges": [str(e) for e in (column.bin_edges or [])],
        "missing": column.missing,
    }
    # only when declared, so that specifications without them keep their form
    if column.missing_codes:
        domain["missing_codes"] = [str(c) for c in column.missing_codes]
    if column.label or column.label_zh:
        domain["label"] = {"en": column.label, "zh-hans": column.label_zh}
    if column.date:
        domain["date"] = {k: str(v) for k, v in sorted(column.date.items())}
    labels = _declared_labels(column)
    if labels:
        domain["category_labels"] = labels
    estimate = _bounds_estimate(column)
    if estimate:
        domain["bounds_estimate"] = estimate
    if column.categories_source and column.kind == Column.Kind.CATEGORICAL:
        domain["categories_source"] = dict(column.categories_source)
    return domain


def _bounds_estimate(column: Column) -> dict[str, Any]:
    """Where the column's declared bounds came from, when a private estimate gave them:
    only while the declared bounds are still the ones the estimate gave (bounds the
    owner typed since are the owner's knowledge, whatever the stored provenance says)."""
    estimate = column.bounds_estimate or {}
    if not estimate:
        return {}
    declared = {
        "lower": None if column.lower is None else fmt(column.lower),
        "upper": None if column.upper is None else fmt(column.upper),
    }
    for end in ("lower", "upper"):
        if estimate.get(end) is not None and fmt(Decimal(str(estimate[end]))) != declared[end]:
            return {}
    keys = ("release", "title", "epsilon", "lower", "upper", "model")
    return {k: estimate[k] for k in keys if k in estimate}


def _declared_labels(column: Column) -> dict[str, dict[str, str]]:
    """The labels of the column's declared categories (none for another kind)."""
    if column.kind != Column.Kind.CATEGORICAL or column.date:
        return {}
    stored = column.category_labels or {}
    out = {}
    for code in column.categories or []:
        entry = stored.get(str(code)) or {}
        texts = {EN: str(entry.get(EN) or ""), ZH: str(entry.get(ZH) or "")}
        if texts[EN] or texts[ZH]:
            out[str(code)] = texts
    return out


def axis_domains(entry: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The frozen domains that name a statistic's cells, in the order of its axes: the
    grouping columns of a grouped kind, else the columns of a count by category, a
    histogram or a most-common-category selection; none for the other kinds."""
    if not entry:
        return []
    if entry.get("groups"):
        return list(entry["groups"])
    if entry.get("kind") in ("count", "histogram", "argmax"):
        return list(entry.get("columns") or [])
    return []


def _label(domain: dict[str, Any], code: str) -> dict[str, str] | None:
    """A declared code's label in both languages, each falling back to the other, or None
    (a code without a label, dpportal's own "Other"/"Missing" cells, a numeric bin)."""
    labels = domain.get("category_labels") or {}
    if code not in labels or code not in (domain.get("categories") or []):
        return None
    return {EN: category_label(labels, code, EN), ZH: category_label(labels, code, ZH)}


def cell_labels(entry: dict[str, Any] | None, *, cells: list[str], row_labels: list[str],
                col_labels: list[str]) -> dict[str, list[dict[str, str] | None]]:  # fmt: skip
    """The owner's labels of a statistic's cells from its frozen specification `entry`:
    {"cells": [...], "rows": [...], "columns": [...]}, one {"en", "zh-hans"} (or None:
    show the cell as it is) per cell, per row and per column of a two-way table. A
    two-way cell "r / c" is labelled by its row's and its column's labels."""
    domains = axis_domains(entry)
    out: dict[str, list[dict[str, str] | None]] = {"cells": [], "rows": [], "columns": []}
    if not any(d.get("category_labels") for d in domains):
        return out
    if len(domains) == 2 and row_labels and col_labels:
        rows = [_label(domains[0], str(r)) for r in row_labels]
        cols = [_label(domains[1], str(c)) for c in col_labels]
        out["rows"], out["columns"] = rows, cols
        for i, row in enumerate(rows):
            for j, col in enumerate(cols):
                if row is None and col is None:
                    out["cells"].append(None)
                    continue
                out["cells"].append(
                    {
                        lang: f"{(row or {}).get(lang) or row_labels[i]} / "
                        f"{(col or {}).get(lang) or col_labels[j]}"
                        for lang in (EN, ZH)
                    }
                )
        return out
    out["cells"] = [_label(domains[0], str(c)) for c in cells]
    return out
