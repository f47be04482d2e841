"""A gzip CSV, or text in another encoding, is decompressed and decoded once, as a
stream, into a plain UTF-8 copy that the fast path (and, when it hands the file back,
the careful reader) reads; it stores what the careful reader alone stores from the
original, is refused the same way when hostile, and the copy never outlives the ingest."""

from __future__ import annotations

import gzip
from pathlib import Path
from unittest import mock

import pytest

from datasets.ingest import CsvDialect, IngestLimits, IngestRejected, ingest_csv
from datasets.ingest import reader as ingest_reader
from tests.test_ingest_fast import both, census, varying

LIMITS = IngestLimits(max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50)


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.tmp")]


def test_a_gzip_csv_takes_the_fast_path_and_stores_what_the_careful_reader_does(tmp_path):
    assert both(tmp_path, gzip.compress(census(2000))) == "polars"
    assert _leftovers(tmp_path) == []


def test_a_gzip_csv_is_decompressed_once(tmp_path):
    source = tmp_path / "upload.csv.gz"
    source.write_bytes(gzip.compress(census(500)))
    opened = []
    real = ingest_reader.igzip.IGzipFile

    def counting(*args, **kwargs):
        opened.append(1)
        return real(*args, **kwargs)

    with mock.patch.object(ingest_reader.igzip, "IGzipFile", side_effect=counting):
        result = ingest_csv(
            source=source,
            destination=tmp_path / "data.parquet",
            limits=LIMITS,
            dialect=CsvDialect(),
        )
    assert result.reader == "polars"
    assert len(opened) == 1
    assert _leftovers(tmp_path) == []


def test_a_gzip_that_the_fast_path_hands_back_is_read_from_the_plain_copy(tmp_path):
    """Decimal commas are the careful reader's: it reads the copy, not the gzip again."""
    content = b"a;b\n1,5;x\n2,25;y\n"
    dialect = CsvDialect(delimiter=";", decimal_comma=True)
    assert both(tmp_path, gzip.compress(content), dialect=dialect) == "pyarrow"
    assert _leftovers(tmp_path) == []


def test_a_gzip_bomb_is_refused_and_leaves_no_copy(tmp_path):
    limits = IngestLimits(max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 20, max_columns=50)
    source = tmp_path / "bomb.csv.gz"
    source.write_bytes(gzip.compress(b"a,b\n" + b"1,2\n" * (1 << 20)))
    with pytest.raises(IngestRejected):
        ingest_csv(
            source=source,
            destination=tmp_path / "data.parquet",
            limits=limits,
            dialect=CsvDialect(),
        )
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "data.parquet").exists()


def test_a_damaged_gzip_is_refused_with_its_message_and_leaves_no_copy(tmp_path):
    source = tmp_path / "damaged.csv.gz"
    source.write_bytes(gzip.compress(census(200))[:-40] + b"\x00" * 40)
    with pytest.raises(IngestRejected) as refused:
        ingest_csv(
            source=source,
            destination=tmp_path / "data.parquet",
            limits=LIMITS,
            dialect=CsvDialect(),
        )
    assert "gzip" in str(refused.value.records)
    assert _leftovers(tmp_path) == []


GB = CsvDialect(encoding="gb18030", delimiter=";")


def _gb18030(rows: int = 300) -> bytes:
    text = census(rows).decode("utf-8").replace(",", ";").replace("Zürich", "广东")
    return text.encode("gb18030")


def test_a_gb18030_csv_is_transcoded_once_into_the_fast_path(tmp_path):
    assert both(tmp_path, _gb18030(), dialect=GB) == "polars"
    assert both(tmp_path, gzip.compress(_gb18030()), dialect=GB) == "polars"
    assert _leftovers(tmp_path) == []


def test_undecodable_gb18030_is_refused_as_the_careful_reader_refuses_it(tmp_path):
    broken = _gb18030(200) + b"9;\xff\xff\xff;x;1;2\n"
    assert both(tmp_path, broken, dialect=GB) == "refused"
    # a header problem before the broken byte is still the one stated
    assert both(tmp_path, b"a;a\n" + broken, dialect=GB) == "refused"
    assert _leftovers(tmp_path) == []


