"""Excel workbooks (.xlsx): one sheet, streamed row by row, cached values only.

openpyxl in read-only mode streams the sheet's XML and with data_only=True gives each
formula cell's value as last saved by Excel: formulas are never evaluated, and links
to other workbooks are not followed (keep_links=False); a formula cell saved without
a value is empty. The container's parts are read within their budgets
(datasets.ingest.formats.xlsx_parts): sizes checked against the zip's directory
before reading and counted while inflating, the shared strings counted as they are
kept, cells counted in the raw XML. Cells become text as a CSV export would hold
them, so numbers are parsed exactly as for a CSV.

The sheet is read once, in `read_layout`: every row is checked (rows, cells, the
per-value and per-row limits), its text written to an unnamed temporary file (Arrow
IPC) and tallied, so that each column's type is decided from all of its values (a
decimal after ten thousand whole numbers makes the column decimal; none is made
missing). `batches` then reads the spooled text, which is quick and can be repeated.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from xml.etree.ElementTree import ParseError

import pyarrow as pa
from django.utils.translation import gettext_noop
from openpyxl.reader.excel import ExcelReader as OpenpyxlReader
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.xml.constants import SHARED_STRINGS

from datasets.ingest.common import IngestLimits, IngestRejected, human_size
from datasets.ingest.formats.batches import Layout, check_names
from datasets.ingest.formats.widen import TextTally
from datasets.ingest.formats.xlsx_parts import (
    GuardedArchive,
    cells_message,
    read_shared_strings,
    row_message,
)
from dpportal.messages import plural

#: rows are gathered into blocks of at most this many cells, or this much text
BLOCK_CELLS = 100_000
BLOCK_TEXT_BYTES = 16 << 20
#: share of the progress bar for the read of the sheet (the rest: writing Parquet)
READ_SHARE = 0.9
UNREADABLE = (InvalidFileException, zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError,
              IndexError, AttributeError, EOFError)  # fmt: skip


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
    if not names:
        raise IngestRejected(gettext_noop("The workbook has no sheet."))
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


class _Workbook(OpenpyxlReader):
    """openpyxl's reader over a GuardedArchive, with the shared strings read in budget."""

    def __init__(self, archive: GuardedArchive, limits: IngestLimits) -> None:
        # openpyxl's own __init__ opens the file as a plain ZipFile: set what it sets
        self.archive, self.limits = archive, limits
        self.valid_files = archive.namelist()
        self.read_only, self.keep_vba, self.data_only = True, False, True
        self.keep_links, self.rich_text = False, False
        self.shared_strings = []

    def read_strings(self) -> None:
        part = self.package.find(SHARED_STRINGS)
        if part is not None:
            with self.archive.open(part.PartName[1:]) as source:
                self.shared_strings = read_shared_strings(source, self.limits)


def _xml_error(error: ParseError, part: str) -> IngestRejected:
    line, column = getattr(error, "position", (0, 0))
    reason = str(error).split(": line ")[0][:120]  # expat's reason, never the file's text
    return IngestRejected(
        gettext_noop(
            "The workbook's part '%(part)s' is not well-formed XML: %(reason)s (line %(line)s, "
            "column %(column)s)."
        ),
        part=part[:100],
        reason=reason,
        line=line,
        column=column,
    )


def _cause(error: BaseException) -> BaseException:
    """The error openpyxl wrapped in its ValueError ('Unable to read workbook'), if any."""
    while isinstance(error, ValueError) and isinstance(error.__cause__, Exception):
        if isinstance(error, IngestRejected):
            break
        error = error.__cause__
    return error


