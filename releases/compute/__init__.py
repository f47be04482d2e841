"""Computing a release: read the stored dataset, aggregate, noise once, store, charge.

The flow (`release_compute`), run by the Celery task and the benchmark alike:

1. claim: with the release row locked, a release that already has results (or is
   no longer computable) is left alone; the frozen spec is checked against the
   budget request's hash and against the release's current statistics and
   columns' declared domains; queued -> computing.
2. aggregate (outside any transaction; nothing is written but progress): ONE
   relational plan built from the frozen spec (`plan`: read as declared, cells,
   clipping and half-even rounding to the public grid, per-cell counts and exact
   integer sums in one GROUPING SETS pass) run on embedded DuckDB (`duckdb_engine`)
   with set threads and memory limit, spilling to a private temporary directory.
   With a privacy unit of one person (an ID column and a bound L), each person
   keeps the L rows with the smallest keyed hash under a per-release secret from
   the CSPRNG; rows without an ID are dropped (through the dataset's person-rows
   copy, counted once per dataset, when a fresh one exists). Kinds or columns not on the plan
   (quantiles on an uneven grid or on Spark; dates, text missing codes, numbers
   stored as text) go through the
   numpy readers instead (`reading`: row-group chunks; `keep_mask` for the unit),
   which also stay the plan's test oracle. Just before the first row is read the
   release is marked as read (releases.lifecycle.release_data_read_begins): a
   failure from then on charges the reservation (releases.lifecycle.release_fail).
   True aggregates live only in this process's memory: the whole computation is
   one task in one worker process, nothing partial travels through the broker or
   a result backend. Meanwhile a `Heartbeat` thread writes heartbeat_at every few
   seconds, so a killed worker is noticed within a minute (releases.lifecycle's
   re-dispatch).
3. finalize: in ONE transaction, with the release row locked again, draw the
   noise (through dpportal.privacy), store the noisy results, CHARGE the ledger
   and move computing -> computed. A crash before this commit leaves no noisy
   value anywhere, so a retry may draw afresh; after it, every run is a no-op.

Modules: `plan` (the spec as SQL), `duckdb_engine` (opening the data, running
the plan, the person bound), `person_rows` (the person bound through the
dataset's person-rows copy, when one is fresh), `readers` (public domains to cells; row groups to
true aggregates), `reading` (the numpy path's chunks and row selection), `run` (claim,
finalize, the whole computation), `hooks` (test-only pause and failure points).
The names below are the package's public interface.
"""

from releases.compute.hooks import _failure_point, _pause_point
from releases.compute.readers import MISSING, OTHER, Axis, StatisticReader, merge
from releases.compute.reading import (
    aggregate_row_groups,
    dataset_path,
    keep_mask,
    needed_columns,
)
from releases.compute.run import (
    Heartbeat,
    SpecMismatch,
    release_aggregate,
    release_claim,
    release_compute,
    release_finalize,
    release_verify_spec,
)

__all__ = [
    "MISSING",
    "OTHER",
    "Axis",
    "Heartbeat",
    "SpecMismatch",
    "StatisticReader",
    "_failure_point",
    "_pause_point",
    "aggregate_row_groups",
    "dataset_path",
    "keep_mask",
    "merge",
    "needed_columns",
    "release_aggregate",
    "release_claim",
    "release_compute",
    "release_finalize",
    "release_verify_spec",
]
