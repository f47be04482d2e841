"""Streaming CSV -> Parquet ingest with validation and a private per-column profile.

No Django here: `datasets.services.dataset_ingest` wraps this with the dataset's
row, paths and limits. Memory does not grow with the file: pyarrow's streaming CSV
reader yields blocks, which are written out in row groups of at most
ROW_GROUP_ROWS rows; the profile keeps only bounded state per column.

Nothing computed here is a true aggregate fit for publication. The profile holds
private suggestions for the owners (see `profile`): a suggested type, a capped list
of frequent values (rare ones never), a numeric range rounded outward from
non-extreme values, and whether some cells could not be read as numbers. The row
count is never returned; no count is stored.

Two passes at most: the first parses numeric columns natively (fast); if a cell
in a numeric column does not parse, the file is read again with those columns as
text and the unparseable cells become nulls (flagged in the profile).

The modules: `common` (limits, the rejection, type names), `reader` (the guarded
byte stream, header checks, type inference, CSV options), `profile` (the private
per-column suggestions), `writer` (the conversion to Parquet: `ingest_csv`),
`decoding` (encodings and the streaming check-and-transcode), `dialect` (detection
and the preview before ingest), `header` (the header line's checks), `fast` (Polars in
a child process, `polars_child`, for plain UTF-8 files; `batch_profile` checks and
profiles the rows there as they are written), `removal` (a large file's name removed at
once, its space freed by a thread).
"""

from datasets.ingest.common import CsvDialect, IngestLimits, IngestRejected, human_size
from datasets.ingest.dialect import Preview, detect, preview
from datasets.ingest.profile import ColumnProfile, round_outward
from datasets.ingest.reader import GuardedStream
from datasets.ingest.writer import IngestResult, ingest_csv, temporary_parquet_paths

__all__ = [
    "ColumnProfile",
    "CsvDialect",
    "Preview",
    "detect",
    "preview",
    "GuardedStream",
    "IngestLimits",
    "IngestRejected",
    "IngestResult",
    "human_size",
    "ingest_csv",
    "round_outward",
    "temporary_parquet_paths",
]