class ExcelReader:
    def __init__(
        self,
        path: Path,
        limits: IngestLimits,
        sheet: str = "",
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        self.path, self.limits, self.sheet = path, limits, sheet
        self.on_progress = on_progress
        self.layout: Layout | None = None
        self.spool = None  # the sheet's text, Arrow IPC in an unnamed temporary file
        self.blocks = 0

    @contextmanager
    def _sheet(self) -> Iterator:
        """The chosen sheet of the workbook, open for the block; malformed XML in any part
        is refused naming the part, line and column."""
        # a file object: openpyxl refuses a path without an Excel extension (an unpacked copy)
        with open(self.path, "rb") as handle:
            archive = None
            try:
                archive = GuardedArchive(handle, self.limits)
                reader = _Workbook(archive, self.limits)
                reader.read()
                workbook = reader.wb
            except IngestRejected:
                raise
            except ParseError as error:
                raise _xml_error(error, archive.current if archive else "")
            except UNREADABLE as error:
                cause = _cause(error)
                if isinstance(cause, IngestRejected):
                    raise cause
                if isinstance(cause, ParseError):
                    raise _xml_error(cause, archive.current if archive else "")
                raise IngestRejected(
                    gettext_noop("The file is not a readable Excel workbook (.xlsx).")
                )
            try:
                sheet = workbook[_sheet_name(workbook.sheetnames, self.sheet)]
                if not hasattr(sheet, "iter_rows"):
                    raise IngestRejected(gettext_noop("The chosen sheet is a chart, not a table."))
                try:
                    yield sheet
                except ParseError as error:
                    raise _xml_error(error, archive.current)
            finally:
                workbook.close()
                archive.close()

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

    def _rows(self, sheet) -> Iterator[tuple]:
        """The sheet's rows (tuples of values), counted: rows and cells past their limits
        are refused as soon as they are read; a cell openpyxl cannot read names its row."""
        rows = sheet.iter_rows(values_only=True)
        seen = cells = 0
        while True:
            try:
                row = next(rows, None)
            except (ValueError, TypeError, IndexError, KeyError, AttributeError):
                raise IngestRejected(
                    gettext_noop(
                        "Row %(row)s of the sheet holds a cell that could not be read (such as "
                        "a number cell whose value is not a number, or a reference to a text "
                        "value that does not exist)."
                    ),
                    row=f"{seen + 1:,}",
                )
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
                raise IngestRejected(
                    gettext_noop(
                        "The workbook's sheet is damaged: it could not be decompressed past "
                        "row %(row)s."
                    ),
                    row=f"{seen:,}",
                )
            if row is None:
                return
            seen += 1
            cells += len(row)
            self._check_rows(seen)
            if cells > self.limits.xlsx_max_cells:
                raise cells_message(self.limits.xlsx_max_cells)
            yield row

    def _check_declared(self, sheet) -> None:
        """The sheet's declared size (its dimension), checked before any row is read."""
        rows, columns = sheet.max_row or 0, sheet.max_column or 0
        self._check_rows(rows)
        if rows * columns > self.limits.xlsx_max_cells:
            raise cells_message(self.limits.xlsx_max_cells)

    def read_layout(self) -> Layout:
        with self._sheet() as sheet:
            self._check_declared(sheet)
            declared = sheet.max_row or 0
            sheet.reset_dimensions()  # read every row, whatever the declaration says
            rows = self._rows(sheet)
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
            tally = TextTally(names)
            self._spool(rows, names, tally, declared)
        if not self.blocks:
            raise IngestRejected(gettext_noop("The sheet has a header but no data rows."))
        self.layout = Layout(names=names, types=tally.types(), text_numbers=True)
        return self.layout

    def _spool(self, rows: Iterator[tuple], names: list[str], tally: TextTally, declared: int):
        """Write every data row's text to the spool, tallying each column as it goes."""
        schema = pa.schema([(n, pa.string()) for n in names])
        # unnamed (nothing is left after a crash), beside the upload rather than in a /tmp
        # that may be memory
        self.spool = tempfile.TemporaryFile(dir=self.path.parent)
        width = len(names)
        total_text = 0
        block: list[list[str | None]] = []
        block_cells = block_text = 0
        seen = 1
        with pa.ipc.new_stream(self.spool, schema) as writer:

            def flush() -> None:
                table = _table(block, names)
                tally.update(table)
                writer.write_table(table)
                self.blocks += 1

            for row in rows:
                seen += 1
                read = self._texts(row, width)
                if read is None:
                    continue  # a blank line, as a CSV reader skips it
                texts, size = read
                block.append(texts)
                block_cells += width
                block_text += size
                total_text += size
                if total_text > self.limits.max_decompressed_bytes:
                    raise IngestRejected(
                        gettext_noop(
                            "The sheet's text adds up to more than %(size)s, the limit for an "
                            "upload once decompressed."
                        ),
                        size=human_size(self.limits.max_decompressed_bytes),
                    )
                if block_cells >= BLOCK_CELLS or block_text >= BLOCK_TEXT_BYTES:
                    flush()
                    block, block_cells, block_text = [], 0, 0
                    if self.on_progress is not None and declared > 1:
                        self.on_progress(READ_SHARE * min(seen / declared, 1.0))
            if block:
                flush()

    def _texts(self, row: tuple, width: int) -> tuple[list[str | None], int] | None:
        """The row's cells as text (None: empty) and their length, or None for a blank row;
        refused when it has values past the named columns or more text than the per-row
        limit."""
        if len(row) > width:
            if any(v is not None for v in row[width:]):
                raise IngestRejected(
                    gettext_noop(
                        "A row has values to the right of the last named column: every column "
                        "needs a name in the first row."
                    )
                )
            row = row[:width]
        texts = [
            None if v is None else v if type(v) is str else str(v) if type(v) is int else _text(v)
            for v in row
        ]
        if len(texts) < width:
            texts.extend([None] * (width - len(texts)))
        empty = texts.count(None)
        if empty == width:
            return None
        size = sum(map(len, filter(None, texts))) if empty else sum(map(len, texts))
        limit = self.limits.max_row_bytes
        if 4 * size > limit and sum(len(t.encode()) for t in texts if t) > limit:
            raise row_message(self.limits)
        return texts, size

    def batches(self, types: dict[str, str]) -> Iterator[tuple[pa.RecordBatch, float]]:
        """The spooled rows as string batches (the writer converts them to `types`)."""
        assert self.layout is not None and self.spool is not None
        self.spool.seek(0)
        with pa.ipc.open_stream(self.spool) as stream:
            for done, batch in enumerate(stream, start=1):
                yield batch, READ_SHARE + (1 - READ_SHARE) * done / max(self.blocks, 1)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None


def _table(rows: list[list[str | None]], names: list[str]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return pa.table(
        {n: pa.array(list(c), pa.string()) for n, c in zip(names, columns, strict=True)}
    )
