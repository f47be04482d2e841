"""Codebooks: many columns' PUBLIC declarations as one CSV file, imported or exported.

The format (UTF-8, comma separated, one header line; only `column` and `kind`
are required, the other headers may be left out):

    column,kind,categories,lower,upper,bin_edges,missing_codes,missing,date_lower,date_upper,date_bin,date_format
    sex,categorical,female|male,,,,-9,category,,,,
    age,numeric,,0,120,0|18|65|120,-9|999,drop,,,,
    visit,date,,,,,,drop,2024-01-01,2024-12-31,month,YYYY-MM-DD

Lists (categories, bin edges, missing-value codes) are separated by "|". The optional
`category_labels` (English) and `category_labels_zh` (Simplified Chinese) give the
categories' public labels, "|"-separated in the order of `categories`, an empty
entry for a code without one (datasets.services.category_labels):

    column,kind,categories,category_labels,category_labels_zh
    sex,categorical,1|2,Male|Female,男|女

A row
with an empty kind leaves its column as it is. Import is all or nothing
(declaration.dataset_import_codebook): a bad row gives a message with its line
number and nothing changes. Export writes the current declaration in the same
format, so that an export imports back to the same declaration.
"""

from __future__ import annotations

import csv
import io
import re

from django.utils.translation import gettext

from datasets.models import Column, Dataset
from datasets.services.common import csv_safe_cell
from datasets.services.declaration_columns import column_kind
from dpportal.bilingual import EN, ZH
from dpportal.errors import ValidationFailed

HEADERS = [
    "column",
    "kind",
    "categories",
    "lower",
    "upper",
    "bin_edges",
    "missing_codes",
    "missing",
    "date_lower",
    "date_upper",
    "date_bin",
    "date_format",
    "category_labels",
    "category_labels_zh",
]
LISTS = ("categories", "bin_edges", "missing_codes")
SEPARATOR = "|"
MAX_CODEBOOK_BYTES = 2 << 20
MAX_ROWS = 5000
_NUMBERS = re.compile(r"^-?[0-9]+(\.[0-9]+)?(\|-?[0-9]+(\.[0-9]+)?)*$")
_QUOTED_FORMULA = re.compile(r"^'[=+\-@\t\r]")


