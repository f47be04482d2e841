"""Hostile Excel workbooks, small on disk, each written by one function `name(path)`.

Each targets one way an .xlsx can cost a worker more than its size suggests: a shared
strings table that inflates to millions of strings, rows of great width, one huge cell,
a central directory that understates a part's size, a column whose later values are
wider than its first ones, an external entity. The workbooks are written part by part
(raw XML) so that they can be exactly as hostile as intended; the tests in
tests/test_hostile_xlsx.py and bench/hostile.py ingest them in a real worker.
"""

from __future__ import annotations

import hashlib
import struct
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'

CONTENT_TYPES = (
    XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.'
    'openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.sharedStrings+xml"/></Types>'
)
PARTS = {
    "[Content_Types].xml": CONTENT_TYPES,
    "_rels/.rels": (
        XML + f'<Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" '
        f'Type="{RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
    ),
    "xl/workbook.xml": (
        XML + f'<workbook xmlns="{MAIN}" xmlns:r="{RELS}"><sheets>'
        '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
    ),
    "xl/_rels/workbook.xml.rels": (
        XML + f'<Relationships xmlns="{PACKAGE_RELS}">'
        f'<Relationship Id="rId1" Type="{RELS}/worksheet" Target="worksheets/sheet1.xml"/>'
        f'<Relationship Id="rId2" Type="{RELS}/sharedStrings" Target="sharedStrings.xml"/>'
        "</Relationships>"
    ),
}
SHEET = "xl/worksheets/sheet1.xml"
STRINGS = "xl/sharedStrings.xml"


def column_letter(index: int) -> str:
    """1 -> 'A', 27 -> 'AA'."""
    letters = ""
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _sheet_parts(rows: Iterable[str], dimension: str) -> Iterator[bytes]:
    yield (XML + f'<worksheet xmlns="{MAIN}"><dimension ref="{dimension}"/><sheetData>').encode()
    for row in rows:
        yield row.encode()
    yield b"</sheetData></worksheet>"


def _strings_parts(strings: Iterable[str], count: int) -> Iterator[bytes]:
    yield (XML + f'<sst xmlns="{MAIN}" count="{count}" uniqueCount="{count}">').encode()
    batch: list[str] = []
    for text in strings:
        batch.append(f"<si><t>{text}</t></si>")
        if len(batch) >= 10_000:
            yield "".join(batch).encode()
            batch = []
    yield ("".join(batch) + "</sst>").encode()


