"""The sizes of a Parquet column chunk's pages, read from their headers.

pyarrow decompresses each page whole, and the footer gives only a column chunk's
total size, not its pages': a page can be as large as its chunk. So the page
headers of a large chunk are read (Thrift compact protocol, a few bytes each, the
page bodies skipped) and each page's uncompressed size checked before pyarrow reads
it. Only the first three fields of a PageHeader matter (type, uncompressed size,
compressed size); the rest is skipped field by field.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

#: bytes read at a page's start for its header (more when its statistics are long)
HEADER_READ_BYTES = 4096
#: a header longer than this is refused (it holds at most a page's min/max statistics)
MAX_HEADER_BYTES = 4 << 20

_BOOL_TRUE, _BOOL_FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY = 1, 2, 3, 4, 5, 6, 7, 8
_LIST, _SET, _MAP, _STRUCT = 9, 10, 11, 12


class BadHeader(Exception):
    """The bytes are not a page header (or it is longer than what was read)."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise BadHeader()
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise BadHeader()

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, ttype: int, depth: int = 0) -> None:
        if depth > 32:
            raise BadHeader()
        if ttype in (_BOOL_TRUE, _BOOL_FALSE):
            return
        if ttype == _BYTE:
            self.byte()
        elif ttype in (_I16, _I32, _I64):
            self.varint()
        elif ttype == _DOUBLE:
            self.advance(8)
        elif ttype == _BINARY:
            self.advance(self.varint())
        elif ttype in (_LIST, _SET):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                self.byte() if element in (_BOOL_TRUE, _BOOL_FALSE) else self.skip(
                    element, depth + 1
                )
        elif ttype == _MAP:
            size = self.varint()
            if size:
                kinds = self.byte()
                for _ in range(size):
                    self.skip(kinds >> 4, depth + 1)
                    self.skip(kinds & 0x0F, depth + 1)
        elif ttype == _STRUCT:
            self.struct(depth + 1)
        else:
            raise BadHeader()

    def advance(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise BadHeader()
        self.pos += n

    def struct(self, depth: int = 0, wanted: tuple[int, ...] = ()) -> dict[int, int]:
        """Skip a struct, returning the i32 fields whose ids are in `wanted`."""
        found, field = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return found
            ttype, delta = head & 0x0F, head >> 4
            field = field + delta if delta else self.zigzag()
            if field in wanted and ttype == _I32:
                found[field] = self.zigzag()
            else:
                self.skip(ttype, depth)


def _header(read_at, offset: int, end: int) -> tuple[dict[int, int], int]:
    """The page header at `offset`: its type (1), uncompressed (2) and compressed (3)
    sizes, and its length in bytes."""
    size = HEADER_READ_BYTES
    while True:
        data = read_at(min(size, end - offset), offset)
        reader = _Reader(bytes(data))
        try:
            fields = reader.struct(wanted=(1, 2, 3))
        except BadHeader:
            if size >= MAX_HEADER_BYTES or len(data) < size:
                raise
            size *= 4
            continue
        if fields.get(2, -1) < 0 or fields.get(3, -1) < 0:
            raise BadHeader()
        return fields, reader.pos


def page_sizes(read_at, start: int, length: int) -> Iterator[int]:
    """Each page's uncompressed size, for the pages in `length` bytes from `start`
    (a column chunk); read_at(size, offset) -> bytes. BadHeader when a header does
    not parse or a page runs past the chunk."""
    offset, end = start, start + length
    while offset < end:
        fields, header = _header(read_at, offset, end)
        offset += header + fields[3]
        if offset > end:
            raise BadHeader()
        yield fields[2]


#: pyarrow's names of the Parquet codecs whose pages it can decompress here
CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli"}
DICTIONARY_PAGE = 2


def longest_dictionary_value(read_at, start: int, length: int, compression: str) -> int:
    """The byte length of the longest value of the dictionary page at `start` (a text
    column chunk's first page): what one row of the column can decode to. When the page
    cannot be read here (another codec), its uncompressed size, which no value exceeds.
    0 when the first page is not a dictionary page."""
    fields, header = _header(read_at, start, start + length)
    if fields.get(1) != DICTIONARY_PAGE:
        return 0
    uncompressed, compressed = fields[2], fields[3]
    if header + compressed > length:
        raise BadHeader()
    body = read_at(compressed, start + header)
    if compression != "UNCOMPRESSED":
        if compression not in CODECS:
            return uncompressed
        try:
            body = pa.decompress(body, uncompressed, codec=CODECS[compression])
        except (pa.ArrowException, ValueError):
            raise BadHeader() from None
    data = memoryview(body)
    position, longest = 0, 0
    while position + 4 <= len(data):  # PLAIN byte arrays: a 4-byte length, the bytes
        size = int.from_bytes(data[position : position + 4], "little")
        longest = max(longest, size)
        position += 4 + size
    return longest
