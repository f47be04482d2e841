"""datasets.services.dataset_create / dataset_ingest, in-process: good files and every bad input.

Each bad input asserts the clear message AND that nothing half-stored remains: no
Parquet file (nor temporary file), the dataset not ready, no columns.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets import ingest
from datasets.ingest import reader, round_outward, writer
from datasets.ingest.profile import PROFILE_KEYS
from datasets.models import Dataset
from datasets.services import (
    csv_safe_cell,
    dataset_confirm_reading,
    dataset_create,
    dataset_ingest,
)
from dpportal.errors import PermissionDenied, UploadTooLarge, ValidationFailed

pytestmark = pytest.mark.django_db

GOOD = (
    b"person,age,sex,income,note\n"
    b"1,34,female,52000.5,=SUM(A1:A2)\n"
    b"2,51,male,61000,+cmd\n"
    b"2,51,male,,-x\n"
    b"3,,female,1.5e4,@home\n"
)


def upload(project, owner, content: bytes, name: str = "data.csv") -> Dataset:
    return dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile(name, content, content_type="text/csv"),
        uploaded_by=owner,
        dispatch=False,
    )


def ingest_bytes(project, owner, content: bytes, name: str = "data.csv") -> Dataset:
    dataset = upload(project, owner, content, name)
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def parquet_files() -> list[Path]:
    return [p for p in Path(settings.MEDIA_ROOT).rglob("*") if "parquet" in p.name]


def assert_rejected(dataset: Dataset, fragment: str) -> None:
    assert dataset.status == Dataset.Status.FAILED
    assert fragment in dataset.failure_reason
    assert dataset.parquet_file == ""
    assert dataset.columns.count() == 0
    assert parquet_files() == []


def test_clean_csv_becomes_ready_typed_parquet_with_private_profile(project, owner):
    dataset = ingest_bytes(project, owner, GOOD)

    assert dataset.status == Dataset.Status.READY
    assert dataset.progress == 1.0
    assert dataset.name == "data"
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column_names == ["person", "age", "sex", "income", "note"]
    assert [str(t) for t in table.schema.types] == ["int64", "int64", "string", "double", "string"]
    assert table.column("age").to_pylist() == [34, 51, 51, None]
    assert table.column("income").to_pylist() == [52000.5, 61000.0, None, 15000.0]
    columns = {c.name: c for c in dataset.columns.all()}
    assert [c.name for c in dataset.columns.order_by("position")] == table.column_names
    assert columns["sex"].suggested_type == "string"
    # four rows: every value is rare, so none is suggested and no range either
    assert columns["sex"].profile == {
        "type": "string",
        "values": [],
        "more_values": True,
        "range": None,
    }
    assert columns["age"].profile["range"] is None
    assert columns["income"].profile["unreadable"] is False


def test_profile_holds_only_the_allowed_private_suggestions(project, owner):
    dataset = ingest_bytes(project, owner, GOOD)
    allowed = {
        "type",
        "values",
        "more_values",
        "range",
        "unreadable",
        "unreadable_share",
        "value_labels",
    }
    assert allowed == PROFILE_KEYS
    for column in dataset.columns.all():
        assert set(column.profile) <= allowed
        # yes/no flags and short lists, never a count
        assert not any(
            isinstance(v, int) and not isinstance(v, bool) for v in column.profile.values()
        )
    # No row count anywhere on the dataset row either.
    assert not any("row" in f.name and "count" in f.name for f in Dataset._meta.fields)


def test_gzip_upload_ingests_like_plain(project, owner):
    dataset = ingest_bytes(project, owner, gzip.compress(GOOD), name="data.csv.gz")
    assert dataset.status == Dataset.Status.READY
    assert dataset.source_file == ""  # the raw upload is deleted once ingested
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("person").to_pylist() == [1, 2, 2, 3]


def test_ingest_is_idempotent(project, owner):
    dataset = ingest_bytes(project, owner, GOOD)
    before = list(dataset.columns.values_list("pk", flat=True))
    again = dataset_ingest(dataset_id=dataset.pk)
    assert again.status == Dataset.Status.READY
    assert list(again.columns.values_list("pk", flat=True)) == before


def test_only_owners_upload(project, reviewer):
    with pytest.raises(PermissionDenied):
        upload(project, reviewer, GOOD)
    assert Dataset.objects.count() == 0


# --- bad inputs: rejected at upload, nothing stored at all ---------------------------


def test_empty_file_is_refused_before_anything_is_stored(project, owner):
    with pytest.raises(ValidationFailed, match="The file is empty"):
        upload(project, owner, b"")
    assert Dataset.objects.count() == 0
    assert list(Path(settings.MEDIA_ROOT).rglob("*")) == []


def test_file_over_the_size_limit_is_refused_before_anything_is_stored(project, owner, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 64
    with pytest.raises(UploadTooLarge, match="the limit is"):
        upload(project, owner, GOOD)
    assert Dataset.objects.count() == 0
    assert list(Path(settings.MEDIA_ROOT).rglob("*")) == []


# --- bad inputs: rejected while ingesting, the dataset fails with the reason ----------


def test_empty_after_decompression(project, owner):
    assert_rejected(ingest_bytes(project, owner, gzip.compress(b"")), "The file is empty")


def test_blank_lines_only(project, owner):
    assert_rejected(ingest_bytes(project, owner, b"\n  \n\n"), "The file is empty")


def confirm_and_ingest(dataset: Dataset, owner, **options) -> Dataset:
    dataset_confirm_reading(dataset=dataset, actor=owner, options=options)
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def test_no_header(project, owner):
    # detection proposes "no header line" and waits for the owner (see test_datasets_encodings)
    dataset = ingest_bytes(project, owner, b"1,34,52000\n2,51,61000\n")
    assert (dataset.status, dataset.read_options["header"]) == (Dataset.Status.AWAITING, False)
    # an owner who insists the first line is a header is refused
    dataset = confirm_and_ingest(dataset, owner, header="true")
    assert_rejected(dataset, "looks like data, not a header")


def test_header_without_rows(project, owner):
    assert_rejected(ingest_bytes(project, owner, b"a,b,c\n"), "no data rows")


def test_blank_header_name(project, owner):
    dataset = ingest_bytes(project, owner, b"a, ,c\n1,2,3\n")
    assert_rejected(dataset, "Column 2 has a blank name")


def test_duplicate_header_names(project, owner):
    dataset = ingest_bytes(project, owner, b"age,income,age\n1,2,3\n")
    assert_rejected(dataset, "Columns 1 and 3 have the same name 'age'")


@pytest.mark.parametrize("row", [b"3,SECRETVALUE\n", b"3,SECRETVALUE,4,5\n"])
def test_ragged_rows(project, owner, row):
    dataset = ingest_bytes(project, owner, b"a,b,c\n1,x,2\n" + row + b"4,y,5\n")
    assert_rejected(dataset, "fields but the header has 3")
    assert "SECRETVALUE" not in dataset.failure_reason  # no cell values in messages


def test_ragged_row_far_beyond_the_sample(project, owner):
    body = b"a,b\n" + b"1,2\n" * 400_000 + b"1,2,3\n"
    assert_rejected(ingest_bytes(project, owner, body), "fields but the header has 2")


def test_bytes_that_are_not_utf8(project, owner):
    # detected as a Western encoding and held for the owner; read as UTF-8 it is refused
    dataset = ingest_bytes(project, owner, "name,city\nJosé,Zürich\n".encode("latin-1"))
    assert dataset.status == Dataset.Status.AWAITING
    assert dataset.read_options["encoding"] != "utf-8"  # two words: some 8-bit code page
    dataset = confirm_and_ingest(dataset, owner, encoding="utf-8")
    assert_rejected(dataset, "Line 2 of the file is not valid UTF-8")


def test_non_utf8_beyond_the_sample(project, owner):
    body = b"a,b\n" + b"1,x\n" * 400_000 + "2,Zürich\n".encode("latin-1")
    assert_rejected(
        ingest_bytes(project, owner, body), "Line 400,002 of the file is not valid UTF-8"
    )


def test_nul_byte(project, owner):
    dataset = ingest_bytes(project, owner, b"a,b\n1,x\n2,\x00y\n")
    assert_rejected(dataset, "NUL byte")


def test_more_columns_than_the_limit(project, owner, settings):
    settings.DPPORTAL_MAX_COLUMNS = 3
    dataset = ingest_bytes(project, owner, b"a,b,c,d\n1,2,3,4\n")
    assert_rejected(dataset, "The file has 4 columns; at most 3 are allowed")


def test_gzip_bomb(project, owner, settings):
    settings.DPPORTAL_MAX_DECOMPRESSED_BYTES = 2 * 2**20
    bomb = gzip.compress(b"a,b\n" + b"1,2\n" * 2_000_000)  # 8 MB of text in a few KB
    assert len(bomb) < 100_000
    dataset = ingest_bytes(project, owner, bomb, name="bomb.csv.gz")
    assert_rejected(dataset, "too large when decompressed")
    assert "at most 2.0 MiB" in dataset.failure_reason


def test_corrupt_gzip(project, owner):
    broken = gzip.compress(GOOD)[:-12] + b"garbage!"
    assert_rejected(ingest_bytes(project, owner, broken), "could not be decompressed")


def test_file_over_the_limit_at_ingest_time(project, owner, settings):
    dataset = upload(project, owner, GOOD)
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 16  # limits lowered while it waited in the queue
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert_rejected(dataset, "larger than")


# --- cells --------------------------------------------------------------------------


def test_unparseable_cells_in_a_numeric_column_are_missing_and_counted(project, owner):
    rows = b"".join(b"%d,%d\n" % (i, 20 + i % 50) for i in range(40))
    dataset = ingest_bytes(project, owner, b"id,age\n" + rows + b"41,unknown\n42,n/a\n43,\n")
    assert dataset.status == Dataset.Status.READY
    age = dataset.columns.get(name="age")
    assert age.suggested_type == "integer"
    assert age.profile["unreadable"] is True  # a yes/no: how many is never stored
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("age").to_pylist()[-3:] == [None, None, None]


def test_unparseable_cell_beyond_the_sample_triggers_the_tolerant_pass(project, owner):
    body = b"id,income\n" + b"7,1.5\n" * 300_000 + b"8,lots\n" + b"9,2.5\n"
    dataset = ingest_bytes(project, owner, body)
    assert dataset.status == Dataset.Status.READY
    income = dataset.columns.get(name="income")
    assert income.suggested_type == "float"
    assert income.profile["unreadable"] is True
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("income").to_pylist()[-2:] == [None, 2.5]
    assert table.column("income").null_count == 1
    assert len(list(Path(settings.MEDIA_ROOT).rglob("*.tmp"))) == 0


def test_non_finite_numbers_are_unparseable(project, owner):
    dataset = ingest_bytes(project, owner, b"x\n1.5\n2.5\n3.5\n4.5\n5.5\n6.5\n7.5\n8.5\n9.5\nnan\n")
    x = dataset.columns.get(name="x")
    assert x.suggested_type == "float"
    assert x.profile["unreadable"] is True
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("x").to_pylist()[-1] is None


def test_codes_with_leading_zeros_stay_text(project, owner):
    dataset = ingest_bytes(project, owner, b"zip,n\n01234,1\n98765,2\n")
    assert dataset.columns.get(name="zip").suggested_type == "string"
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("zip").to_pylist() == ["01234", "98765"]


def test_formula_like_cells_are_kept_as_data(project, owner):
    dataset = ingest_bytes(project, owner, GOOD)
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("note").to_pylist() == ["=SUM(A1:A2)", "+cmd", "-x", "@home"]
    assert [csv_safe_cell(v) for v in table.column("note").to_pylist()] == [
        "'=SUM(A1:A2)",
        "'+cmd",
        "'-x",
        "'@home",
    ]


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@x", "'@x"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_csv_safe_cell(value, safe):
    assert csv_safe_cell(value) == safe


def test_many_distinct_values_are_not_listed(project, owner):
    body = b"code\n" + b"".join(b"c%04d\n" % i for i in range(1500))
    dataset = ingest_bytes(project, owner, body)
    profile = dataset.columns.get(name="code").profile
    assert profile["values"] == [] and profile["more_values"] is True


def test_row_groups_are_bounded(project, owner, monkeypatch):
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 1000)
    body = b"a,b\n" + b"".join(b"%d,x\n" % i for i in range(5500))
    dataset = ingest_bytes(project, owner, body)
    meta = pq.ParquetFile(Path(settings.MEDIA_ROOT) / dataset.parquet_file).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1000] * 5 + [500]
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    assert table.column("a").to_pylist() == list(range(5500))


def test_header_with_bom_and_spaces(project, owner):
    dataset = ingest_bytes(project, owner, "\ufeff a , b \n1,2\n".encode())
    assert [c.name for c in dataset.columns.order_by("position")] == ["a", "b"]


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (18, 93, ["10", "100"]),
        (0, 1234567.8, ["0", "2000000"]),
        (-3.2, 0.5, ["-4", "1"]),
        (0.012, 0.049, ["0.01", "0.05"]),
        (5, 5, ["5", "6"]),
        (0, 0, ["0", "1"]),
        # a year-like range keeps the data's scale: to decades, not to 1000 and 3000
        (1972, 2018, ["1970", "2020"]),
        (1999, 2001, ["1999", "2001"]),
        (-1005, -995, ["-1010", "-990"]),
    ],
)
def test_round_outward(lo, hi, expected):
    assert round_outward(lo, hi) == expected


def test_stream_reads_in_chunks_without_holding_the_file(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"a\n" + b"1\n" * 100_000)
    stream = ingest.GuardedStream(path, limits=ingest.IngestLimits(10**9, 10**9, 10))
    sizes = []
    while chunk := stream.read(4096):
        sizes.append(len(chunk))
    stream.close()
    assert max(sizes) == 4096 and sum(sizes) == path.stat().st_size


def test_progress_is_the_fraction_of_the_file_read(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BLOCK_SIZE", 1 << 16)  # many blocks from a small file
    source = tmp_path / "big.csv"
    source.write_bytes(b"a,b\n" + b"12345,67890\n" * 1_000_000)
    seen: list[float] = []
    limits = ingest.IngestLimits(10**9, 10**10, 10, max_row_bytes=1 << 15)
    ingest.ingest_csv(
        source=source, destination=tmp_path / "out.parquet", limits=limits, on_progress=seen.append,
        fast=False,  # the careful reader's progress (the fast path's: test_ingest_fast.py)
    )  # fmt: skip
    assert len(seen) > 1
    assert seen == sorted(seen)
    assert 0 < seen[0] < 1 and seen[-1] == 1.0