def test_a_line_over_the_limit_in_a_gzip_is_seen_on_the_copy_and_refused_alike(tmp_path):
    limits = IngestLimits(
        max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50,
        max_row_bytes=4096,
    )  # fmt: skip
    content = census(300) + b'1,2,"' + b"x" * 5000 + b'",4,5\n'
    assert both(tmp_path, gzip.compress(content), limits=limits) == "refused"
    assert both(tmp_path, gzip.compress(census(300)), limits=limits) == "polars"


# --- the copy in parts, parsed while the rest is written --------------------------------

SMALL = IngestLimits(
    max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50, max_row_bytes=512
)


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of about 4 KB (a sample of 2 KB, reads of 1 KB): a file of a few thousand
    rows is copied, and read by the child, in dozens of parts."""
    for module in ("datasets.ingest.reader", "datasets.ingest.writer"):
        monkeypatch.setattr(f"{module}.SAMPLE_BYTES", 2048)
    monkeypatch.setattr("datasets.ingest.reader.COPY_CHUNK", 1024)
    monkeypatch.setattr("datasets.ingest.writer.PART_BYTES", 4096)
    given: list[Path] = []
    real = ingest_reader.plain_copy

    def counting(*args, **kwargs):
        if kwargs.get("parts"):
            feed = kwargs["parts"]

            def put(part):
                given.append(part)
                feed(part)

            kwargs["parts"] = put
        return real(*args, **kwargs)

    monkeypatch.setattr("datasets.ingest.writer.plain_copy", counting)
    return given


def test_a_copy_in_parts_is_read_by_the_child_as_it_is_written(tmp_path, small_parts):
    assert both(tmp_path, gzip.compress(census(3000)), limits=SMALL) == "polars"
    assert len(small_parts) > 20  # the child read it in parts
    small_parts.clear()
    assert both(tmp_path, _gb18030(3000), dialect=GB, limits=SMALL) == "polars"
    assert len(small_parts) > 10
    assert _leftovers(tmp_path) == []


def test_a_copy_in_parts_read_again_as_text_reads_every_part_again(tmp_path, small_parts):
    """A text column parsed as codes that varies late is parsed again as text: the
    second pass reads the parts already given, then the rest as they come."""
    assert both(tmp_path, gzip.compress(varying(1500)), limits=SMALL) == "polars"
    assert len(small_parts) > 10
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("late", "expected"),
    [
        (b"", "pyarrow"),  # a blank line: the separators are counted over every part
        (b"7,8,Region 02,1.5", "refused"),  # a short row
        (b'7,8,"Region\n02",1.5,3', "pyarrow"),  # a quoted line break, maybe across parts
        (b"7,8,Region 02,NaN,3", "pyarrow"),  # not finite
        (b"7,8," + b"x" * 600 + b",1.5,3", "refused"),  # a line over the limit
    ],
)
def test_a_late_hostile_line_in_a_copy_in_parts_is_handed_back(
    tmp_path, small_parts, late, expected
):
    content = census(3000) + late + b"\n" + census(50).split(b"\n", 1)[1]
    assert both(tmp_path, gzip.compress(content), limits=SMALL) == expected
    assert len(small_parts) > 10
    assert _leftovers(tmp_path) == []


def test_late_undecodable_text_or_a_bomb_in_parts_is_refused_as_the_careful_reader_does(
    tmp_path, small_parts
):
    broken = _gb18030(3000) + b"9;\xff\xff\xff;x;1;2\n" + _gb18030(50)
    assert both(tmp_path, broken, dialect=GB, limits=SMALL) == "refused"
    bomb = IngestLimits(
        max_upload_bytes=1 << 26, max_decompressed_bytes=60_000, max_columns=50,
        max_row_bytes=512,
    )  # fmt: skip
    assert both(tmp_path, gzip.compress(census(3000)), limits=bomb) == "refused"
    assert _leftovers(tmp_path) == []
