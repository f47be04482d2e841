"""The fast CSV path (Polars in a child process) stores exactly what the careful
reader (pyarrow's streaming reader) stores, or hands the file back to it.

Each case is ingested twice, once as uploads are (fast=True: the child first) and once
by the careful reader alone (fast=False), and the outcomes compared: the same refusal
(message records), or the same Parquet (values and schema) and the same private profile.
Where the file is of a shape Polars reads differently, the fast path must have handed
it back (`reader` says which reader stored it), and the plain shapes must take it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from datasets.ingest import (
    CsvDialect,
    GuardedStream,
    IngestLimits,
    IngestRejected,
    fast,
    ingest_csv,
)
from datasets.ingest.fast import arrow_schema
from datasets.ingest.profile import profile_limits

LIMITS = IngestLimits(max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50)


def outcome(tmp_path: Path, content: bytes, *, fast: bool, dialect=None, limits=LIMITS):
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # hypothesis reuses the fixture
    source = tmp_path / "upload.csv"
    source.write_bytes(content)
    destination = tmp_path / f"data-{fast}.parquet"
    try:
        result = ingest_csv(
            source=source,
            destination=destination,
            limits=limits,
            dialect=dialect or CsvDialect(),
            fast=fast,
        )
    except IngestRejected as exc:
        assert not destination.exists()
        return ("refused", exc.records), "refused"
    table = pq.read_table(destination)
    profiles = [(vars(p), p.to_dict()) for p in result.profiles]
    return ("stored", table.schema, table.to_pylist(), profiles, result.warnings), result.reader


def both(tmp_path: Path, content: bytes, **options) -> str:
    """Ingest both ways; assert the same outcome; return which reader the fast one used."""
    fast, reader = outcome(tmp_path, content, fast=True, **options)
    careful, careful_reader = outcome(tmp_path, content, fast=False, **options)
    assert careful_reader in ("pyarrow", "refused")
    assert fast == careful
    return reader


def census(rows: int = 400) -> bytes:
    regions = ["北京", "Region 02", "Zürich", "Region 04"]
    lines = ['"person_id","age","region","income","hours"']
    for i in range(rows):
        lines.append(f"{1000 + i},{18 + i % 70},{regions[i % 4]},{1000.5 + 37 * i},{i % 60}")
    return ("\n".join(lines) + "\n").encode()


def varying(varied: int = 1500) -> bytes:
    """`label` repeats one value over more rows than the child looks at first (4,096),
    then holds `varied` distinct values; `kind` repeats two values throughout."""
    lines = ["id,label,kind"]
    lines += [f"{i},same,{'ab'[i % 2]}" for i in range(5000)]
    lines += [f"{i},v{i},a" for i in range(5000, 5000 + varied)]
    return ("\n".join(lines) + "\n").encode()


def child_answer(tmp_path: Path, content: bytes, kinds: list[str]) -> dict:
    """The Polars child's answer for `content` (its header's names, these kinds)."""
    source = tmp_path / "child.csv"
    source.write_bytes(content)
    names = content.split(b"\n", 1)[0].decode().split(",")
    types = {"integer": pa.int64(), "float": pa.float64(), "string": pa.string()}
    job = {
        "source": str(source), "destination": str(tmp_path / "child.parquet"),
        "names": names, "kinds": kinds, "header": True, "delimiter": ",", "quote": '"',
        "row_group_rows": 1000, "batch_rows": 500, "limits": profile_limits(),
        "arrow_schema": arrow_schema(pa.schema([(n, types[k]) for n, k in zip(names, kinds)])),
    }  # fmt: skip
    child = Path(fast.__file__).with_name("polars_child.py")
    run = subprocess.run(
        [sys.executable, "-P", str(child)], input=json.dumps(job) + "\n",
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(run.stdout.splitlines()[-1])


def test_text_that_repeats_at_first_is_parsed_as_codes_until_it_varies(tmp_path):
    """The child parses a text column whose first rows repeat a few values as codes, and
    one that then holds more values than the profile tracks again as text; either way
    it stores and profiles what the careful reader does."""
    kinds = ["integer", "string", "string"]
    assert child_answer(tmp_path, varying(10), kinds)["coded"] == ["kind", "label"]
    widened = child_answer(tmp_path, varying(1500), kinds)
    assert widened["ok"] and widened["coded"] == ["kind"]
    assert both(tmp_path, varying(1500)) == "polars"
    coded = tmp_path / "coded"
    coded.mkdir()
    assert both(coded, varying(10)) == "polars"
    # codes are written as the texts are: the same row groups and statistics
    stats = {}
    for first in (True, False):
        meta = pq.ParquetFile(next(coded.glob(f"*/data-{first}.parquet"))).metadata
        groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
        stats[first] = [[g.column(c).statistics.to_dict() for c in range(3)] for g in groups]
    assert stats[True] == stats[False]
    distinct = "id,name\n" + "".join(f"{i},n{i % 1000}\n" for i in range(5000))
    assert child_answer(tmp_path, distinct.encode(), kinds[:2])["coded"] == []


def test_a_plain_file_is_read_by_polars_and_stored_as_the_careful_reader_stores_it(tmp_path):
    assert both(tmp_path, census()) == "polars"
    stored = next(tmp_path.glob("*/data-True.parquet"))
    table = pq.read_table(stored)
    assert table.schema.field("region").type == pa.string()  # not Polars' large_string
    assert pq.ParquetFile(stored).metadata.row_group(0).num_rows == 400


def test_row_groups_and_extremes_over_many_groups(tmp_path, monkeypatch):
    monkeypatch.setattr("datasets.ingest.writer.ROW_GROUP_ROWS", 64)  # both readers
    assert both(tmp_path, census(1000)) == "polars"
    stored = next(tmp_path.glob("*/data-True.parquet"))
    assert pq.ParquetFile(stored).metadata.num_row_groups == 16


@pytest.mark.parametrize(
    "content",
    [
        b"a,b\n1,x\n2,\n3,z\n",  # an empty last cell: separators counted, still Polars
        b'a,b,c\n1,"x,y",\n2,"p,q,r",z\n',  # separators inside quoted values, empty last
        b"a,b\r\n1,x\r\n2,y\r\n",  # CRLF
        b"a,b\n1,x\n2,y",  # no final newline
        b"\xef\xbb\xbfa,b\n1,x\n",  # a byte-order mark before the header
        b'a,b\n1,"say ""hi"""\n',  # escaped quotes
    ],
)
def test_plain_shapes_stay_on_the_fast_path(tmp_path, content):
    assert both(tmp_path, content) == "polars"


