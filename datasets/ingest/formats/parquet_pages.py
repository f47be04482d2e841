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


def page_sizes(read_at, start: int, length: int) -> Iterator[int]:
    """Each page's uncompressed size, for the pages in `length` bytes from `start`
    (a column chunk); read_at(size, offset) -> bytes. BadHeader when a header does
    not parse or a page runs past the chunk."""
    offset, end = start, start + length
    while offset < end:
        size = HEADER_READ_BYTES
        while True:
            data = read_at(min(size, end - offset), offset)
            reader = _Reader(bytes(data))
            try:
                fields = reader.struct(wanted=(2, 3))
                break
            except BadHeader:
                if size >= MAX_HEADER_BYTES or len(data) < size:
                    raise
                size *= 4
        uncompressed, compressed = fields.get(2), fields.get(3)
        if uncompressed is None or compressed is None or uncompressed < 0 or compressed < 0:
            raise BadHeader()
        offset += reader.pos + compressed
        if offset > end:
            raise BadHeader()
        yield uncompressed
