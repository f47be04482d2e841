"""The parts of an .xlsx container, each read within a budget before openpyxl keeps it.

An .xlsx is a zip of XML parts. openpyxl reads the shared strings table whole into a
list, parses the styles and workbook parts whole, and streams the sheets; none of it
is bounded by the size of the upload (a few hundred KB of shared strings can inflate
to gigabytes of Python strings). Here:

- every part's declared size (the zip's central directory) is checked before anything
  is read: the shared strings part against `xlsx_max_shared_strings_bytes`, a sheet
  against `max_decompressed_bytes`, any other part against `xlsx_max_part_bytes`, and
  every part but a sheet against the compression ratio `max_decompression_ratio`;
- the directory can lie, so the bytes actually inflated are counted as they are read
  (GuardedArchive opens every part through a CountedPart), and a part is stopped as
  soon as it produces more than it declared or than its limit;
- no stretch of XML between two '<' may be longer than a value may be (six times the
  per-value limit, room for escapes), so no single value is built in memory past that
  bound; and a document type declaration (which a workbook never needs, and which is
  how external entities and entity expansion start) is refused, as is a part not in
  UTF-8 (where these byte checks would not see the markup);
- in a sheet, the cells are counted from the raw XML as it streams (openpyxl builds a
  whole row before handing it over): past EXCEL_MAX_COLUMNS in one row, or past
  `xlsx_max_cells` in the sheet, the read stops;
- the shared strings are read by `read_shared_strings`, which counts them
  (`xlsx_max_shared_strings`), their size in memory (`xlsx_max_shared_strings_bytes`)
  and each one's length (the per-value limit, `max_row_bytes`).
"""

from __future__ import annotations

import copy
import re
import sys
import zipfile
from xml.etree.ElementTree import iterparse

from django.utils.translation import gettext_noop
from openpyxl.cell.text import Text
from openpyxl.xml.constants import SHEET_MAIN_NS

from datasets.ingest.common import IngestLimits, IngestRejected, human_size

#: Excel's own limit of columns (XFD): no row of a sheet has more cells
EXCEL_MAX_COLUMNS = 16_384
#: a value's XML may be this many times its text (escapes such as '&quot;')
ESCAPE_ROOM = 6
READ_PIECE = 1 << 20
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CELL = re.compile(rb"<(?:\w+:)?c[\s/>]")
_ROW = re.compile(rb"<(?:\w+:)?row[\s/>]")
_STRING_TAG = f"{{{SHEET_MAIN_NS}}}si"
_TEXT_TAG = f"{{{SHEET_MAIN_NS}}}t"


def is_sheet(name: str) -> bool:
    return name.startswith("xl/worksheets/") and name.endswith(".xml")


def is_shared_strings(name: str) -> bool:
    return name.rsplit("/", 1)[-1].lower() == "sharedstrings.xml"


def cells_message(limit: int) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "The sheet has more than %(limit)s cells (rows times columns), the limit for a "
            "spreadsheet: save it as CSV (or Parquet) and upload that."
        ),
        limit=f"{limit:,}",
    )


def value_message(limits: IngestLimits, part: str) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "A value in the workbook's part '%(part)s' is longer than %(size)s, the limit per "
            "value."
        ),
        part=part[:100],
        size=human_size(limits.max_row_bytes),
    )


def row_message(limits: IngestLimits) -> IngestRejected:
    return IngestRejected(
        gettext_noop("A row of the sheet holds more than %(size)s of text, the limit per row."),
        size=human_size(limits.max_row_bytes),
    )


