"""What an upload looks like before it is ingested: encoding, delimiter, quote,
decimal mark and header, detected on a sample, and the first rows read that way.

Detection reads at most DETECT_BYTES of the (decompressed) file. The encoding
comes from a byte-order mark when there is one, else from charset-normalizer;
the delimiter is the candidate that splits the first lines into the same number
of fields (more than one); a decimal comma is suggested when the separator is
not a comma and a column's cells read like '3,25', a thousands separator when a column's
numbers are grouped in a way no other reading explains ('1.234,5', '1,234,567').
Nothing here is stored: the
preview's cells go only to the owner who asked (see datasets.services.reading).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from charset_normalizer import from_bytes
from django.utils.translation import gettext_noop

from datasets.ingest.common import DELIMITERS, CsvDialect, IngestLimits, IngestRejected
from datasets.ingest.decoding import normalize_encoding
from datasets.ingest.header import header_problem
from datasets.ingest.reader import GuardedStream, inspect_sample, read_header_and_sample
from dpportal.messages import Record, record

DETECT_BYTES = 256 * 1024
SNIFF_LINES = 50
PREVIEW_ROWS = 10
DECIMAL_COMMA = re.compile(r"^\s*[+-]?[0-9]+,[0-9]+\s*$")
BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class Preview:
    """The detected (or chosen) dialect, the first rows read that way, and warnings."""

    dialect: CsvDialect
    columns: list[str]
    rows: list[list[str]]
    warnings: list[Record] = field(default_factory=list)  # dpportal.messages records
    error: str = ""


def raw_sample(path: Path, limits: IngestLimits, size: int = DETECT_BYTES) -> bytes:
    stream = GuardedStream(path, limits=limits, encoding=None)
    try:
        head = b""
        while len(head) < size:
            chunk = stream.read(size - len(head))
            if not chunk:
                break
            head += chunk
    finally:
        stream.close()
    return head


def utf16_without_bom(sample: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' when the sample reads as UTF-16 text without a
    byte-order mark: the zero high bytes of ASCII characters (digits, delimiters,
    line breaks) sit on one side of most byte pairs, and the whole sample decodes
    to text with no NUL. None otherwise."""
    head = sample[: len(sample) - len(sample) % 2]
    pairs = len(head) // 2
    if pairs < 2:
        return None
    odd, even = head[1::2].count(0), head[0::2].count(0)
    for name, zeros, other in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if zeros >= 0.3 * pairs and other <= 0.05 * pairs:
            try:
                text = head.decode(name)
            except UnicodeDecodeError:
                # a cut surrogate pair at the end of the sample is no reason to refuse
                try:
                    text = head[:-2].decode(name)
                except UnicodeDecodeError:
                    return None
            return None if "\x00" in text else name
    return None


def detect_encoding(sample: bytes) -> str:
    for bom, name in BOMS:
        if sample.startswith(bom):
            return name
    if b"\x00" in sample:
        # a NUL in UTF-16 text without a byte-order mark, or else the ingest refuses it
        return utf16_without_bom(sample) or "utf-8"
    if not sample or sample.isascii():
        return "utf-8"
    cut = sample.rfind(b"\n")
    body = sample[: cut + 1] if cut > 0 else sample
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    return best_single_or_multibyte(body) or "utf-8"


#: Western European encodings, preferred in this order when a sample reads as plausibly
#: in one of them as in another (Central European, Baltic) single-byte encoding
WESTERN = ("cp1252", "latin-1", "iso8859-15")


