"""Issue 15, point 1 completed: UTF-16 without a byte-order mark, and .tsv files
through the same detection, preview and confirmation as a CSV (tab preset).

Files are written by the test (pandas' to_csv with the encoding); the stored
Parquet is compared with the source exactly.
"""

from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.ingest.dialect import detect_encoding, utf16_without_bom
from datasets.models import Dataset
from datasets.services import dataset_create, dataset_read_preview
from tests.test_datasets_encodings import (
    CHINESE,
    MIXED,
    WESTERN,
    nothing_stored,
    run,
    stored,
    upload,
    write,
)

pytestmark = pytest.mark.django_db


def upload_named(project, owner, name: str, content: bytes, review: bool = False) -> Dataset:
    return dataset_create(
        project=project,
        name="",
        uploaded_file=SimpleUploadedFile(name, content),
        uploaded_by=owner,
        dispatch=False,
        review=review,
    )


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("frame", [CHINESE, MIXED, WESTERN], ids=["zh", "mixed", "western"])
def test_utf16_without_bom_is_detected_previewed_and_stored_exactly(
    project, owner, encoding, frame
):
    body = frame.to_csv(index=False, sep=";", lineterminator="\r\n").encode(encoding)
    assert not body.startswith((b"\xff\xfe", b"\xfe\xff"))
    dataset = upload(project, owner, body)
    assert dataset.status == Dataset.Status.AWAITING
    assert dataset.read_options["encoding"] == encoding
    assert dataset.read_options["delimiter"] == ";"
    preview = dataset_read_preview(dataset=dataset, actor=owner)
    assert preview.error == "" and preview.columns == list(frame.columns)
    assert preview.rows[0] == [str(v) for v in frame.iloc[0]]
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert stored(dataset).equals(frame)


def test_utf16_guess_needs_the_zero_bytes_on_one_side():
    assert utf16_without_bom("a;b\n1;2\n".encode("utf-16-le")) == "utf-16-le"
    assert utf16_without_bom("a;b\n1;2\n".encode("utf-16-be")) == "utf-16-be"
    # a UTF-8 file with a stray NUL is not UTF-16: the ingest refuses it as UTF-8
    assert utf16_without_bom(b"a;b\n1;\x002\n") is None
    assert detect_encoding(b"a;b\n1;\x002\n") == "utf-8"
    # text whose odd bytes are zero but which decodes to NULs is not UTF-16 either
    assert utf16_without_bom(b"\x00\x00" * 20) is None


def test_utf16_without_bom_with_a_cut_character_is_refused_with_its_line(project, owner):
    body = "城市;n\n北京;1\n上海;2\n".encode("utf-16-le") + b"\x00"  # an odd last byte
    dataset = run(upload(project, owner, body), owner)
    assert dataset.status == Dataset.Status.FAILED
    assert "UTF-16 little-endian" in dataset.failure_reason
    assert nothing_stored(dataset)


@pytest.mark.parametrize(
    ("encoding", "detected"), [("gb18030", "gb18030"), ("latin-1", {"latin-1", "cp1252"})]
)
def test_a_tsv_in_another_encoding_awaits_with_the_tab_preset(project, owner, encoding, detected):
    frame = CHINESE if encoding == "gb18030" else WESTERN
    dataset = upload_named(project, owner, "survey.tsv", write(frame, encoding, "\t"))
    assert dataset.status == Dataset.Status.AWAITING
    assert dataset.read_options["encoding"] in (
        detected if isinstance(detected, set) else {detected}
    )
    assert dataset.read_options["delimiter"] == "\t"
    preview = dataset_read_preview(dataset=dataset, actor=owner)
    assert preview.columns == list(frame.columns)
    dataset = run(dataset, owner)
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert stored(dataset).equals(frame)


def test_a_tab_preset_wins_over_a_sniffed_comma(project, owner):
    # cells holding commas: sniffing alone would split at the commas (3 fields to 2)
    body = b"a,b,c\tz\n1,2,3\t4\n5,6,7\t8\n"
    assert upload_named(project, owner, "notes.csv", body).read_options["delimiter"] == ","
    dataset = upload_named(project, owner, "notes.tsv", body)
    assert dataset.read_options["delimiter"] == "\t"
    assert run(dataset, owner).status == Dataset.Status.READY
    assert list(stored(dataset).columns) == ["a,b,c", "z"]


def test_a_plain_utf8_tsv_is_queued_at_once_and_a_gzip_tsv_is_detected(project, owner):
    plain = upload_named(project, owner, "a.tsv", write(MIXED, "utf-8", "\t"))
    assert plain.status == Dataset.Status.UPLOADED
    assert run(plain, owner).status == Dataset.Status.READY
    assert stored(plain).equals(MIXED)
    zipped = upload_named(project, owner, "b.tsv.gz", gzip.compress(write(WESTERN, "cp1252", "\t")))
    assert zipped.status == Dataset.Status.AWAITING
    assert zipped.read_options["delimiter"] == "\t"
    assert run(zipped, owner).status == Dataset.Status.READY
    assert stored(zipped).equals(WESTERN)


def test_a_tsv_confirmed_with_another_delimiter_is_read_that_way(project, owner):
    body = b"a;b\n1;2\n3;4\n"
    dataset = upload_named(project, owner, "odd.tsv", body, review=True)
    assert dataset.status == Dataset.Status.AWAITING  # asked to review: the tab is shown
    assert dataset.read_options["delimiter"] == "\t"
    dataset = run(dataset, owner, delimiter="semicolon")
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    assert list(stored(dataset).columns) == ["a", "b"]
