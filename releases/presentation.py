"""Noisy results made readable for the project's members: values with intervals, in data units.

Every statistic is read through its kind (releases.kinds): its intervals at the
release's confidence and its noise parts with their units, the same facts the
public page and the API state. Public parameters only.
"""

from __future__ import annotations

from typing import Any

from dpportal import buckets
from releases import kinds
from releases.kinds.domains import cell_labels
from releases.public.paging import list_slice
from releases.results_text import mechanism_name, noise_parameters, result_noise_text


def _rows(entry: dict[str, Any], cells: list[kinds.Cell], marks: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if not cells:  # a selection (the most common category): no value, no row
        return rows
    kind = kinds.get(entry["kind"])
    marks = marks if len(marks) == len(cells) else [""] * len(cells)
    for label, cell, mark in zip(entry["cells"], cells, marks, strict=True):
        # `bucket`: dpportal's own cell ("other", "missing"), written as such by the page;
        # a quantile's accuracy in words: the data-unit range beside the rank error
        row = {
            "cell": label,
            "bucket": mark,
            **cell.as_dict(),
            "accuracy_text": kind.cell_accuracy_text(cell),
        }
        if row["halfwidth"] is None and cell.low is not None:
            # an asymmetric interval: its larger side fixes the precision shown
            row["halfwidth"] = max(cell.high - cell.value, cell.value - cell.low)
        rows.append(row)
    return rows


def _marks(entry: dict[str, Any], kind: Any, specs: dict[int, dict[str, Any]]) -> list[str]:
    """Which of the entry's cells are dpportal's own (dpportal.buckets), from the frozen
    spec's axes; none known without the spec."""
    spec = specs.get(int(entry.get("position", -1)))
    if not spec or not kind.cells_on_axes:
        return []
    domains = (spec.get("groups") if kind.fields == "grouped" else spec.get("columns")) or []
    marks = buckets.cell_marks(domains, cells=len(entry["cells"]), shape=entry.get("shape"))
    return marks.get("cell_buckets", [])


def results_for_display(
    payload: dict[str, Any], *, page: int = 1, spec: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One dict per statistic: rows of (cell, noisy value, low, high) and the noise used.

    A statistic longer than a page (releases.public.paging) shows page `page` of its
    rows (clamped to its own last page), with "paging" {page, pages, first, last, total}
    saying which; the cells' intervals are read once, every row is formatted only
    when shown. With the release's frozen `spec`, each row says whether its cell is
    one of dpportal's own ("bucket": "other", "missing"; "" for a declared one).

    Intervals describe the noisy value before any post-processing; recomputed at
    the release's confidence from public parameters only. Numbers stay exact
    here; the template formats them (dpformat). `halfwidth` is set when every cell
    has the same symmetric interval. With the release's frozen `spec`, a row's
    "cell_label" and the selection's "argmax_label" are the owner's category labels
    ({"en", "zh-hans"}, or None), shown beside the codes.
    """
    confidence = payload["confidence"]
    frozen = _frozen_entries(spec)
    entries = (spec or {}).get("statistics") if isinstance(spec, dict) else None
    specs = {
        int(e["position"]): e for e in entries or [] if isinstance(e, dict) and "position" in e
    }
    out = []
    for entry in payload["statistics"]:
        kind = kinds.get(entry["kind"])
        explanation = entry["explanation"]
        noise = noise_parameters(explanation, kind=entry["kind"])
        cells = kind.intervals(entry, confidence=confidence)
        part = list_slice(len(cells), page=page)
        marks = _marks(entry, kind, specs)[part.start : part.stop]
        rows = _rows({**entry, "cells": entry["cells"][part.start : part.stop]},
                     cells[part.start : part.stop], marks)  # fmt: skip
        paging = None
        if part.pages > 1:
            paging = {"page": part.page, "pages": part.pages, "first": part.start + 1,
                      "last": part.stop, "total": part.total}  # fmt: skip
        widths = {c.halfwidth for c in cells}
        common = widths.pop() if len(widths) == 1 else None
        item: dict[str, Any] = {
            "position": entry.get("position"),
            "label": entry["label"],
            "kind": entry["kind"],
            "columns": entry["columns"],
            "epsilon": entry["epsilon"],
            "delta": entry["delta"],
            "mechanism": mechanism_name(kind.result_mechanism(entry, payload["mechanism"])),
            "noise": noise,
            "noise_text": "; ".join(p.text for p in noise),
            "noise_summary": result_noise_text(
                explanation,
                kind=entry["kind"],
                mechanism=kind.result_mechanism(entry, payload["mechanism"]),
            ),  # fmt: skip
            "rows": rows,
            "paging": paging,
            "halfwidth": common
            if common is not None
            else kind.selection_halfwidth(entry, confidence=confidence),
            "halfwidth_simultaneous": None,
            "rank_errors": any(c.rank_error is not None for c in cells),
            "accuracy_note": kind.accuracy_note(entry),
            "argmax": entry.get("argmax"),
            "uninformative": any(c.flag == kinds.UNINFORMATIVE for c in cells),
            "argmax_label": None,
            "statement": kind.statement(entry),
            "bounds": entry.get("bounds"),
            # categories found in the data: the published keys (every surface's cells), which
            # the owner may declare as the column's categories
            "keys_found": list(entry["cells"]) if kind.fields == "keys" else None,
        }
        _add_labels(item, entry, frozen.get(entry.get("position")), part)
        if common is not None and len(cells) > 1:
            together = kind.intervals(entry, confidence=confidence, simultaneous=True)
            item["halfwidth_simultaneous"] = together[0].halfwidth
        out.append(item)
    return out


def _frozen_entries(spec: dict[str, Any] | None) -> dict[Any, dict[str, Any]]:
    entries = (spec or {}).get("statistics") if isinstance(spec, dict) else None
    return {e.get("position"): e for e in entries or [] if isinstance(e, dict)}


def _add_labels(item: dict[str, Any], entry: dict[str, Any], frozen, part) -> None:
    """The owner's labels of the shown rows and of the selection, from the frozen spec."""
    labels = cell_labels(
        frozen,
        cells=[str(c) for c in entry.get("cells") or []],
        row_labels=[str(r) for r in entry.get("row_labels") or []],
        col_labels=[str(c) for c in entry.get("col_labels") or []],
    )["cells"][part.start : part.stop]
    for row, label in zip(item["rows"], labels, strict=False):
        row["cell_label"] = label
    argmax = entry.get("argmax")
    if isinstance(argmax, dict) and argmax.get("label") is not None:
        found = cell_labels(frozen, cells=[str(argmax["label"])], row_labels=[], col_labels=[])
        item["argmax_label"] = (found["cells"] or [None])[0]