def best_single_or_multibyte(body: bytes) -> str | None:
    """The allowed encoding that reads `body` (no BOM, no NUL, not UTF-8) most plausibly.

    charset_normalizer proposes the candidates; it is weak on short samples (many tie
    on no "chaos" and no language coherence), so its ranking is refined:

    - UTF-16/32 are never chosen here: without a byte-order mark, text in them has NUL
      bytes (ASCII digits, delimiters and line breaks), and `body` has none. Shift-JIS
      had been read as UTF-16 that way.
    - a decoding that puts a symbol against a letter ("£ukasz": Polish Ł read as
      Windows-1252) or a capital inside a lowercase word ("ódŸ") loses;
    - then one whose accented letters all belong to one language's alphabet
      (LANGUAGE_LETTERS) beats one that mixes alphabets (Czech read as Windows-1252
      gives Nordic ø beside Italian ì);
    - then charset_normalizer's chaos (lower) and coherence (higher);
    - then, on a tie, a Western encoding wins: "Genève" in Latin-1 decodes as well in
      Windows-1250 ("Genčve"), both as one language's letters, and nothing in a short
      sample tells them apart. The owner sees the reading before confirming it.
    """
    ranked = []
    for position, match in enumerate(from_bytes(body)):
        for alias in [match.encoding, *match.could_be_from_charset]:
            name = normalize_encoding(alias)
            if name is None or codecs.lookup(name).name.startswith(("utf-16", "utf-32")):
                continue
            try:
                text = body.decode(name)
            except UnicodeDecodeError:
                continue
            western = WESTERN.index(name) if name in WESTERN else len(WESTERN)
            ranked.append(
                (
                    _implausible(text),
                    -_one_language_share(text),
                    match.chaos,
                    -match.coherence,
                    western,
                    position,
                    name,
                )
            )
    return min(ranked)[-1] if ranked else None


#: the accented Latin letters of languages written in the single-byte encodings offered
LANGUAGE_LETTERS = {
    language: frozenset(letters)
    for language, letters in {
        "french": "àâæçéèêëîïôœùûüÿ",
        "german": "äöüß",
        "spanish": "áéíñóúü",
        "portuguese": "àáâãçéêíóôõú",
        "italian": "àèéìíîòóù",
        "dutch": "áéëïóöü",
        "nordic": "åäæéöø",
        "icelandic": "áæéíðóöúýþ",
        "czech": "áčďéěíňóřšťúůýž",
        "slovak": "áäčďéíĺľňóôŕšťúýž",
        "polish": "ąćęłńóśźż",
        "hungarian": "áéíóöőúüű",
        "croatian": "čćđšž",
        "romanian": "ăâîșțşţ",
        "turkish": "çğıöşü",
    }.items()
}


def _one_language_share(text: str) -> float:
    """The largest share of the text's distinct accented Latin letters that one language
    of LANGUAGE_LETTERS writes (1.0 when there are none)."""
    letters = {c for c in text.lower() if not c.isascii() and c.isalpha() and c <= "\u024f"}
    if not letters:
        return 1.0
    return max(len(letters & alphabet) for alphabet in LANGUAGE_LETTERS.values()) / len(letters)


def _implausible(text: str) -> int:
    """How many non-ASCII characters are unlikely: a symbol touching a letter, a capital
    letter right after a lowercase one, or a character outside the Basic Multilingual
    Plane (rare ideographs: Shift-JIS 神戸 read as Big5-HKSCS gives one)."""
    odd = 0
    for i, char in enumerate(text):
        if char.isascii():
            continue
        if ord(char) > 0xFFFF:
            odd += 1
            continue
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if not char.isalpha():
            odd += char.isprintable() and (before.isalpha() or after.isalpha())
        elif char.isupper() and before.isalpha() and before.islower():
            odd += 1
    return odd


def _lines(text: str) -> str:
    return "\n".join(text.splitlines()[:SNIFF_LINES])


def _parse(text: str, delimiter: str, quote_char: str) -> list[list[str]]:
    """The rows of `text`; none when it does not parse (e.g. a huge field)."""
    try:
        return list(csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quote_char))
    except csv.Error:
        return []


def sniff_delimiter(text: str, quote_char: str = '"') -> str:
    """The candidate giving every sniffed line the same number of fields (most fields wins;
    on a tie another delimiter beats the comma, which a decimal comma puts in cells)."""
    head = _lines(text)
    best, best_fields = ",", 1
    for delimiter in DELIMITERS:
        rows = _parse(head, delimiter, quote_char)
        rows = rows[:-1] if len(rows) > 2 else rows  # the last line may be cut
        counts = {len(r) for r in rows if r}
        n = counts.pop() if len(counts) == 1 else 0
        if n > best_fields or (n == best_fields > 1 and best == ","):
            best, best_fields = delimiter, n
    return best


def sniff_quote(text: str) -> str:
    head = _lines(text)
    double = len(re.findall(r'(^|[,;\t|])"', head, re.M))
    single = len(re.findall(r"(^|[,;\t|])'[^'\n]*'([,;\t|]|$)", head, re.M))
    return "'" if single > double else '"'


