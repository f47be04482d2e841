"""Excel workbooks (.xlsx): one sheet, streamed row by row, cached values only.

openpyxl in read-only mode streams the sheet's XML (memory flat in rows) and with
data_only=True gives each formula cell's value as last saved by Excel: formulas
are never evaluated, and links to other workbooks are not followed (keep_links=
False); a formula cell saved without a value is empty. Cells become text as a CSV
export would hold them, so types are inferred and numbers parsed exactly as for a
CSV. The sheet's declared size is checked before any row is read, and the rows
are counted as they stream (the declaration can lie).
"""

from __future__ import annotations

import datetime as dt
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
from django.utils.translation import gettext_noop
from openpyxl import load_workbook
from openpyxl.utils.exceptions import InvalidFileException

from datasets.ingest.common import IngestLimits, IngestRejected
from datasets.ingest.formats.batches import Layout, check_names
from datasets.ingest.reader import _infer_types
from dpportal.messages import plural

BATCH_ROWS = 50_000
SAMPLE_ROWS = 10_000


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ") if value.time() != dt.time() else value.date().isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _sheet_name(names: list[str], chosen: str) -> str:
    """The sheet `chosen` names: blank is the first, a name, or a number from 1
    (a sheet whose name is that number wins); refused with the sheets' names."""
    if not chosen:
        return names[0]
    if chosen in names:
        return chosen
    if chosen.isdigit() and 1 <= int(chosen) <= len(names):
        return names[int(chosen) - 1]
    if chosen.isdigit():
        msgid = plural(
            len(names),
            gettext_noop(
                "The workbook has no sheet named '%(name)s' and no sheet number %(number)s; "
                "its %(count)s sheet is: %(sheets)s."
            ),
            gettext_noop(
                "The workbook has no sheet named '%(name)s' and no sheet number %(number)s; "
                "its %(count)s sheets are: %(sheets)s."
            ),
        )
    else:
        msgid = plural(
            len(names),
            gettext_noop(
                "The workbook has no sheet named '%(name)s'; its %(count)s sheet is: %(sheets)s."
            ),
            gettext_noop(
                "The workbook has no sheet named '%(name)s'; its %(count)s sheets are: %(sheets)s."
            ),
        )
    raise IngestRejected(
        msgid,
        name=chosen[:100],
        number=chosen,
        count=len(names),
        # the sheets' own names, listed as the file writes them
        sheets=", ".join(f"'{n[:50]}'" for n in names[:20]),
    )


class ExcelReader:
    def __init__(self, path: Path, limits: IngestLimits, sheet: str = "") -> None:
        self.path, self.limits, self.sheet = path, limits, sheet
        self.layout: Layout | None = None

    @contextmanager
    def _sheet(self) -> Iterator:
        """The chosen sheet of the workbook, open for the block."""
        # a file object: openpyxl refuses a path without an Excel extension (an unpacked copy)
        with open(self.path, "rb") as handle:
            try:
                workbook = load_workbook(handle, read_only=True, data_only=True, keep_links=False)
            except (InvalidFileException, zipfile.BadZipFile, KeyError, OSError, ValueError):
                raise IngestRejected(
                    gettext_noop("The file is not a readable Excel workbook (.xlsx).")
                )
            try:
                sheet = workbook[_sheet_name(workbook.sheetnames, self.sheet)]
                if not hasattr(sheet, "iter_rows"):
                    raise IngestRejected(gettext_noop("The chosen sheet is a chart, not a table."))
                yield sheet
            finally:
                workbook.close()

    def _check_rows(self, rows: int) -> None:
        limit = self.limits.max_sheet_rows
        if rows > limit + 1:  # the header is a row
            raise IngestRejected(
                gettext_noop(
                    "The sheet has more than %(limit)s data rows, the limit for a spreadsheet: "
                    "save it as CSV (or Parquet) and upload that."
                ),
                limit=f"{limit:,}",
            )

    def read_layout(self) -> Layout:
        with self._sheet() as sheet:
            self._check_rows(sheet.max_row or 0)  # the sheet's declared size
            sheet.reset_dimensions()  # read every row, whatever the declaration says
            rows = sheet.iter_rows(values_only=True)
            header = next(rows, None)
            if header is None:
                raise IngestRejected(gettext_noop("The sheet is empty."))
            while header and header[-1] is None:
                header = header[:-1]
            if len(header) > self.limits.max_columns:
                raise IngestRejected(
                    gettext_noop("The sheet has %(count)s columns; at most %(limit)s are allowed."),
                    count=len(header),
                    limit=self.limits.max_columns,
                )
            names = check_names([_text(v) or "" for v in header], self.limits)
            sample = [row for row, _ in zip(rows, range(SAMPLE_ROWS), strict=False)]
        table = _table(sample, names)
        if table.num_rows == 0:
            raise IngestRejected(gettext_noop("The sheet has a header but no data rows."))
        self.layout = Layout(
            names=names, types=_infer_types(names, table, decimal_comma=False), text_numbers=True
        )
        return self.layout

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        assert self.layout is not None
        names = self.layout.names
        with self._sheet() as sheet:
            total = max(sheet.max_row or 0, 1)
            sheet.reset_dimensions()  # a wrong declaration must neither hide nor add rows
            rows = sheet.iter_rows(values_only=True)
            next(rows, None)
            seen = 1
            block: list[tuple] = []
            for row in rows:
                seen += 1
                block.append(row)
                if len(block) >= BATCH_ROWS:
                    self._check_rows(seen)
                    fraction = min(seen / total, 1.0)
                    yield from ((b, fraction) for b in _table(block, names).to_batches())
                    block = []
            self._check_rows(seen)
            yield from ((b, 1.0) for b in _table(block, names).to_batches())


def _table(rows: list[tuple], names: list[str]) -> pa.Table:
    width = len(names)
    columns: list[list[str | None]] = [[] for _ in names]
    for row in rows:
        if all(v is None for v in row):
            continue  # a blank line, as a CSV reader skips it
        if len(row) > width and any(v is not None for v in row[width:]):
            raise IngestRejected(
                gettext_noop(
                    "A row has values to the right of the last named column: every column needs "
                    "a name in the first row."
                )
            )
        for i in range(width):
            columns[i].append(_text(row[i]) if i < len(row) else None)
    return pa.table({n: pa.array(c, pa.string()) for n, c in zip(names, columns, strict=True)})
