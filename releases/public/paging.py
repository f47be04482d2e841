"""One page of a statistic's cells for an HTML page: its cost bounded whatever the release.

A release may hold tens of thousands of cells (the plan's cell limits); a page
shows at most RESULT_PAGE_CELLS of each statistic (a two-way table: whole rows,
at least one) and says "page 1 of N"; data.csv and data.json hold every cell.
Every per-cell list of a statistic's public data is cut to the same slice, so the
page, its charts and its script read one consistent, smaller statistic; counts
that describe the whole statistic (`k`, the simultaneous intervals) are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings

#: the per-cell lists of releases.public.data's statistic (besides `intervals`)
PER_CELL = (
    "cells", "values", "exact_values", "clamped", "uninformative_cells", "cell_labels",
    "cell_buckets", "display_values",
)  # fmt: skip


@dataclass(frozen=True)
class Slice:
    """The cells [start, stop) of a statistic shown on page `page` of `pages`."""

    page: int
    pages: int
    start: int
    stop: int
    total: int
    row_start: int = 0  # two-way tables: the first row label shown
    row_stop: int = 0


def page_cells() -> int:
    return int(settings.RESULT_PAGE_CELLS)


def statistic_slice(stat: dict[str, Any], *, page: int) -> Slice:
    """Which cells of `stat` page `page` shows (clamped to the statistic's own pages)."""
    total = len(stat.get("cells") or [])
    if stat.get("kind") == "argmax" or stat.get("quantile_chart"):
        return Slice(page=1, pages=1, start=0, stop=total, total=total)
    shape = stat.get("shape")
    if shape:
        rows, cols = int(shape[0]), int(shape[1])
        per_page = max(1, page_cells() // max(1, cols))
        pages = max(1, math.ceil(rows / per_page))
        page = min(max(1, page), pages)
        first, last = (page - 1) * per_page, min(rows, page * per_page)
        return Slice(page, pages, first * cols, last * cols, total, first, last)
    return list_slice(total, page=page)


def list_slice(total: int, *, page: int) -> Slice:
    """Page `page` (clamped) of a flat list of `total` cells, RESULT_PAGE_CELLS a page."""
    per_page = page_cells()
    pages = max(1, math.ceil(total / per_page))
    page = min(max(1, page), pages)
    return Slice(page, pages, (page - 1) * per_page, min(total, page * per_page), total)


def statistic_page(stat: dict[str, Any], *, page: int) -> dict[str, Any]:
    """A shallow copy of `stat` with every per-cell list cut to page `page` and a "paging"
    entry ({page, pages, first, last, total}: cells numbered from 1)."""
    part = statistic_slice(stat, page=page)
    out = dict(stat)
    out["paging"] = {
        "page": part.page,
        "pages": part.pages,
        "first": part.start + 1 if part.total else 0,
        "last": part.stop,
        "total": part.total,
    }
    if part.pages == 1:
        return out
    window = slice(part.start, part.stop)
    for key in PER_CELL:
        if isinstance(stat.get(key), list) and stat[key]:
            out[key] = stat[key][window]
    out["intervals"] = {
        level: {
            kind: {name: list(values[window]) for name, values in lists.items()}
            for kind, lists in kinds_.items()
        }
        for level, kinds_ in (stat.get("intervals") or {}).items()
    }
    if stat.get("shape"):
        out["shape"] = [part.row_stop - part.row_start, stat["shape"][1]]
        out["row_labels"] = stat["row_labels"][part.row_start : part.row_stop]
        if stat.get("row_names"):
            out["row_names"] = stat["row_names"][part.row_start : part.row_stop]
        if stat.get("row_buckets"):
            out["row_buckets"] = stat["row_buckets"][part.row_start : part.row_stop]
    return out
