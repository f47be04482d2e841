"""The owner's private check of a draft against the data: TRUE facts, for the owner only.

Before submitting, the dataset's owner may see, per statistic of the draft, how many
values its bounds would clip (below the lower, above the upper bound) and, with a
person column, how many rows the limit L drops and how many rows persons have (min,
median, 90th and 99th percentile, max, number of persons). These are true values of
the data, not differentially private: like the private column profile
(datasets.ingest) they are shown to the owner, who may see the data anyway, and go
nowhere else.

So they are computed in the request, returned in its response and forgotten: never
stored (no model, no session, no Celery result, which a result backend would keep),
never logged, never cached (the response says no-store), never in the review
document, the API for others or any public page. The work is bounded by two
settings named in the refusals: a dataset past DPPORTAL_PRIVATE_CHECK_MAX_ROWS rows
is refused before any row is read, and DuckDB is interrupted after
DPPORTAL_PRIVATE_CHECK_SECONDS. One query: a scan for the clipping counts and a
GROUP BY person for the rows per person, joined into one result row.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from typing import Any

import duckdb
import pyarrow.parquet as pq
from django.conf import settings
from django.utils.translation import gettext

from datasets.external import external_spec
from dpportal import formatting
from dpportal.errors import ValidationFailed
from releases.compute.dialect import DUCKDB
from releases.compute.duckdb_engine import _connection, open_source
from releases.compute.plan import _plain_numeric
from releases.kinds.domains import column_domain
from releases.plans import ReleasePlan


class CheckRefused(ValidationFailed):
    """The check would pass one of its bounds (the message names it)."""


def _max_rows() -> int:
    return int(getattr(settings, "DPPORTAL_PRIVATE_CHECK_MAX_ROWS", 10_000_000))


def _seconds() -> float:
    return float(getattr(settings, "DPPORTAL_PRIVATE_CHECK_SECONDS", 20))


def _rows_of(paths: list[str], filesystem) -> int:
    return sum(pq.ParquetFile(p, filesystem=filesystem).metadata.num_rows for p in paths)


def check_plan(*, plan: ReleasePlan) -> dict[str, Any]:
    """The check of a parsed draft (plan.dataset's data), as formatted text per statistic.

    Raises CheckRefused past a bound; never returns or logs anything but the response.
    """
    dataset = plan.dataset
    spec = {
        "parquet_file": dataset.parquet_file,
        **({"external": _external(dataset)} if dataset.external_kind else {}),
    }
    paths, schema, filesystem = open_source(spec)
    rows = _rows_of(paths, filesystem)
    if rows > _max_rows():
        raise CheckRefused(
            gettext(
                "The check reads at most %(limit)s rows (DPPORTAL_PRIVATE_CHECK_MAX_ROWS); this "
                "dataset has more."
            )
            % {"limit": formatting.integer(_max_rows())}
        )
    selects: list[str] = []
    bounded = []
    for stat in plan.statistics:
        if stat.column is None or stat.lower is None or stat.upper is None:
            continue
        domain = column_domain(stat.column)
        storage = schema.field(stat.column.name).type if stat.column.name in schema.names else None
        value = _plain_numeric(domain, storage, DUCKDB) if storage is not None else None
        if value is None:
            bounded.append((stat, None))
            continue
        k = len(selects) // 2
        lo, hi = DUCKDB.double(float(stat.lower)), DUCKDB.double(float(stat.upper))
        selects += [f"count_if(({value}) < {lo}) AS b{k}", f"count_if(({value}) > {hi}) AS a{k}"]
        bounded.append((stat, k))
    id_column = dataset.id_column or ""
    if id_column and id_column not in schema.names:
        id_column = ""
    files = ", ".join(DUCKDB.text(p) for p in paths)
    source = f"read_parquet([{files}])"
    if filesystem is not None:
        raise CheckRefused(
            gettext("The check reads datasets stored on this server only, not in object storage.")
        )
    parts = [f"(SELECT {', '.join(selects) or '1 AS one'} FROM {source}) AS c"]  # noqa: S608 - names quoted, numbers only
    if id_column:
        person = DUCKDB.ident(id_column)
        bound = int(dataset.contribution_bound)
        parts.append(
            "(SELECT count(*) AS persons, min(n) AS lo, quantile_disc(n, 0.5) AS q50, "  # noqa: S608 - names quoted, integers only
            "quantile_disc(n, 0.9) AS q90, quantile_disc(n, 0.99) AS q99, max(n) AS hi, "
            f"coalesce(sum(greatest(n - {bound}, 0)), 0) AS dropped, "
            "coalesce(sum(n), 0) AS total_rows "
            f"FROM (SELECT count(*) AS n FROM {source} WHERE {person} IS NOT NULL "
            f"GROUP BY {person})) AS p"
        )
    sql = "SELECT * FROM " + " CROSS JOIN ".join(parts)  # noqa: S608 - built above
    record = _run(sql)
    return _texts(plan, bounded, record, id_column, rows)


def _external(dataset) -> dict[str, Any]:
    return external_spec(dataset.external_kind, dataset.external_location)


def _run(sql: str) -> dict[str, Any]:
    """The one query under the time bound (DuckDB interrupted past it)."""
    spill = tempfile.mkdtemp(prefix="dpportal-check-")
    try:
        with _connection(spill) as con:
            timer = threading.Timer(_seconds(), con.interrupt)
            timer.start()
            try:
                cursor = con.execute(sql)
                row = cursor.fetchone()
                names = [c[0] for c in cursor.description]
            except duckdb.InterruptException:
                raise CheckRefused(
                    gettext(
                        "The check stopped after %(seconds)s seconds "
                        "(DPPORTAL_PRIVATE_CHECK_SECONDS): the dataset is too large to check "
                        "in time."
                    )
                    % {"seconds": formatting.integer(_seconds())}
                ) from None
            finally:
                timer.cancel()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return dict(zip(names, row or (), strict=True))


def _texts(plan, bounded, record, id_column: str, rows: int) -> dict[str, Any]:
    statistics = []
    for stat, k in bounded:
        item = {
            "position": stat.position,
            "label": stat.label or stat.label_zh,
            "column": stat.column.name,
            "lower": formatting.significant(stat.lower, 30),
            "upper": formatting.significant(stat.upper, 30),
        }
        if k is None:
            item["text"] = gettext(
                "Not checked: this column is not stored as numbers (the check reads stored "
                "numbers only)."
            )
        else:
            item["below"] = formatting.integer(record[f"b{k}"])
            item["above"] = formatting.integer(record[f"a{k}"])
            item["text"] = gettext(
                "%(below)s values below %(lower)s and %(above)s above %(upper)s would be clipped."
            ) % {k2: item[k2] for k2 in ("below", "lower", "above", "upper")}
        statistics.append(item)
    out: dict[str, Any] = {"rows": formatting.integer(rows), "statistics": statistics}
    if id_column and record.get("persons"):
        out["persons"] = {
            "column": id_column,
            "limit": formatting.integer(plan.dataset.contribution_bound),
            "persons": formatting.integer(record["persons"]),
            "min": formatting.integer(record["lo"]),
            "median": formatting.integer(record["q50"]),
            "p90": formatting.integer(record["q90"]),
            "p99": formatting.integer(record["q99"]),
            "max": formatting.integer(record["hi"]),
            "dropped": formatting.integer(record["dropped"]),
            "dropped_share": formatting.percent(
                record["dropped"] / record["total_rows"] if record["total_rows"] else 0
            ),
        }
    return out