def sniff_decimal_comma(text: str, delimiter: str, quote_char: str) -> bool:
    if delimiter == ",":
        return False
    rows = _parse(_lines(text), delimiter, quote_char)
    for column in zip(*rows[1:-1] or rows[1:], strict=False):
        cells = [c for c in column if c.strip()]
        if cells and sum(bool(DECIMAL_COMMA.match(c)) for c in cells) >= 0.9 * len(cells):
            return True
    return False


#: (decimal comma, thousands separator): a number unambiguously written that way
#: ('1.234,5' or '1.234.567'; '1,234.5' or '1,234,567'), and any number so written
GROUPINGS = (
    (True, ".", r"^\s*[+-]?[0-9]{1,3}(\.[0-9]{3})+(,[0-9]+|(\.[0-9]{3})+)\s*$",
     r"^\s*[+-]?([0-9]{1,3}(\.[0-9]{3})*|[0-9]+)(,[0-9]+)?\s*$"),
    (False, ",", r"^\s*[+-]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+|(,[0-9]{3})+)\s*$",
     r"^\s*[+-]?([0-9]{1,3}(,[0-9]{3})*|[0-9]+)(\.[0-9]+)?\s*$"),
)  # fmt: skip


def sniff_grouping(text: str, delimiter: str, quote_char: str) -> tuple[bool, str] | None:
    """(decimal comma, thousands separator) when a column's cells are numbers written
    with grouping that cannot be read another way; None otherwise (nothing proposed)."""
    rows = _parse(_lines(text), delimiter, quote_char)
    for column in zip(*rows[1:-1] or rows[1:], strict=False):
        cells = [c for c in column if c.strip()]
        for decimal_comma, thousands, sure, any_number in GROUPINGS:
            if decimal_comma and delimiter == ",":
                continue
            if any(re.match(sure, c) for c in cells) and sum(
                bool(re.match(any_number, c)) for c in cells
            ) >= 0.9 * len(cells):
                return decimal_comma, thousands
    return None


def detect(path: Path, limits: IngestLimits, delimiter: str | None = None) -> CsvDialect:
    """The dialect of the file's sample; `delimiter` presets the separator (a .tsv's tab)."""
    sample = raw_sample(path, limits)
    if not sample.strip():
        raise IngestRejected(gettext_noop("The file is empty."))
    encoding = detect_encoding(sample)
    text = sample.decode(encoding, errors="replace").lstrip("\ufeff")
    quote_char = sniff_quote(text)
    delimiter = delimiter or sniff_delimiter(text, quote_char)
    dialect = CsvDialect(
        encoding=encoding,
        delimiter=delimiter,
        quote_char=quote_char,
        decimal_comma=sniff_decimal_comma(text, delimiter, quote_char),
    )
    grouping = sniff_grouping(text, delimiter, quote_char)
    if grouping is not None:
        dialect = replace(dialect, decimal_comma=grouping[0], thousands=grouping[1])
    first = next(iter(_parse(_lines(text), delimiter, quote_char)), [])
    if header_problem([c.strip() for c in first], limits) == "data":
        dialect = replace(dialect, header=False)
    return dialect


def preview(
    path: Path, limits: IngestLimits, dialect: CsvDialect, rows: int = PREVIEW_ROWS
) -> Preview:
    """The first `rows` rows decoded and split as `dialect` says, with warnings.

    A problem the ingest would refuse within the sample (an undecodable byte, a
    header that names nothing) is returned as `error` rather than raised.
    """
    try:
        names, sample = read_header_and_sample(path, limits, dialect)
        text = sample.decode("utf-8", errors="replace")
        reader = csv.reader(
            io.StringIO(text), delimiter=dialect.delimiter, quotechar=dialect.quote_char
        )
        table = [row for _, row in zip(range(rows + int(dialect.header)), reader, strict=False)]
        body = table[1:] if dialect.header else table
        _, warnings = inspect_sample(
            names, sample, dialect=dialect, max_row_bytes=limits.max_row_bytes
        )
    except IngestRejected as exc:
        # built for the owner's request: the reason in their language
        return Preview(dialect=dialect, columns=[], rows=[], error=exc.reader_message())
    if not dialect.header:
        warnings = []
    elif not warnings and header_problem(names, limits) == "data":
        warnings = [record(gettext_noop("The first line looks like data rather than a header."))]
    return Preview(dialect=dialect, columns=names, rows=body, warnings=warnings)
