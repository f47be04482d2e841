"""The Polars child kept idle for the next conversion (datasets.ingest.fast): used
once, only in the process and for the limits it was started for, replaced when dead;
what is stored is the same whichever child converts."""

from __future__ import annotations

import pyarrow.parquet as pq

from datasets.ingest import CsvDialect, IngestLimits, fast, ingest_csv
from tests.test_ingest_fast import census

LIMITS = IngestLimits(max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50)


def _ingest(tmp_path, name: str):
    source = tmp_path / f"{name}.csv"
    source.write_bytes(census(300))
    result = ingest_csv(
        source=source, destination=tmp_path / f"{name}.parquet", limits=LIMITS, dialect=CsvDialect()
    )
    return result, pq.read_table(tmp_path / f"{name}.parquet")


def test_a_conversion_leaves_a_spare_that_the_next_one_uses(tmp_path):
    first, table = _ingest(tmp_path, "first")
    spare = fast._spare._process
    assert spare is not None and spare.poll() is None
    second, again = _ingest(tmp_path, "second")
    assert spare.poll() is not None  # used (and exited), not left idle
    assert (first.reader, second.reader) == ("polars", "polars")
    assert again.equals(table)
    assert fast._spare._process is not spare


def test_a_spare_for_other_limits_or_dead_is_not_used(tmp_path):
    fast.keep_spare(LIMITS)
    spare = fast._spare._process
    other = IngestLimits(
        max_upload_bytes=1 << 26, max_decompressed_bytes=1 << 27, max_columns=50,
        max_row_bytes=LIMITS.max_row_bytes * 4,
    )  # fmt: skip
    assert fast._spare.take(fast._child_environment(other)) is None
    assert spare.wait(timeout=10) is not None  # stopped
    fast.keep_spare(LIMITS)
    fast._spare._process.kill()
    fast._spare._process.wait()
    result, _ = _ingest(tmp_path, "after-a-dead-spare")
    assert result.reader == "polars"