FILLER = 30_000  # rows before a hostile line, so that it lies past the 1 MB sample


@pytest.mark.parametrize("past_the_sample", [False, True])
@pytest.mark.parametrize(
    ("header", "good", "hostile", "careful"),
    [
        (b"a,b,c", b"1,x,y", b"2,z", "refused"),  # short row: Polars pads it with nulls
        (b"a,b", b"1,x", b"", "stored"),  # blank line: a row of nulls to Polars
        (b"a,b", b"1,x", b'1,"two\nlines"', "stored"),  # a newline inside a quoted value
        (b"a,b", b"1,x", b"1,x\ry", "refused"),  # a lone carriage return: a line break
        (b"a,b", b"1,x", b"1,x\x00y", "refused"),  # NUL
        (b"a,b", b"1,x", b'1,""', "stored"),  # quoted empty: null to pyarrow, "" to Polars
        (b"a,b", b"1.5,x", b"NaN,y", "stored"),  # not finite: unreadable to pyarrow
        (b"a,b", b"1.5,x", b"-inf,y", "stored"),
        (b"a,b", b"1.5,x", b"1e309,y", "stored"),
        (b"a,b", b"1,x", b"abc,y", "stored"),  # text in a number column
        (b"a,b,c", b"1,x,y", b"1,x,y,z", "refused"),  # long row
        (b"a,b", b"1,x", b"1,\xff", "refused"),  # not UTF-8
    ],
)
def test_shapes_polars_reads_differently_go_back_to_the_careful_reader(
    tmp_path, header, good, hostile, careful, past_the_sample
):
    rows = [good] * (FILLER if past_the_sample else 30)
    content = b"\n".join([header, *rows, hostile, good]) + b"\n"
    reader = both(tmp_path, content)
    assert reader == ("refused" if careful == "refused" else "pyarrow")


def test_a_line_over_the_limit_past_the_sample_goes_back(tmp_path):
    limits = IngestLimits(
        max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50, max_row_bytes=64
    )
    content = b"a,b\n" + b"1,x\n" * FILLER * 10 + b"2," + b"y" * 100 + b"\n"
    assert both(tmp_path, content, limits=limits) == "refused"


