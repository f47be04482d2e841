"""A cross-tabulation on the release page: each of its tables as a table of counts.

The public data holds a cross-tabulation's cells flattened in table order with
"tables" saying where each table starts (releases.kinds.crosstab.public_tables);
here each table becomes blocks the template draws: the total as one line, a
one-column table as a list, a two-column table as a grid (rows by columns), a
three-column table as one grid per category of its first column; a two-column
table small enough for a readable heatmap gets one above it, and so does each grid of
a three-column table (small multiples); a one-column table gets a bar chart with its
intervals (a histogram's limits), all drawn by the page's script. Every cell keeps
its index, so the page's script refills it for another option. A statistic cut
into pages shows its flat list instead (every cell is in data.csv and data.json).
"""

from __future__ import annotations

import math
from itertools import product
from typing import Any

from django.utils.translation import gettext

from dpportal.statistic_names import ALL_ROWS
from releases.kinds.counting import HEATMAP_MAX_CELLS, HEATMAP_MAX_LABELS


def tables(stat: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks of each table of a cross-tabulation ([] for another kind or a page of one)."""
    listed = stat.get("tables") or []
    if not listed or (stat.get("paging") or {}).get("pages", 1) > 1:
        return []
    if sum(math.prod(t["shape"]) for t in listed) != len(rows):
        return []
    return [
        {**_table(t, rows[t["start"] : t["start"] + math.prod(t["shape"])]), "index": k}
        for k, t in enumerate(listed)
    ]


def _table(table: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, Any]:
    columns, labels, shape = table["columns"], table["labels"], table["shape"]
    out = {
        "marginal": "-".join(str(i) for i in table["marginal"]),
        "title": " × ".join(columns) if columns else gettext(ALL_ROWS),
        "start": table["start"],
        "halfwidth": cells[0]["halfwidth"] if cells else "",
        # a bar chart above a one-column table, a heatmap above a two-column one and
        # above each slice of a three-column one, within a histogram's limits
        "bars": len(columns) == 1 and shape[0] <= HEATMAP_MAX_LABELS,
        "heatmap": len(columns) == 2 and _readable(shape),
    }
    if not columns:
        out["blocks"] = [{"title": "", "corner": "", "col_labels": [],
                          "lines": [{"label": gettext(ALL_ROWS), "cells": cells}]}]  # fmt: skip
    elif len(columns) == 1:
        out["blocks"] = [
            {
                "title": "",
                "corner": columns[0],
                "col_labels": [gettext("Count")],
                "lines": [
                    {"label": label, "cells": [cell]}
                    for label, cell in zip(labels[0], cells, strict=True)
                ],
            }
        ]
    else:
        rows_n, cols_n = shape[-2], shape[-1]
        size = rows_n * cols_n
        out["blocks"] = [
            {
                "index": k,
                "heatmap": len(columns) == 3 and _readable(shape[-2:]),
                "title": ", ".join(
                    f"{name} = {value}" for name, value in zip(columns[:-2], prefix, strict=True)
                ),
                "corner": f"{columns[-2]} \\ {columns[-1]}",
                "col_labels": labels[-1],
                "lines": [
                    {"label": label, "cells": block[r * cols_n : (r + 1) * cols_n]}
                    for r, label in enumerate(labels[-2])
                ],
            }
            for k, prefix in enumerate(product(*labels[:-2]))
            for block in [cells[k * size : (k + 1) * size]]
        ]
    return out


def _readable(shape: list[int]) -> bool:
    """Whether a two-column grid is small enough for a readable heatmap."""
    return math.prod(shape) <= HEATMAP_MAX_CELLS and max(shape) <= HEATMAP_MAX_LABELS