class GuardedArchive(zipfile.ZipFile):
    """A zip whose parts are checked against their limits on opening and counted as read.

    `current` is the part opened last (named in messages about malformed XML)."""

    def __init__(self, file, limits: IngestLimits) -> None:
        super().__init__(file)
        self.limits = limits
        self.current = ""
        for info in self.infolist():
            if not info.is_dir():
                self._check_declared(info)

    def limit_of(self, name: str) -> int:
        if is_sheet(name):
            return self.limits.max_decompressed_bytes
        if is_shared_strings(name):
            return self.limits.xlsx_max_shared_strings_bytes
        return self.limits.xlsx_max_part_bytes

    def _check_declared(self, info: zipfile.ZipInfo) -> None:
        limit = self.limit_of(info.filename)
        if info.file_size > limit:
            raise part_too_large(info.filename, limit)
        ratio = self.limits.max_decompression_ratio
        if not is_sheet(info.filename) and info.file_size > ratio * max(info.compress_size, 1):
            raise IngestRejected(
                gettext_noop(
                    "The workbook's part '%(part)s' expands more than %(ratio)s times when "
                    "decompressed, the limit for a compressed part."
                ),
                part=info.filename[:100],
                ratio=ratio,
            )

    def open(self, name, mode="r", pwd=None, *, force_zip64=False):  # noqa: A003
        if mode != "r":
            return super().open(name, mode, pwd, force_zip64=force_zip64)
        info = name if isinstance(name, zipfile.ZipInfo) else self.getinfo(name)
        limit = self.limit_of(info.filename)
        # zipfile stops at the declared size; let it run one byte past the limit, so
        # that a part larger than it declared is seen, counted and refused here
        widened = copy.copy(info)
        widened.file_size = limit + 1
        self.current = info.filename
        return CountedPart(super().open(widened, "r", pwd), info, limit, self)


def part_too_large(name: str, limit: int) -> IngestRejected:
    return IngestRejected(
        gettext_noop(
            "The workbook's part '%(part)s' is larger than %(size)s when decompressed, the "
            "limit for that part."
        ),
        part=name[:100],
        size=human_size(limit),
    )


