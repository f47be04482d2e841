"""Hostile Parquet, Stata and SPSS files ingested in a real worker: each is refused with
a message naming the limit, or read whole, with the worker under WORKER_PEAK_LIMIT_MB
and WORKER_SECONDS_LIMIT and nothing half-stored. The files are made by
tests/hostile_files_binary.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
from django.conf import settings

from datasets import external, storage
from datasets.ingest.common import IngestLimits, IngestRejected
from datasets.ingest.formats import ingest_file
from datasets.ingest.formats.parquet import Decoded, open_bounded
from datasets.ingest.profile import ColumnProfile, profile_update
from datasets.models import Dataset
from dpportal import messages
from tests import hostile_files_binary as files
from tests.hostile_support import ingest_in_worker


def _ingest(celery_workers, owner, project, path: Path):
    worker = celery_workers.start()
    run = ingest_in_worker(worker_pid=worker.proc.pid, project=project, owner=owner, path=path)
    assert run.bounded, f"{path.name}: {run.peak_mb:.0f} MB, {run.seconds:.1f} s"
    assert run.leftovers == ()
    return run


def _refused(run, *words: str) -> None:
    assert run.status == Dataset.Status.FAILED
    for word in words:
        assert word in run.failure_reason, run.failure_reason


@pytest.mark.worker
@pytest.mark.parametrize(
    "make",
    [
        files.parquet_dictionary_bomb,
        files.parquet_padded_dictionary_bomb,
        files.parquet_run_length_bomb,
    ],
    ids=lambda f: f.__name__,
)
def test_a_parquet_bomb_is_refused_by_the_decoded_size_limit(
    make, celery_workers, owner, project, tmp_path
):
    path = make(tmp_path)
    assert path.stat().st_size < 512 * 1024
    run = _ingest(celery_workers, owner, project, path)
    _refused(run, "limit on decoded size", "1.0 GiB")


@pytest.mark.worker
def test_a_giant_parquet_page_is_refused_by_the_page_limit(
    celery_workers, owner, project, tmp_path
):
    path = files.parquet_giant_page(tmp_path)
    assert path.stat().st_size < 64 * 1024
    run = _ingest(celery_workers, owner, project, path)
    _refused(run, "column 'note'", "holds 124.0 MiB", "at most 16.0 MiB per page")


@pytest.mark.worker
@pytest.mark.parametrize(
    "make, words",
    [
        # the page that holds the 20 MB value is refused before it is decompressed
        (files.parquet_long_value, ("column 'note'", "20.0 MiB", "at most 16.0 MiB per page")),
        (files.parquet_2mib_value, ("column 'note'", "1.0 MiB", "limit per value")),
        (files.dta_long_value, ("column 'note'", "1.0 MiB", "limit per value")),
    ],
    ids=["parquet_long_value", "parquet_2mib_value", "dta_long_value"],
)
def test_a_value_over_a_limit_is_refused(make, words, celery_workers, owner, project, tmp_path):
    run = _ingest(celery_workers, owner, project, make(tmp_path))
    _refused(run, *words)


@pytest.mark.worker
def test_a_gzipped_long_value_is_refused_by_the_decompression_limit(
    celery_workers, owner, project, tmp_path
):
    run = _ingest(celery_workers, owner, project, files.dta_gzip_long_value(tmp_path))
    _refused(run, "100 times its size")


@pytest.mark.worker
def test_a_zsav_of_long_compressed_strings_is_read_in_bounded_chunks(
    celery_workers, owner, project, tmp_path
):
    path = files.zsav_wide_strings(tmp_path)
    run = _ingest(celery_workers, owner, project, path)
    assert run.status == Dataset.Status.READY, run.failure_reason
    table = _stored(project, path)
    assert table.num_rows == 1000
    assert table.column("text3")[0].as_py() == "d" * 32_000


@pytest.mark.worker
@pytest.mark.parametrize(
    "make",
    [files.dta_int_then_decimal, files.sav_int_then_decimal, files.parquet_int_then_decimal],
    ids=lambda f: f.__name__,
)
def test_whole_numbers_then_decimals_keep_every_value(
    make, celery_workers, owner, project, tmp_path
):
    path = make(tmp_path)
    run = _ingest(celery_workers, owner, project, path)
    assert run.status == Dataset.Status.READY, run.failure_reason
    table = _stored(project, path)
    assert table.column("income").to_pylist() == files.int_then_decimal_values()
    dataset = Dataset.objects.get(project=project, name=path.stem)
    assert dataset.columns.get(name="income").suggested_type == "float"
    assert dataset.warnings == []


def _stored(project, path: Path):
    dataset = Dataset.objects.get(project=project, name=path.stem)
    return pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)


# --- in-process: the bounded reading itself --------------------------------------------

SMALL = IngestLimits(
    max_upload_bytes=1 << 30, max_decompressed_bytes=1 << 30, max_columns=50,
    max_batch_bytes=1 << 20,
)  # fmt: skip


def _wide_table(rows: int = 120) -> pa.Table:
    """Text of 300 KB a value through a dictionary: rows * 300 KB decoded."""
    dictionary = pa.array([c * 300_000 for c in "abc"])
    indices = pa.array([i % 3 for i in range(rows)], pa.int32())
    return pa.table(
        {"label": pa.DictionaryArray.from_arrays(indices, dictionary), "n": list(range(rows))}
    )


def test_a_batch_wider_than_the_budget_is_decoded_in_slices_within_it(tmp_path):
    path = tmp_path / "wide.parquet"
    pq.write_table(_wide_table(), path)
    parquet, _, _ = open_bounded(path, limits=SMALL, damaged="damaged")
    (batch,) = parquet.iter_batches(batch_size=1000)
    pieces = list(Decoded(SMALL).pieces(batch))
    assert len(pieces) > 30  # 36 MB in slices of at most 1 MiB
    assert all(p.nbytes <= SMALL.max_batch_bytes for p in pieces)
    assert pa.Table.from_batches(pieces).column("label").to_pylist() == (
        _wide_table().column("label").to_pylist()
    )


def test_a_wide_parquet_is_stored_whole_through_the_slices(tmp_path):
    path = tmp_path / "wide.parquet"
    pq.write_table(_wide_table(), path)
    destination = tmp_path / "out" / "data.parquet"
    destination.parent.mkdir()
    ingest_file(source=path, destination=destination, limits=SMALL)
    stored = pq.read_table(destination)
    assert stored.column("label").to_pylist() == _wide_table().column("label").to_pylist()
    assert stored.column("n").to_pylist() == list(range(120))


def test_the_decoded_size_limit_counts_every_file_of_a_location(settings, tmp_path):
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(tmp_path)]
    folder = tmp_path / "location"
    folder.mkdir()
    for part in range(2):  # 36 MB decoded each: under 50 MB alone, over it together
        pq.write_table(_wide_table(), folder / f"part-{part}.parquet", store_schema=False)
    limits = dataclasses.replace(SMALL, max_decompressed_bytes=50 << 20)
    external.profile(
        storage.EXTERNAL_LOCAL, str(folder / "part-0.parquet"), limits, lambda fraction: None
    )
    with pytest.raises(IngestRejected, match="limit on decoded size"):
        external.profile(storage.EXTERNAL_LOCAL, str(folder), limits, lambda fraction: None)


def test_a_registered_dictionary_bomb_is_refused_before_it_is_decoded(settings, tmp_path):
    settings.DPPORTAL_EXTERNAL_ROOTS = [str(tmp_path)]
    path = files.parquet_dictionary_bomb(tmp_path, store_schema=False)
    with pytest.raises(IngestRejected, match="limit on decoded size"):
        external.profile(storage.EXTERNAL_LOCAL, str(path), SMALL, lambda fraction: None)


def test_unreadable_numbers_are_counted_and_shown_as_a_warning(tmp_path):
    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"x": [1.5, float("inf"), 2.5, 3.5], "y": [1, 2, 3, 4]}), path)
    destination = tmp_path / "data.parquet"
    result = ingest_file(source=path, destination=destination, limits=SMALL)
    (warning,) = result.warnings
    assert messages.english([warning]) == (
        "Column 'x': 1 cell could not be read as a number and is treated as missing."
    )
    assert pq.read_table(destination).column("x").to_pylist() == [1.5, None, 2.5, 3.5]


def test_several_columns_that_meet_decimals_late_are_widened_together(tmp_path):
    path = tmp_path / "many.dta"
    values = files.int_then_decimal_values()
    frame = pd.DataFrame({f"c{i}": values for i in range(6)})
    pyreadstat.write_dta(frame, str(path))
    destination = tmp_path / "data.parquet"
    result = ingest_file(source=path, destination=destination, limits=SMALL)
    assert [p.suggested_type for p in result.profiles] == ["float"] * 6
    stored = pq.read_table(destination)
    assert all(stored.column(f"c{i}").to_pylist() == values for i in range(6))


def test_a_page_over_its_limit_is_refused_before_it_is_read(tmp_path):
    """30 values of 100 KB in one page (pyarrow checks a page's size every 1,024 rows):
    3 MB; the same values in pages of 5 rows pass."""
    table = pa.table({"note": [f"{i:04d}" + "a" * 100_000 for i in range(30)]})
    limits = dataclasses.replace(SMALL, max_page_bytes=2 << 20)
    one_page, small_pages = tmp_path / "one_page.parquet", tmp_path / "small_pages.parquet"
    pq.write_table(table, one_page, compression="zstd")
    pq.write_table(table, small_pages, compression="zstd", write_batch_size=5, data_page_size=1)
    with pytest.raises(IngestRejected, match=r"holds 2\.9 MiB uncompressed; at most 2\.0 MiB per"):
        ingest_file(source=one_page, destination=tmp_path / "a.parquet", limits=limits)
    ingest_file(source=small_pages, destination=tmp_path / "b.parquet", limits=limits)
    assert pq.read_table(tmp_path / "b.parquet").column("note").to_pylist() == (
        table.column("note").to_pylist()
    )


def test_long_distinct_texts_are_not_kept_as_category_counts():
    profile = ColumnProfile("note", 0, "string")
    profile_update(profile, pa.array([f"{i}" + "x" * 300_000 for i in range(5)]))
    assert profile.counts is None  # 1.5 MB of distinct text: no categories to suggest
    short = ColumnProfile("region", 0, "string")
    profile_update(short, pa.array(["north", "south"] * 100))
    assert short.counts == {"north": 100, "south": 100}
