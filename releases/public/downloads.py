"""The downloads of a published release: JSON and CSV at one confidence level.

The JSON keeps exact values (for programs); the CSV is read by people in
spreadsheets, so its numbers go through dpportal.formatting like the page's.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from django.utils.translation import gettext

from dpportal import formatting
from dpportal.bilingual import ZH, Bilingual
from dpportal.errors import ValidationFailed
from releases.kinds import quantile_words


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _basis(basis: Any) -> dict[str, Any] | None:
    """What n a quantile's data-unit range was read with: the owner's planning guess or a
    released noisy count (None: no range)."""
    if not basis:
        return None
    return {"n": basis[1], "source": basis[0]}


def _table_places(stat: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """A cross-tabulation's cells in order: each one's table name and its category in each
    of the table's columns (none for another kind)."""
    out = []
    for table in stat.get("tables") or []:
        for combination in itertools.product(*table["labels"]):
            out.append((table["name"], dict(zip(table["columns"], combination, strict=True))))
    return out if len(out) == len(stat.get("cells") or []) else []


def release_download_data(*, data: dict[str, Any], confidence: str) -> dict[str, Any]:
    """The JSON download: the release's public record with intervals at `confidence`."""
    statistics = []
    for stat in data["statistics"]:
        per_cell = stat["intervals"][confidence]["per_cell"]
        simultaneous = stat["intervals"][confidence]["simultaneous"]
        cells = []
        hidden = stat.get("uninformative_cells") or [False] * len(stat["cells"])
        labels = stat.get("cell_labels") or []
        marks = stat.get("cell_buckets") or []
        places = _table_places(stat)
        if stat["layout"] == "keys":  # keys found in the data without counts: keys alone
            cells = [{"cell": cell, "value": None} for cell in stat["cells"]]
        elif stat["kind"] != "argmax":
            for i, cell in enumerate(stat["cells"]):
                row: dict[str, Any] = {"cell": cell, "value": stat["values"][i]}
                if places:  # a cross-tabulation's cell: its table and its category per column
                    row["table"], row["coordinates"] = places[i]
                # the owner's label beside the code: {"en", "zh-hans"}, or None
                row["cell_label"] = labels[i] if i < len(labels) else None
                # dpportal's own cell ("other", "missing"; null for a declared one)
                row["bucket"] = (marks[i] if i < len(marks) else "") or None
                if stat["layout"] == "heatmap":
                    cols = stat["shape"][1]
                    row["row"] = stat["row_labels"][i // cols]
                    row["column"] = stat["col_labels"][i % cols]
                if "rank_errors" in per_cell:  # quantiles: a rank error, no value interval
                    row["value"] = stat["exact_values"][i]
                    row["quantile"] = stat["quantiles"][i]
                    row["rank_error"] = per_cell["rank_errors"][i]
                    row["simultaneous_rank_error"] = simultaneous["rank_errors"][i]
                    # the rank error in the data's units: an estimate (see about_basis)
                    for prefix, iv in (("", per_cell), ("simultaneous_", simultaneous)):
                        for end in ("about_lower", "about_upper"):
                            row[prefix + end] = iv[end][i] if iv.get(end) else None
                row.update(
                    halfwidth=_finite(per_cell["halfwidths"][i]),
                    lower=per_cell["lower"][i],
                    upper=per_cell["upper"][i],
                    simultaneous_halfwidth=_finite(simultaneous["halfwidths"][i]),
                    simultaneous_lower=simultaneous["lower"][i],
                    simultaneous_upper=simultaneous["upper"][i],
                    uninformative=bool(hidden[i]),
                )
                texts = _cell_text(row)
                row.update(
                    {f"{key}_display": texts[key] or None for key in DISPLAYED if key in row}
                )
                cells.append(row)
        statistics.append(
            {
                "position": stat["position"],
                "kind": stat["kind"],
                "label": stat["label"],
                "label_i18n": _both(stat, "label"),
                "description_i18n": _both(stat, "description"),
                "columns": stat["columns"],
                "group_columns": stat.get("group_columns", []),
                "category": stat["category"],
                "shape": stat["shape"],
                "epsilon": stat["epsilon"],
                "delta": stat["delta"],
                "mechanism": stat["mechanism"],
                "noise": stat["noise"],
                "notes": stat["notes"],
                "cells": cells,
                "argmax": stat["argmax"],
                "argmax_label": stat.get("argmax_label"),
                # the columns whose bounds a private estimate gave (not the owner's knowledge)
                "bounds_estimated": stat.get("bounds_estimated") or [],
                **(
                    {"bounds": stat["bounds"], "statement": stat["statement"]}
                    if stat.get("statement")
                    else {}
                ),
                **({"tables": stat["tables"]} if stat.get("tables") else {}),
                **(
                    {"about_basis": _basis(stat.get("about_basis"))}
                    if stat["kind"] == "quantiles"
                    else {}
                ),
            }
        )
    return {
        "release": {
            "id": data["release_id"],
            "project": data["project"],
            "title": data["title"],
            "title_i18n": _both(data, "title"),
            "description_i18n": _both(data, "description"),
            "mechanism": data["mechanism"],
            "epsilon": data["epsilon"],
            "delta": data["delta"],
            "privacy_unit": data["privacy_unit"],
            "approval": (
                {k: data["approval"][k] for k in ("by", "decided_at")} if data["approval"] else None
            ),
            "published_at": data["published_at"],
        },
        "confidence": confidence,
        "interval_note": (
            "Intervals hold for the noisy value before any rounding or clamping. "
            "'halfwidth' holds for each value on its own; 'simultaneous_halfwidth' for all "
            "values of one statistic at once. A quantile's 'lower' and 'upper' are the confidence "
            "interval released with it, where the true quantile lies whatever the data (null at "
            "a level above the one it was released at, and for releases made before quantiles "
            "had intervals); 'rank_error' bounds how far (in records) the chosen value's rank "
            "may lie from the quantile's, for each quantile on its own "
            "('simultaneous_rank_error': all at once). "
            "Each '<name>_display' is <name> rounded as the page and the CSV show it (digits "
            "justified by the half-width; half-widths to 2 significant digits, rank errors "
            "in whole records rounded up), as a plain number without thousands separators. "
            "'about_lower' and 'about_upper' state the same error in the data's units: an "
            "estimate, not a guarantee, that reads the released quantiles as the shape of the "
            "data with the n named in the statistic's 'about_basis' and adds one grid step. "
            "'uninformative': true marks a cell whose noisy values cannot tell it from an "
            "empty one, or whose interval spans every possible value, at the release's "
            "confidence level; its value is kept here but the pages and the CSV show none."
        ),
        "statistics": statistics,
    }


CSV_COLUMNS = [
    "release_id", "project", "release_title", "statistic_position", "statistic_label", "kind",
    "columns", "category", "cell", "row", "column", "value", "confidence", "halfwidth", "lower",
    "upper", "simultaneous_halfwidth", "simultaneous_lower", "simultaneous_upper", "mechanism",
    "noise", "noise_parameter", "epsilon", "delta", "privacy_unit", "approved_by", "approved_at",
    "published_at", "notes", "group_columns", "rank_error", "simultaneous_rank_error",
    "cell_label", "cell_label_zh",
    "about_lower", "about_upper", "simultaneous_about_lower", "simultaneous_about_upper",
    "release_title_zh", "statistic_label_zh",
    "uninformative",
]  # fmt: skip


def _both(data: dict[str, Any], field: str) -> dict[str, str]:
    """The owner's text `field` and its Chinese twin as {"en": ..., "zh-hans": ...}."""
    return Bilingual(en=str(data.get(field) or ""), zh=str(data.get(field + "_zh") or "")).as_json()


_PLAIN_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A CSV cell safe against formula injection in spreadsheets.

    Text starting with = + - @ (or tab / carriage return) is prefixed with a single
    quote; plain numbers (e.g. -3.5) stay numbers.
    """
    if value is None:
        return ""
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ""
    else:
        text = str(value)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


#: the numbers of a JSON cell that also carry their display text ("halfwidth_display")
DISPLAYED = (
    "value", "halfwidth", "lower", "upper", "simultaneous_halfwidth", "simultaneous_lower",
    "simultaneous_upper", "rank_error", "simultaneous_rank_error", "about_lower", "about_upper",
    "simultaneous_about_lower", "simultaneous_about_upper",
)  # fmt: skip


def _ends_text(value: float, lower: float, upper: float, halfwidth: float | None) -> dict:
    precision = halfwidth if halfwidth is not None else max(upper - value, value - lower)
    return {
        "lower": formatting.noisy(lower, precision, group=False),
        "upper": formatting.noisy(upper, precision, group=False),
        "halfwidth": formatting.halfwidth(halfwidth, group=False),
    }


def _about_text(cell: dict[str, Any], prefix: str) -> dict[str, str]:
    """A quantile's data-unit range as the page writes it (releases.kinds.quantiles)."""
    low, high = quantile_words.about_range_texts(
        cell.get(prefix + "about_lower"), cell.get(prefix + "about_upper"), group=False
    )
    return {prefix + "about_lower": low, prefix + "about_upper": high}


def _flag_text(hidden: bool | None) -> str | None:
    """The CSV's `uninformative` column: true or false (empty where no kind judges it)."""
    return None if hidden is None else ("true" if hidden else "false")


def _cell_text(cell: dict[str, Any]) -> dict[str, Any]:
    """One cell of the JSON record with its numbers as people read them (for the CSV).

    Through dpportal.formatting, without thousands separators (spreadsheets read
    them as text): a value to the precision its half-width justifies, the ends of
    each interval to the precision of that interval's half-width.
    """
    value = cell["value"]
    hidden = cell.get("uninformative")
    flag = _flag_text(hidden)
    if cell.get("rank_error") is not None:  # quantiles: the chosen candidate, exactly
        return {
            **cell,
            "uninformative": flag,
            "value": formatting.exact(value),
            "rank_error": formatting.rank(cell["rank_error"], group=False),
            "simultaneous_rank_error": formatting.rank(
                cell["simultaneous_rank_error"], group=False
            ),
            **_about_text(cell, ""),
            **_about_text(cell, "simultaneous_"),
            **{end: formatting.exact(cell[end]) if cell.get(end) is not None else None
               for end in ("lower", "upper", "simultaneous_lower", "simultaneous_upper")},
        }  # fmt: skip
    per_cell = _ends_text(value, cell["lower"], cell["upper"], cell["halfwidth"])
    together = _ends_text(
        value, cell["simultaneous_lower"], cell["simultaneous_upper"],
        cell["simultaneous_halfwidth"],
    )  # fmt: skip
    precision = cell["halfwidth"]
    if precision is None:
        precision = max(cell["upper"] - value, value - cell["lower"])
    return {
        **cell,
        # no value for people where its kind found it uninformative; the JSON keeps it
        "value": "" if hidden else formatting.noisy(value, precision, group=False),
        **per_cell,
        "simultaneous_lower": together["lower"],
        "simultaneous_upper": together["upper"],
        "simultaneous_halfwidth": together["halfwidth"],
        "uninformative": flag,
    }


def _label_cells(label: dict[str, str] | None) -> dict[str, str]:
    """The CSV's label columns: the owner's label of the cell in English and in Chinese
    (each falling back to the other), empty when the cell has none."""
    label = label or {}
    return {"cell_label": label.get("en", ""), "cell_label_zh": label.get("zh-hans", "")}


#: a byte-order mark: Excel reads a CSV as UTF-8 only when it starts with one (else as
#: the system's code page, GBK on a Chinese Windows: mojibake)
BOM = "\ufeff"
_BOM_VALUES = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def bom_parse(*, value: str | None, language: str | None) -> bool:
    """The CSV's `bom` option: 1/0 (true/false, yes/no); by default on for Chinese readers."""
    if value is None or value.strip() == "":
        return (language or "").lower().startswith("zh")
    choice = _BOM_VALUES.get(value.strip().lower())
    if choice is None:
        raise ValidationFailed(gettext("bom must be 1 or 0."))
    return choice


#: CSV rows per streamed chunk (tens of kilobytes)
CSV_CHUNK_ROWS = 250


def release_download_csv_chunks(
    *, data: dict[str, Any], confidence: str, bom: bool = False
) -> Iterator[str]:
    """The CSV download as consecutive chunks of text, formatted as they are read: one
    row per published value (the argmax: one row with its label).

    With `bom`, the text starts with a UTF-8 byte-order mark so that Excel opens it right.
    The column names are machine names (the same in every language), like the JSON's keys.
    Memory and time to the first byte stay small however many cells the release has.
    """
    record = release_download_data(data=data, confidence=confidence)
    meta = record["release"]
    approval = meta["approval"] or {}
    buffer = io.StringIO()
    if bom:
        buffer.write(BOM)
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    pending = 0
    for stat in record["statistics"]:
        noise = stat["noise"] or {}
        common = {
            "release_id": meta["id"],
            "project": meta["project"],
            "release_title": meta["title"],
            "statistic_position": stat["position"],
            "statistic_label": stat["label"],
            "statistic_label_zh": stat["label_i18n"][ZH],
            "release_title_zh": meta["title_i18n"][ZH],
            "kind": stat["kind"],
            "columns": " x ".join(stat["columns"]),
            "group_columns": " x ".join(stat["group_columns"]),
            "category": stat["category"],
            "confidence": confidence,
            "mechanism": stat["mechanism"],
            "noise": noise.get("name"),
            "noise_parameter": noise.get("parameter_text"),
            "epsilon": formatting.epsilon(stat["epsilon"], group=False),
            "delta": formatting.delta(stat["delta"], group=False),
            "privacy_unit": meta["privacy_unit"],
            "approved_by": approval.get("by"),
            "approved_at": approval.get("decided_at"),
            "published_at": meta["published_at"],
        }
        common["notes"] = " ".join(stat["notes"])
        cells: Iterable[dict[str, Any]] = (
            {
                **cell,
                **{key: cell.get(f"{key}_display") for key in DISPLAYED},
                **_label_cells(cell.get("cell_label")),
                "uninformative": _flag_text(cell.get("uninformative")),
            }
            for cell in stat["cells"]
        )  # the JSON's display texts: the CSV shows what the JSON says the page shows
        if stat["kind"] == "argmax":
            cells = [
                {
                    "cell": "most common",
                    "value": (stat["argmax"] or {}).get("label"),
                    **_label_cells(stat.get("argmax_label")),
                }
            ]
        for cell in cells:
            row = {**common, **cell}
            writer.writerow([csv_cell(row.get(name)) for name in CSV_COLUMNS])
            pending += 1
            if pending >= CSV_CHUNK_ROWS:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
                pending = 0
    tail = buffer.getvalue()
    if tail:
        yield tail


def release_download_csv(*, data: dict[str, Any], confidence: str, bom: bool = False) -> str:
    """The whole CSV download as one text (release_download_csv_chunks joined)."""
    return "".join(release_download_csv_chunks(data=data, confidence=confidence, bom=bom))