def test_extremes_and_counts_of_unordered_numbers_over_many_groups(tmp_path, monkeypatch):
    """Many row groups (64 rows each) of numbers in no order: the kept 50 smallest and
    largest (repeats included) and the value counts must be the careful reader's."""
    monkeypatch.setattr("datasets.ingest.writer.ROW_GROUP_ROWS", 64)
    rng = random.Random(2026)
    lines = ["wide,dense,narrow,decimal,label"]
    for _ in range(3000):
        wide = rng.choice([rng.randint(-(10**9), 10**9), rng.randint(0, 40)])
        dense = rng.randint(0, 1500)  # over 1000 values, so not counted, and many repeats
        decimal = round(rng.gauss(0, 1000), rng.choice([0, 2]))
        lines.append(f"{wide},{dense},{rng.randint(0, 30)},{decimal},{rng.choice('abc')}")
    assert both(tmp_path, ("\n".join(lines) + "\n").encode()) == "polars"


def test_the_child_profiles_many_small_batches_as_the_careful_reader_profiles(
    tmp_path, monkeypatch
):
    """The child profiles the rows batch by batch as they go to the writer: counts merged,
    extremes kept and a text column's numbers counted across batches (of 37 rows here,
    not aligned with the row groups of 64) must be the careful reader's."""
    monkeypatch.setattr("datasets.ingest.writer.ROW_GROUP_ROWS", 64)
    monkeypatch.setattr("datasets.ingest.fast.BATCH_ROWS", 37)
    rng = random.Random(7)
    lines = ["id,small,decimal,code,label"]
    for i in range(2000):
        code = str(rng.randint(0, 99)) if i % 5 else rng.choice(["x", "n/a"])  # mostly numbers
        lines.append(f"{i},{rng.randint(0, 20)},{rng.gauss(0, 10):.3f},{code},{rng.choice('ab')}")
    assert both(tmp_path, ("\n".join(lines) + "\n").encode()) == "polars"
    assert both(tmp_path, census(1000)) == "polars"


def test_integer_counts_across_batches_that_widen_their_span(tmp_path, monkeypatch):
    """The child counts an integer column by value while its values span few numbers,
    growing the count as batches go above and below what it has seen, and by text once
    a batch widens the span past thousands: the counts, and the extremes of the widest
    integers read as such (18 digits), must be the careful reader's."""
    monkeypatch.setattr("datasets.ingest.writer.ROW_GROUP_ROWS", 64)
    monkeypatch.setattr("datasets.ingest.fast.BATCH_ROWS", 37)
    rng = random.Random(11)
    phases = [(-5, 30), (100, 130), (-20, -10), (0, 9)]
    lines = ["shifting,edges,late"]
    for i in range(1200):
        low, high = phases[i // 300]
        edge = [1 - 10**18, 10**18 - 1][i % 2] if i % 97 == 0 else rng.randint(-3, 3)
        late = 10**12 + rng.randint(0, 2) if i > 1000 and i % 50 == 0 else rng.randint(0, 9)
        lines.append(f"{rng.randint(low, high)},{edge},{late}")
    assert both(tmp_path, ("\n".join(lines) + "\n").encode()) == "polars"


@pytest.mark.parametrize(
    ("content", "dialect"),
    [
        (b"a\n1\n\n2\n", CsvDialect()),  # one column: a blank line is not a row to pyarrow
        (b"a;b\n1,5;x\n", CsvDialect(delimiter=";", decimal_comma=True)),
    ],
)
def test_files_the_fast_path_does_not_take(tmp_path, content, dialect):
    assert both(tmp_path, content, dialect=dialect) == "pyarrow"


def test_text_in_another_encoding_takes_the_fast_path_once_decoded(tmp_path):
    """Decoded once into a UTF-8 copy (datasets.ingest.reader.plain_copy), as the
    careful reader decodes it: the same outcome (tests/test_ingest_gzip_once.py)."""
    content = "a;b\n1;北京\n".encode("gb18030")
    dialect = CsvDialect(delimiter=";", encoding="gb18030")
    assert both(tmp_path, content, dialect=dialect) == "polars"


# --- any file: hypothesis writes hostile ones ------------------------------------------

ODD_NUMBERS = st.sampled_from(
    ["0", "7", "-3", "+4", " 5", "6 ", "007", "1.5", "-0.0", ".5", "5.", "1e3", "1E-2",
     "1e309", "inf", "-inf", "NaN", "9223372036854775807", "12345678901234567890", ""]
)  # fmt: skip
NUMBERS = st.one_of(st.integers(-999, 999).map(str), st.floats(-1e6, 1e6).map(repr), ODD_NUMBERS)
TEXT = st.sampled_from(
    ["a", "北京", "x y", " pad ", '"q,uoted"', '"say ""hi"""', '""', '"two\nlines"', "tab\t",
     "cr\rhere", "", "null", "NA", "-", '"a"b', 'in"side']
)  # fmt: skip


@st.composite
def csv_files(draw) -> bytes:
    columns = draw(st.integers(2, 4))
    kinds = draw(st.lists(st.sampled_from(["number", "text"]), min_size=columns, max_size=columns))
    header = ",".join(f'"c{i}"' if draw(st.booleans()) else f"c{i}" for i in range(columns))
    rows = []
    ragged = draw(st.booleans())  # a file with some short, long or blank rows, or none
    for _ in range(draw(st.integers(1, 25))):
        cells = [draw(NUMBERS if kind == "number" else TEXT) for kind in kinds]
        shape = draw(st.sampled_from(["whole"] * 12 + ["short", "long", "blank"] * ragged))
        if shape == "short":
            cells = cells[:-1]
        elif shape == "long":
            cells = [*cells, "extra"]
        rows.append("" if shape == "blank" else ",".join(cells))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join([header, *rows]) + (newline if draw(st.booleans()) else "")
    return (("\ufeff" if draw(st.booleans()) else "") + text).encode()


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=csv_files())
def test_any_file_is_stored_or_refused_as_the_careful_reader_would(tmp_path, content):
    event(both(tmp_path, content))