def parse_codebook(content: bytes) -> list[tuple[int, dict[str, object]]]:
    """The codebook's rows as (line number, declaration spec with "column"), or refused.

    Raises ValidationFailed (nothing is read further) when the file is not a
    codebook: its encoding, its header, a row's number of cells, a repeated column.
    """
    if not content.strip():
        raise ValidationFailed(gettext("The codebook is empty."))
    if len(content) > MAX_CODEBOOK_BYTES:
        raise ValidationFailed(gettext("The codebook is larger than 2 MiB."))
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[: exc.start].count(b"\n") + 1
        raise ValidationFailed(
            gettext("Line %(line)s of the codebook is not UTF-8 text: save it as UTF-8 CSV.")
            % {"line": line}
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except (StopIteration, csv.Error):
        raise ValidationFailed(gettext("The codebook's first line must be its header.")) from None
    unknown = [h for h in header if h not in HEADERS]
    if unknown or "column" not in header or "kind" not in header:
        raise ValidationFailed(
            gettext(
                "Line 1 of the codebook: the header must name the columns 'column' and 'kind', "
                "and may name only: %(headers)s."
            )
            % {"headers": ", ".join(HEADERS)}
        )
    if len(set(header)) != len(header):
        raise ValidationFailed(gettext("Line 1 of the codebook names a header twice."))
    rows: list[tuple[int, dict[str, object]]] = []
    seen: dict[str, int] = {}
    try:
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise ValidationFailed(
                    gettext(
                        "Line %(line)s of the codebook has %(cells)s cells; "
                        "the header has %(headers)s."
                    )
                    % {"line": line, "cells": len(cells), "headers": len(header)}
                )
            spec = {h: _unquote(c.strip()) for h, c in zip(header, cells, strict=True)}
            name = str(spec["column"])
            if not name:
                raise ValidationFailed(
                    gettext("Line %(line)s of the codebook names no column.") % {"line": line}
                )
            if name in seen:
                raise ValidationFailed(
                    gettext(
                        "Line %(line)s of the codebook declares '%(name)s' again "
                        "(first on line %(first)s)."
                    )
                    % {"line": line, "name": name[:100], "first": seen[name]}
                )
            seen[name] = line
            for key in LISTS:
                if key in spec:
                    spec[key] = [v.strip() for v in str(spec[key]).split(SEPARATOR) if v.strip()]
            _labels(spec, line)
            rows.append((line, spec))
            if len(rows) > MAX_ROWS:
                raise ValidationFailed(
                    gettext("A codebook may declare at most %(limit)s columns.")
                    % {"limit": MAX_ROWS}
                )
    except csv.Error:
        raise ValidationFailed(
            gettext("Line %(line)s of the codebook is not valid CSV (check its quotes).")
            % {"line": reader.line_num}
        ) from None
    return rows


def _labels(spec: dict[str, object], line: int) -> None:
    """The row's label columns as spec["category_labels"] (code -> {"en", "zh-hans"}),
    matched to its categories by position."""
    columns = {EN: spec.pop("category_labels", ""), ZH: spec.pop("category_labels_zh", "")}
    categories = [str(c) for c in spec.get("categories") or []]
    labels: dict[str, dict[str, str]] = {}
    for language, cell in columns.items():
        if not str(cell or "").strip():
            continue
        texts = [t.strip() for t in str(cell).split(SEPARATOR)]
        if len(texts) != len(categories):
            raise ValidationFailed(
                gettext(
                    "Line %(line)s of the codebook gives %(labels)s category labels for "
                    "%(categories)s categories: give one per category, in the same order "
                    "(empty for a category without one)."
                )
                % {"line": line, "labels": len(texts), "categories": len(categories)}
            )
        for code, text in zip(categories, texts, strict=True):
            labels.setdefault(code, {EN: "", ZH: ""})[language] = text
    if labels:
        spec["category_labels"] = labels


def _unquote(cell: str) -> str:
    """Undo the export's protection of formula-like cells (csv_safe_cell)."""
    return cell[1:] if _QUOTED_FORMULA.match(cell) else cell


def export_codebook(*, dataset: Dataset) -> str:
    """The dataset's current declaration as a codebook (see the module docstring)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADERS)
    for column in dataset.columns.order_by("position"):
        writer.writerow([_cell(v) for v in _row(column)])
    return out.getvalue()


def _row(column: Column) -> list[str]:
    declared = column.kind != Column.Kind.UNDECLARED
    date = column.date or {}
    kind = column_kind(column) if declared else ""
    return [
        column.name,
        kind,
        SEPARATOR.join(column.categories) if kind == Column.Kind.CATEGORICAL else "",
        _plain(column.lower),
        _plain(column.upper),
        SEPARATOR.join(str(e) for e in column.bin_edges or []),
        SEPARATOR.join(column.missing_codes or []),
        column.missing if declared else "",
        date.get("lower", ""),
        date.get("upper", ""),
        date.get("bin", ""),
        date.get("format", ""),
        *_label_cells(column, kind),
    ]


def _label_cells(column: Column, kind: str) -> list[str]:
    """The categories' labels in English and in Chinese, in the order of the categories."""
    labels = column.category_labels or {}
    if kind != Column.Kind.CATEGORICAL or not labels:
        return ["", ""]
    return [
        SEPARATOR.join(
            (labels.get(str(code)) or {}).get(language, "") for code in column.categories
        )
        for language in (EN, ZH)
    ]


def _cell(value: str) -> str:
    return value if _NUMBERS.match(value) else csv_safe_cell(value)


def _plain(value) -> str:
    if value is None:
        return ""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
