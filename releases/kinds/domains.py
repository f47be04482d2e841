"""A declared column's public domain as a frozen specification states it.

Categories, bounds, bin edges and the missing-value rule, all as exact strings, so
the specification's JSON (and its hash) is canonical.
"""

from __future__ import annotations

from typing import Any

from budgets.amounts import fmt
from datasets.models import Column


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
    return domain