def write_workbook(
    path: Path, rows: Iterable[str], dimension: str, strings: Iterable[bytes] | None = None
) -> None:
    """A workbook of one sheet whose <row> elements are `rows` (streamed into the zip);
    `strings`: the shared strings part's bytes, streamed too (None: an empty table)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, text in PARTS.items():
            archive.writestr(name, text)
        with archive.open(STRINGS, "w", force_zip64=True) as out:
            for chunk in strings or _strings_parts([], 0):
                out.write(chunk)
        with archive.open(SHEET, "w", force_zip64=True) as out:
            buffer = []
            for chunk in _sheet_parts(rows, dimension):
                buffer.append(chunk)
                if len(buffer) >= 1000:
                    out.write(b"".join(buffer))
                    buffer = []
            out.write(b"".join(buffer))


def _inline(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def header_row(names: list[str]) -> str:
    cells = "".join(_inline(f"{column_letter(i)}1", n) for i, n in enumerate(names, start=1))
    return f'<row r="1">{cells}</row>'


# --- the hostile files ------------------------------------------------------------------


def shared_strings_bomb(path: Path, strings: int = 5_000_000) -> None:
    """A sheet of two cells whose shared strings table holds `strings` short strings:
    a few hundred KB on disk, hundreds of MB of XML, several GB as Python strings."""
    rows = [header_row(["a"]), '<row r="2"><c r="A2" t="s"><v>0</v></c></row>']
    write_workbook(path, rows, "A1:A2", _strings_parts(("x" for _ in range(strings)), strings))


def wide_rows(path: Path, rows: int = 2_000, columns: int = 200) -> None:
    """`rows` rows of `columns` small numbers each (cells without references, as some
    writers save them): small on disk, slow to parse cell by cell."""
    names = [f"c{i}" for i in range(1, columns + 1)]
    body = ("<row>" + "<c><v>7</v></c>" * columns + "</row>" for _ in range(rows))
    write_workbook(path, [header_row(names), *body], f"A1:{column_letter(columns)}{rows + 1}")


def wide_rows_undeclared(path: Path, rows: int = 60_000, columns: int = 200) -> None:
    """Like wide_rows, far more of them, and a dimension that declares two rows: the
    count of cells read must stop it while it streams."""
    names = [f"c{i}" for i in range(1, columns + 1)]
    body = ("<row>" + "<c><v>7</v></c>" * columns + "</row>" for _ in range(rows))
    write_workbook(path, [header_row(names), *body], f"A1:{column_letter(columns)}2")


def huge_cell(path: Path, size: int = 20 * 1024 * 1024) -> None:
    """One inline string cell of `size` characters (20 MB by default)."""
    rows = [header_row(["a", "b"]), '<row r="2">' + _inline("A2", "y" * size) + "</row>"]
    write_workbook(path, rows, "A1:B2")


def huge_shared_string(path: Path, size: int = 2 * 1024 * 1024) -> None:
    """One shared string of `size` characters (hex digits, so that the part does not
    compress past the ratio limit), used by one cell."""
    text = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(size // 64 + 1))
    rows = [header_row(["a"]), '<row r="2"><c r="A2" t="s"><v>0</v></c></row>']
    write_workbook(path, rows, "A1:A2", _strings_parts([text[:size]], 1))


def many_shared_strings(path: Path, strings: int = 1_100_000) -> None:
    """More distinct shared strings than the limit allows (each distinct, so the part
    compresses as real text does): a sheet of two cells that would hold them all."""
    rows = [header_row(["a"]), '<row r="2"><c r="A2" t="s"><v>0</v></c></row>']
    texts = (f"s{i}" for i in range(strings))
    write_workbook(path, rows, "A1:A2", _strings_parts(texts, strings))


def lying_central_directory(path: Path, strings: int = 2_000_000) -> None:
    """A shared strings bomb whose central directory says the part is 1,000 bytes
    unpacked: a reader that trusts the directory checks the wrong size."""
    shared_strings_bomb(path, strings)
    _set_declared_size(path, STRINGS, 1_000)


def int_then_decimal(path: Path, integers: int = 10_000, decimals: int = 5_000) -> None:
    """A column 'income' whose first `integers` values are whole numbers and whose later
    `decimals` are not (x.25): every one must be stored, none made missing."""
    rows = [header_row(["id", "income"])]
    for i in range(integers + decimals):
        r = i + 2
        value = f"{1000 + i}" if i < integers else f"{1000 + i}.25"
        rows.append(f'<row r="{r}"><c r="A{r}"><v>{i}</v></c><c r="B{r}"><v>{value}</v></c></row>')
    write_workbook(path, rows, f"A1:B{integers + decimals + 1}")


def external_entity(path: Path, target: str = "/etc/passwd") -> None:
    """A sheet whose XML declares an external entity reading a local file (XXE)."""
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<!DOCTYPE worksheet [<!ENTITY leak SYSTEM "file://{target}">]>'
        f'<worksheet xmlns="{MAIN}"><dimension ref="A1:A2"/><sheetData>'
        + header_row(["a"])
        + '<row r="2"><c r="A2" t="inlineStr"><is><t>&leak;</t></is></c></row>'
        "</sheetData></worksheet>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in PARTS.items():
            archive.writestr(name, text)
        archive.writestr(STRINGS, XML + f'<sst xmlns="{MAIN}" count="0" uniqueCount="0"/>')
        archive.writestr(SHEET, sheet)


def broken_xml(path: Path) -> None:
    """A sheet whose XML is not well-formed on its third line (a tag left open)."""
    sheet = (
        XML + f'\n<worksheet xmlns="{MAIN}"><sheetData>\n' + header_row(["a"])
        + '\n<row r="2"><c r="A2"><v>1</v></row></sheetData></worksheet>'
    )  # fmt: skip
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in PARTS.items():
            archive.writestr(name, text)
        archive.writestr(STRINGS, XML + f'<sst xmlns="{MAIN}" count="0" uniqueCount="0"/>')
        archive.writestr(SHEET, sheet)


#: the hostile workbooks bench/hostile.py measures, by name
HOSTILE = {
    "xlsx_shared_strings_bomb": shared_strings_bomb,
    "xlsx_wide_rows": wide_rows,
    "xlsx_wide_rows_undeclared": wide_rows_undeclared,
    "xlsx_huge_cell": huge_cell,
    "xlsx_huge_shared_string": huge_shared_string,
    "xlsx_many_shared_strings": many_shared_strings,
    "xlsx_lying_central_directory": lying_central_directory,
    "xlsx_int_then_decimal": int_then_decimal,
    "xlsx_external_entity": external_entity,
}


def _set_declared_size(path: Path, member: str, size: int) -> None:
    """Overwrite `member`'s uncompressed size in the central directory (and in its zip64
    extra field, where the real size then lives) with `size`."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    at = 0
    while True:
        at = data.find(b"PK\x01\x02", at)
        if at < 0:
            raise ValueError(f"{member} not in the central directory")
        name_len, extra_len = struct.unpack_from("<HH", data, at + 28)
        if bytes(data[at + 46 : at + 46 + name_len]) == name:
            break
        at += 4
    uncompressed = struct.unpack_from("<I", data, at + 24)[0]
    if uncompressed == 0xFFFFFFFF:  # zip64: the first 8 bytes of the zip64 extra field
        extra = at + 46 + name_len
        end = extra + extra_len
        while extra < end:
            tag, length = struct.unpack_from("<HH", data, extra)
            if tag == 0x0001:
                struct.pack_into("<Q", data, extra + 4, size)
                break
            extra += 4 + length
    else:
        struct.pack_into("<I", data, at + 24, size)
    path.write_bytes(bytes(data))