def test_progress_and_heartbeat_while_the_child_works(tmp_path, monkeypatch):
    """The child reports nothing while Polars works: the parent reports an estimate as it
    waits (its heartbeat too), increasing, and the whole file at the end."""
    monkeypatch.setattr("datasets.ingest.fast.POLL_SECONDS", 0.01)
    source = tmp_path / "big.csv"
    source.write_bytes(census(200_000))
    seen: list[float] = []
    result = ingest_csv(
        source=source, destination=tmp_path / "out.parquet", limits=LIMITS, on_progress=seen.append
    )
    assert result.reader == "polars"
    assert len(seen) > 2 and seen == sorted(seen)
    assert 0 < seen[0] < 1 and seen[-2] <= 0.9 and seen[-1] == 1.0


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    limit=st.integers(1, 30),
    chunk=st.integers(1, 50),
    end=st.booleans(),
)
def test_the_line_limit_holds_across_reads_as_a_naive_count_says(
    tmp_path, monkeypatch, lines, limit, chunk, end
):
    """The careful reader's line check (steps between newlines from each window's end)
    refuses exactly the files with a line over the limit, however reads split them."""
    monkeypatch.setattr("datasets.ingest.reader.READ_CHUNK", chunk)
    content = b"\n".join(b"x" * n for n in lines) + (b"\n" if end else b"")
    source = Path(tempfile.mkdtemp(dir=tmp_path)) / "lines.csv"
    source.write_bytes(content)
    limits = IngestLimits(1 << 20, 1 << 20, 10, max_row_bytes=limit)
    stream = GuardedStream(source, limits=limits, encoding="utf-8")
    try:
        stream.drain()
        refused = False
    except IngestRejected:
        refused = True
    finally:
        stream.close()
    assert refused == (max(len(line) for line in content.split(b"\n")) > limit)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.integers(0, 9000), min_size=1, max_size=12),
    limit=st.integers(1, 9000),
    end=st.booleans(),
)
def test_the_fast_path_line_search_over_mapped_windows_as_a_naive_count_says(
    tmp_path, monkeypatch, lines, limit, end
):
    """The fast path's search for a line over the limit maps the file a window at a time
    (its peak memory then stays flat in the file's size); lines across windows count whole."""
    import mmap

    from datasets.ingest import fast

    monkeypatch.setattr(fast, "LINE_SEARCH_WINDOW", mmap.ALLOCATIONGRANULARITY)
    content = b"\n".join(b"x" * n for n in lines) + (b"\n" if end else b"")
    source = Path(tempfile.mkdtemp(dir=tmp_path)) / "lines.csv"
    source.write_bytes(content)
    over = max(len(line) for line in content.split(b"\n")) > limit
    assert fast._longest_line_over(source, limit) == over