class CountedPart:
    """One part's inflated bytes, counted and checked as they are read (see the module)."""

    def __init__(self, stream, info: zipfile.ZipInfo, limit: int, archive: GuardedArchive):
        self.stream, self.info, self.limit, self.archive = stream, info, limit, archive
        self.name = info.filename
        self.sheet = is_sheet(self.name)
        limits = archive.limits
        self.max_run = ESCAPE_ROOM * limits.max_row_bytes + 1024
        self.read_bytes = 0
        self.run = 0  # bytes since the last '<'
        self.tail = b""  # the last bytes read, for a marker split across two reads
        self.row_cells = 0
        self.row_bytes = 0  # raw XML bytes of the current row so far
        self.max_row = ESCAPE_ROOM * limits.max_row_bytes + EXCEL_MAX_COLUMNS * 128
        self.cells = 0  # cells seen in this read of a sheet's raw XML

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            pieces = []
            while piece := self.read(READ_PIECE):
                pieces.append(piece)
            return b"".join(pieces)
        data = self.stream.read(min(n, READ_PIECE))
        if data:
            self._check(data)
        return data

    def _check(self, data: bytes) -> None:
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise part_too_large(self.name, self.limit)
        if self.read_bytes > self.info.file_size:
            raise IngestRejected(
                gettext_noop(
                    "The workbook's part '%(part)s' holds more than the %(size)s its archive "
                    "declares: the file is damaged or forged."
                ),
                part=self.name[:100],
                size=human_size(self.info.file_size),
            )
        if self.read_bytes == len(data) and (b"\x00" in data[:64] or data[:2] in UTF16_BOMS):
            # the checks below read the bytes as UTF-8 (as Excel writes every part)
            raise IngestRejected(
                gettext_noop(
                    "The workbook's part '%(part)s' is not encoded in UTF-8, as workbooks are."
                ),
                part=self.name[:100],
            )
        joined = self.tail + data
        if b"<!DOCTYPE" in joined:
            raise IngestRejected(
                gettext_noop(
                    "The workbook's part '%(part)s' declares a document type (DTD), which a "
                    "workbook never needs (it can define entities): the file is refused."
                ),
                part=self.name[:100],
            )
        self.tail = data[-16:]
        self._check_runs(data)
        if self.sheet:
            self._count_cells(joined, len(joined) - len(data))

    def _check_runs(self, data: bytes) -> None:
        first = data.find(b"<")
        if first < 0:
            self.run += len(data)
        else:
            self.run += first
            if self.run > self.max_run:
                raise value_message(self.archive.limits, self.name)
            if len(data) > self.max_run and re.search(
                rb"[^<]{%d}" % (self.max_run + 1), data
            ):  # only a read larger than the bound can hide a long run inside
                raise value_message(self.archive.limits, self.name)
            self.run = len(data) - data.rindex(b"<") - 1
        if self.run > self.max_run:
            raise value_message(self.archive.limits, self.name)

    def _count_cells(self, joined: bytes, overlap: int) -> None:
        # `joined` starts with the previous read's tail (`overlap` bytes), so that a tag
        # split across two reads is found; tags wholly inside that tail were counted then.
        # A row that starts and ends within one read is at most one read long (1 MiB).
        cells = len(_CELL.findall(joined)) - len(_CELL.findall(joined[:overlap]))
        self.cells += cells
        last = None
        for last in _ROW.finditer(joined, overlap):  # noqa: B007 - the last row start
            pass
        if last is None:
            self.row_cells += cells
            self.row_bytes += len(joined) - overlap
        else:
            self.row_bytes += last.start() - overlap
            if self.row_bytes > self.max_row:
                raise row_message(self.archive.limits)
            self.row_cells = len(_CELL.findall(joined, last.end()))
            self.row_bytes = len(joined) - last.start()
        if self.row_bytes > self.max_row:
            raise row_message(self.archive.limits)
        if self.row_cells > EXCEL_MAX_COLUMNS:
            raise IngestRejected(
                gettext_noop(
                    "A row of the sheet has more than %(limit)s cells, Excel's own limit of "
                    "columns."
                ),
                limit=f"{EXCEL_MAX_COLUMNS:,}",
            )
        if self.cells > self.archive.limits.xlsx_max_cells:
            raise cells_message(self.archive.limits.xlsx_max_cells)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> CountedPart:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_shared_strings(source, limits: IngestLimits) -> list[str]:
    """The shared strings table as openpyxl's reader gives it, counted while it is read:
    refused past `xlsx_max_shared_strings` strings, past `xlsx_max_shared_strings_bytes`
    held in memory, or with one string longer than the per-value limit."""
    strings: list[str] = []
    held = 0
    root = None
    # `source` is a CountedPart, which refuses a document type declaration (so no entity)
    for event, node in iterparse(source, events=("start", "end")):  # noqa: S314
        if root is None:
            root = node
            continue
        if event != "end" or node.tag != _STRING_TAG:
            continue
        if len(node) == 1 and node[0].tag == _TEXT_TAG and not len(node[0]):
            text = node[0].text or ""  # plain text, the common case: quicker than Text
        else:
            text = Text.from_tree(node).content
        text = text.replace("x005F_", "")
        root.clear()  # drop the parsed strings' elements as they are taken
        if 4 * len(text) > limits.max_row_bytes and len(text.encode()) > limits.max_row_bytes:
            raise value_message(limits, "xl/sharedStrings.xml")
        held += sys.getsizeof(text)
        if held > limits.xlsx_max_shared_strings_bytes:
            raise IngestRejected(
                gettext_noop(
                    "The workbook's shared strings take more than %(size)s, the limit for a "
                    "spreadsheet's table of text values: save it as CSV and upload that."
                ),
                size=human_size(limits.xlsx_max_shared_strings_bytes),
            )
        strings.append(text)
        if len(strings) > limits.xlsx_max_shared_strings:
            raise IngestRejected(
                gettext_noop(
                    "The workbook has more than %(limit)s distinct text values (shared "
                    "strings), the limit for a spreadsheet: save it as CSV and upload that."
                ),
                limit=f"{limits.xlsx_max_shared_strings:,}",
            )
    return strings
