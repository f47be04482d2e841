"""The whole path at 100 million rows: ingest, the person plan, a release of every kind.

    DATABASE_URL=postgres://.../dpportal_bench DEBUG=1 .venv/bin/python bench/whole_path.py \\
        --rows 100000000 --workdir /data/whole-path

A census-like CSV (datasets.demo: person_id, age, sex, region, education, income,
hours; about one person in five on two rows) of `--rows` rows is generated once,
streaming in chunks, and kept in `--workdir/rows-N/` so that a rerun skips it.
Every phase runs in its own subprocess (its own peak RSS, VmHWM); rounds
interleave the phases of a stage; times are medians, peak memory the highest seen.

Stages (`--stages`), each beside the fastest engine doing the same work, same run:

1. ingest -- dpportal's upload-side ingest (datasets.services.dataset_ingest on a
   dataset made by dataset_create, as bench/ingest.py runs it: all the checks, the
   Polars child whose peak RSS is printed beside the worker's) next to Polars
   `scan_csv().sink_parquet()` and DuckDB `COPY ... TO parquet`, both snappy as
   dpportal writes. The last dpportal round's dataset is kept (its columns declared
   and its person-level unit confirmed, untimed) for the next stages.
2. person -- the first person-level release (a histogram of region, a 2-D
   histogram region x education, a sum of income, a mean of hours; L rows per
   person): `person-source`, the release computed with no person-rows copy (the
   DuckDB engine bounds persons over the dataset itself: releases.compute.
   duckdb_engine); `person-build`, the copy a worker makes once the unit is
   confirmed (datasets.services.dataset_person_rows_build -> datasets.person_rows);
   `person-copy`, the same release through that copy. Beside them `duckdb-person`:
   DuckDB alone (its defaults), `QUALIFY row_number() OVER (PARTITION BY person_id
   ORDER BY hash) <= L` into a temporary table, then the same aggregates. The first
   release through the copy is build + copy, also printed.
3. release -- one person-level release holding a statistic of every kind of the
   registry (releases.kinds), through the copy when stage 2 made one: dpportal's
   `releases.compute.release_compute`, exactly what the worker runs (claim, the
   aggregation plan, the noise, the ledger charge), the release drafted, submitted
   and approved through the services beforehand (untimed). Beside it DuckDB doing
   the same aggregates on the same Parquet after the same QUALIFY bound
   (quantile_cont for quantiles, GROUPING SETS for the cross-tabulation, var_samp,
   distinct (person, key) pairs for keys, rows per person over the whole file).

Each phase prints time, rows/s, peak RSS, the ratio to the fastest reference, and a
JSON line (`RESULT {...}`); the run's figures are saved in the workdir
(results-N.json), and `--compare-rows M` prints each phase's peak RSS at M rows (a
run kept in the same workdir) beside this run's: the acceptance wants every process
<= 600 MB and flat from 10M to 100M rows.

Needs a migrated PostgreSQL database of its own (DATABASE_URL): the ingest and the
releases go through the services; users, a project and the datasets are made in it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# run as a script, bench/ is first on sys.path: its modules must not shadow the stdlib's
sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

MEMORY_GOAL_MB = 600
BOUND = 1  # L, rows per person (--bound)
REGIONS = [f"Region {i:02d}" for i in range(1, 51)]
SEXES = ["female", "male"]
EDUCATION = ["none", "primary", "secondary", "vocational", "bachelor", "master", "doctorate"]
AGE_EDGES = [18, 30, 45, 65, 91]
INCOME = (0, 500_000)
HOURS = (0, 80)


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss it is not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(run) -> dict:
    started = time.perf_counter()
    run()
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb()}


# --- the data and the database ---------------------------------------------------------


def csv_path(folder: Path) -> Path:
    return folder / "census.csv"


def generate(folder: Path, rows: int) -> None:
    """The census-like CSV, streamed in chunks (datasets.demo), renamed into place."""
    from datasets.demo import write_census_csv

    partial = folder / "census.csv.partial"
    write_census_csv(partial, rows=rows)
    partial.rename(csv_path(folder))


def _django(folder: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ["MEDIA_ROOT"] = str(folder / "media")
    # the HTTP upload limit (512 MB by default) is the web form's: raised for the bench
    os.environ["DPPORTAL_MAX_UPLOAD_BYTES"] = str(1 << 40)
    import django

    django.setup()
    # no broker traffic: the bench runs the tasks' code itself
    from datasets import dispatch as datasets_dispatch
    from releases import dispatch as releases_dispatch

    releases_dispatch.release_dispatch = lambda **kwargs: None
    datasets_dispatch.dataset_person_rows_send = lambda **kwargs: None


def _people():
    """The bench's owner, reviewer and project (made once in the database)."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from budgets.models import Project
    from tests.factories import MembershipFactory, ProjectFactory, UserFactory

    User = get_user_model()  # noqa: N806
    owner = User.objects.filter(username="bench-owner").first() or UserFactory(
        username="bench-owner"
    )
    reviewer = User.objects.filter(username="bench-reviewer").first() or UserFactory(
        username="bench-reviewer"
    )
    project = Project.objects.filter(name="Whole path bench").first()
    if project is None:
        project = ProjectFactory(created_by=owner, name="Whole path bench")
        MembershipFactory(project=project, user=owner, role="owner")
        MembershipFactory(project=project, user=reviewer, role="reviewer")
    # room for every round's releases (the bench charges each one)
    project.epsilon_cap, project.delta_cap = Decimal(10**6), Decimal("0.5")
    project.save()
    return owner, reviewer, project


def _state(folder: Path) -> dict:
    path = folder / "state.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _save_state(folder: Path, **values) -> None:
    (folder / "state.json").write_text(json.dumps({**_state(folder), **values}))


def _declare(dataset, owner, bound: int) -> None:
    """The owner's declarations (untimed): public domains and the person-level unit.
    Written directly (as tests.releases_support does): the services would send the
    copy's task at once, and stage 2 times that build itself."""
    from decimal import Decimal

    from django.utils import timezone

    from datasets.models import Column, Dataset

    declared = {
        "person_id": {"kind": "excluded"},
        "age": {"kind": "numeric", "lower": Decimal(18), "upper": Decimal(90),
                "bin_edges": AGE_EDGES},
        "sex": {"kind": "categorical", "categories": SEXES, "missing": "drop"},
        "region": {"kind": "categorical", "categories": REGIONS, "missing": "drop"},
        "education": {"kind": "categorical", "categories": EDUCATION, "missing": "drop"},
        "income": {"kind": "numeric", "lower": Decimal(INCOME[0]), "upper": Decimal(INCOME[1]),
                   "bin_edges": [0, 20_000, 50_000, 100_000, 500_000]},
        "hours": {"kind": "numeric", "lower": Decimal(HOURS[0]), "upper": Decimal(HOURS[1]),
                  "bin_edges": [0, 20, 40, 60, 80]},
    }  # fmt: skip
    for name, fields in declared.items():
        Column.objects.filter(dataset=dataset, name=name).update(**fields)
    Dataset.objects.filter(pk=dataset.pk).update(
        declared=True, id_column="person_id", contribution_bound=bound,
        unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip


def _dataset(folder: Path):
    from datasets.models import Dataset

    dataset_id = _state(folder).get("dataset")
    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id else None
    if dataset is None or dataset.status != Dataset.Status.READY:
        raise SystemExit("no ingested dataset in this workdir: run the ingest stage first")
    return dataset


def _drop_dataset(dataset_id: int | None) -> None:
    """An earlier round's dataset loses its files (the disk is the limit at 100M rows)."""
    from datasets import storage

    if dataset_id:
        storage.delete_dataset_files(dataset_id)


# --- stage 1: ingest ---------------------------------------------------------------------


def phase_ingest_dpportal(folder: Path, bound: int) -> dict:
    _django(folder)
    from django.core.files import File

    from datasets.ingest.fast import keep_spare
    from datasets.models import Dataset
    from datasets.services import dataset_create, dataset_ingest, ingest_limits

    owner, _, project = _people()
    _drop_dataset(_state(folder).get("dataset"))
    # as a Celery worker process does when it starts (datasets.tasks): an idle Polars
    # child waits for the first CSV
    keep_spare(ingest_limits())
    path = csv_path(folder)
    with open(path, "rb") as handle:
        dataset = dataset_create(
            project=project, name="census", uploaded_file=File(handle, name=path.name),
            uploaded_by=owner, dispatch=False,
        )  # fmt: skip
    if dataset.status != Dataset.Status.UPLOADED:
        raise SystemExit(f"upload not queued: {dataset.status}")
    _save_state(folder, dataset=dataset.pk)
    os.sync()  # the upload's copy was just written: its writeback is not the ingest's
    rss_before = peak_rss_mb()
    from bench.ingest import _watch_children

    children = _watch_children()

    def run() -> None:
        done = dataset_ingest(dataset_id=dataset.pk)
        if done.status != Dataset.Status.READY:
            raise SystemExit(f"ingest failed: {done.failure_reason}")

    result = _timed(run)
    child = max((c.peak_rss_mb or 0 for c in children), default=0)
    dataset.refresh_from_db()
    _declare(dataset, owner, bound)
    _save_state(folder, parquet_file=dataset.parquet_file)
    parquet = Path(folder / "media" / dataset.parquet_file)
    return {**result, "rss_before_mb": rss_before, "child_peak_rss_mb": child,
            "parquet_mb": parquet.stat().st_size / 1e6}  # fmt: skip


def phase_ingest_polars(folder: Path, bound: int) -> dict:
    import polars as pl

    out = folder / "polars.parquet"
    try:
        return _timed(lambda: pl.scan_csv(csv_path(folder)).sink_parquet(out, compression="snappy"))
    finally:
        out.unlink(missing_ok=True)


def phase_ingest_duckdb(folder: Path, bound: int) -> dict:
    import duckdb

    out = folder / "duckdb.parquet"
    con = duckdb.connect()
    try:
        return _timed(
            lambda: con.execute(
                f"COPY (SELECT * FROM read_csv('{csv_path(folder)}')) TO '{out}' "  # noqa: S608 - our own paths
                "(FORMAT parquet, COMPRESSION snappy)"
            )
        )
    finally:
        out.unlink(missing_ok=True)


# --- stage 2: the person plan ------------------------------------------------------------


def person_statistics() -> list[dict]:
    """The first person-level release's statistics (builder data)."""
    return [
        {"kind": "histogram", "column": "region"},
        {"kind": "histogram", "column": "region", "column2": "education"},
        {"kind": "sum", "column": "income"},
        {"kind": "mean", "column": "hours", "n_guess": 1_000_000},
    ]


def every_kind_statistics() -> dict[str, dict]:
    """One statistic of every kind of the registry (builder data), by kind."""
    return {
        "count": {"kind": "count"},
        "histogram": {"kind": "histogram", "column": "region", "column2": "age"},
        "sum": {"kind": "sum", "column": "income"},
        "mean": {"kind": "mean", "column": "hours", "n_guess": 1_000_000},
        "argmax": {"kind": "argmax", "column": "region"},
        "grouped_sum": {"kind": "grouped_sum", "column": "income", "group_by": "region"},
        "grouped_mean": {"kind": "grouped_mean", "column": "income", "group_by": "region",
                         "n_guess": 100_000},
        "quantiles": {"kind": "quantiles", "column": "hours",
                      "quantiles": "0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9", "step": "1"},
        "stddev": {"kind": "stddev", "column": "age", "n_guess": 1_000_000},
        "variance": {"kind": "variance", "column": "income", "group_by": "education",
                     "n_guess": 100_000},
        "crosstab": {"kind": "crosstab", "columns": ["region", "sex", "education"], "way": 2,
                     "total": True},
        "bounds": {"kind": "bounds", "column": "income", "epsilon": "0.5"},
        "keys": {"kind": "keys", "column": "education"},
        "rows_per_person": {"kind": "rows_per_person", "cap": "20"},
    }  # fmt: skip


def _release(folder: Path, statistics_: list[dict], mechanism: str):
    """A release of `statistics_` on the workdir's dataset, drafted, submitted and approved
    through the services (queued for the worker; untimed)."""
    from decimal import Decimal

    from releases import lifecycle, services

    owner, reviewer, project = _people()
    dataset = _dataset(folder)
    entries = [{"epsilon": "1", **s, "hold": True} for s in statistics_]
    data = {
        "title": "Whole path", "dataset": dataset.pk, "mechanism": mechanism,
        "confidence": "0.95", "epsilon": str(sum(Decimal(s["epsilon"]) for s in entries)),
        "statistics": entries,
    }  # fmt: skip
    if mechanism == "gaussian":
        data["delta"] = "1e-7"
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    return lifecycle.release_approve(release=release, reviewer=reviewer)


def _compute(folder: Path, statistics_: list[dict], mechanism: str) -> dict:
    """The worker's computation of a fresh release of `statistics_` (timed alone)."""
    from releases import kinds

    for name in kinds.REGISTRY:  # the lazy imports a worker has made long before
        kinds.get(name)
    return _compute_release(_release(folder, statistics_, mechanism))


def _compute_release(release) -> dict:
    """release_compute of an approved release, as the worker runs it (timed alone)."""
    from releases import compute
    from releases.models import Release

    for entry in release.spec["statistics"]:
        compute.StatisticReader.from_spec(entry)
    parts = _watch_parts()
    result = _timed(lambda: compute.release_compute(release_id=release.pk))
    release.refresh_from_db()
    if release.status != Release.Status.COMPUTED:
        raise SystemExit(f"release not computed: {release.status}")
    return {**result, "parts": parts}


def _watch_parts() -> dict:
    """Each step of release_compute: its seconds and the process's peak RSS after it
    (the aggregation on the engine, then the noise and the ledger in one transaction)."""
    from releases.compute import run

    parts: dict = {}
    for name in ("release_aggregate", "release_finalize"):
        original = getattr(run, name)

        def timed(*args, _original=original, _name=name, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                parts[_name] = {"seconds": round(time.perf_counter() - started, 3),
                                "peak_rss_mb": round(peak_rss_mb(), 1)}  # fmt: skip

        setattr(run, name, timed)
    return parts


def _copy_fresh(folder: Path) -> bool:
    from datasets.services import person_rows as copy_service

    return copy_service._fresh(_dataset(folder)) is not None


def phase_person_source(folder: Path, bound: int) -> dict:
    """The first person-level release with no copy (the bound over the dataset itself)."""
    _django(folder)
    from datasets.services import dataset_person_rows_remove

    dataset_person_rows_remove(dataset_id=_dataset(folder).pk)
    return _compute(folder, person_statistics(), "laplace")


def phase_person_build(folder: Path, bound: int) -> dict:
    """The person-rows copy, as the worker's task makes it once the unit is confirmed."""
    _django(folder)
    from datasets.services import dataset_person_rows_build, dataset_person_rows_remove

    dataset = _dataset(folder)
    dataset_person_rows_remove(dataset_id=dataset.pk)
    result = _timed(lambda: dataset_person_rows_build(dataset_id=dataset.pk))
    if not _copy_fresh(folder):
        raise SystemExit("the person-rows copy was not made")
    return result


def phase_person_copy(folder: Path, bound: int) -> dict:
    """The same release through the fresh copy (made by person-build)."""
    _django(folder)
    if not _copy_fresh(folder):
        raise SystemExit("no fresh person-rows copy: person-build first")
    return _compute(folder, person_statistics(), "laplace")


def _parquet(folder: Path) -> str:
    state = _state(folder)
    return str(folder / "media" / state["parquet_file"])


def _kept(con, folder: Path, bound: int, columns: list[str]) -> None:
    """The rows DuckDB keeps: at most L per person by a keyed hash (row number breaks ties)."""
    src = f"read_parquet('{_parquet(folder)}', file_row_number = true)"
    listed = ", ".join(columns)
    if not bound:  # a row-level unit: every row, as a view (nothing materialized)
        con.execute(f"CREATE TEMP VIEW kept AS SELECT {listed} FROM {src}")  # noqa: S608 - our own names
        return
    h = f"hash(person_id, {listed}, 12345::UBIGINT)"
    con.execute(
        f"CREATE TEMP TABLE kept AS SELECT {listed} FROM {src} "  # noqa: S608 - our own names
        f"WHERE person_id IS NOT NULL QUALIFY row_number() OVER "
        f"(PARTITION BY person_id ORDER BY {h}, file_row_number) <= {bound}"
    )


def _clip(column: str, low, high) -> str:
    return f"least(greatest({column}, {low}), {high})"


def phase_duckdb_person(folder: Path, bound: int) -> dict:
    import duckdb

    def run() -> None:
        con = duckdb.connect()
        _kept(con, folder, bound, ["region", "education", "income", "hours"])
        con.sql("SELECT region, count(*) FROM kept GROUP BY region").fetchall()
        con.sql("SELECT region, education, count(*) FROM kept GROUP BY ALL").fetchall()
        con.sql(
            f"SELECT sum({_clip('income', *INCOME)}), sum({_clip('hours', *HOURS)}), count(hours) "
            "FROM kept"
        ).fetchall()
        con.close()

    return _timed(run)


# --- stage 3: a release of every kind -----------------------------------------------------


def phase_release_every(folder: Path, bound: int) -> dict:
    """A release holding a statistic of every kind, as the worker computes it."""
    _django(folder)
    from releases import kinds

    table = every_kind_statistics()
    missing = [k for k in kinds.REGISTRY if k not in table]
    if missing:
        raise SystemExit(f"kinds without a statistic in bench/whole_path.py: {missing}")
    result = _compute(folder, [table[k] for k in kinds.REGISTRY], "gaussian")
    return {**result, "copy": _copy_fresh(folder)}


def phase_release_row(folder: Path, bound: int) -> dict:
    """The same release with a row-level unit (no person bound; every kind but rows per
    person): the aggregation plan alone at this size. The dataset's unit is one row
    while the release is drafted and computed, the person-level one again afterwards."""
    _django(folder)
    from datasets.models import Dataset
    from releases import kinds

    table = every_kind_statistics()
    dataset = _dataset(folder)
    Dataset.objects.filter(pk=dataset.pk).update(id_column="", contribution_bound=1)
    try:
        chosen = [table[k] for k in kinds.REGISTRY if k != "rows_per_person"]
        return _compute_release(_release(folder, chosen, "gaussian"))
    finally:
        Dataset.objects.filter(pk=dataset.pk).update(
            id_column=dataset.id_column, contribution_bound=dataset.contribution_bound
        )


def phase_duckdb_row(folder: Path, bound: int) -> dict:
    """DuckDB's own aggregates for the row-level release: every row kept."""
    return phase_duckdb_every(folder, 0)


def phase_duckdb_every(folder: Path, bound: int) -> dict:
    """DuckDB's own aggregates for every kind, on the rows the same bound keeps."""
    import duckdb

    edges = AGE_EDGES
    age_bin = "CASE " + " ".join(
        f"WHEN age < {edges[i + 1]} THEN {i}" for i in range(len(edges) - 1)
    ) + " END"  # fmt: skip
    income, hours = _clip("income", *INCOME), _clip("hours", *HOURS)
    age = _clip("age", 18, 90)
    queries = [
        "SELECT count(*) FROM kept",  # count
        f"SELECT region, {age_bin}, count(*) FROM kept GROUP BY ALL",  # histogram 2-D
        f"SELECT sum({income}) FROM kept",  # sum
        f"SELECT sum({hours}), count(hours) FROM kept",  # mean
        "SELECT region, count(*) FROM kept GROUP BY region",  # argmax
        f"SELECT region, sum({income}) FROM kept GROUP BY region",  # grouped sum
        f"SELECT region, sum({income}), count(income) FROM kept GROUP BY region",  # grouped mean
        "SELECT quantile_cont(hours, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) FROM kept",
        f"SELECT sum({age}), sum({age} * {age}), count(age) FROM kept",  # stddev
        f"SELECT education, var_samp({income}), count(income) FROM kept GROUP BY education",
        "SELECT region, sex, education, count(*) FROM kept GROUP BY GROUPING SETS "
        "((region, sex), (region, education), (sex, education), (region), (sex), "
        "(education), ())",  # crosstab, 2-way with the total
        "SELECT sign(income), floor(log2(abs(income) + 1)), count(*) FROM kept GROUP BY ALL",
        "SELECT education, count(*) FROM (SELECT DISTINCT person_id, education FROM kept) "
        "GROUP BY education"  # keys: a person's keys counted once
        if bound
        else "SELECT education, count(*) FROM kept GROUP BY education",  # keys, row-level
    ]
    per_person = (
        "SELECT least(n, 20), count(*) FROM (SELECT person_id, count(*) AS n FROM "  # noqa: S608 - our own path
        f"read_parquet('{_parquet(folder)}') WHERE person_id IS NOT NULL GROUP BY person_id) "
        "GROUP BY ALL"
    )

    def run() -> None:
        con = duckdb.connect()
        _kept(con, folder, bound, ["person_id", "age", "sex", "region", "education", "income",
                                   "hours"])  # fmt: skip
        for query in [*queries, per_person] if bound else queries:
            con.sql(query).fetchall()
        con.close()

    return _timed(run)


PHASES = {
    "ingest-dpportal": phase_ingest_dpportal,
    "ingest-polars": phase_ingest_polars,
    "ingest-duckdb": phase_ingest_duckdb,
    "person-source": phase_person_source,
    "person-build": phase_person_build,
    "person-copy": phase_person_copy,
    "duckdb-person": phase_duckdb_person,
    "release-every": phase_release_every,
    "duckdb-every": phase_duckdb_every,
    "release-row": phase_release_row,
    "duckdb-row": phase_duckdb_row,
}
#: stage: (its phases in round order, dpportal's phases, the references)
STAGES = {
    "ingest": (["ingest-dpportal", "ingest-polars", "ingest-duckdb"], ["ingest-dpportal"],
               ["ingest-polars", "ingest-duckdb"]),
    "person": (["person-source", "person-build", "person-copy", "duckdb-person"],
               ["person-source", "person-build", "person-copy"], ["duckdb-person"]),
    "release": (["release-every", "duckdb-every"], ["release-every"], ["duckdb-every"]),
    "release-row": (["release-row", "duckdb-row"], ["release-row"], ["duckdb-row"]),
}  # fmt: skip


# --- the driver ------------------------------------------------------------------------------


def run_child(phase: str, folder: Path, bound: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, "--folder", str(folder),
         "--bound", str(bound)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        sys.stderr.write(out.stderr[-4000:])
        why = (out.stderr.strip().splitlines() or lines or [""])[-1]
        return {"failed": f"exit {out.returncode}: {why}"}
    return json.loads(lines[-1])


def bench_stage(stage: str, folder: Path, rows: int, repeat: int, bound: int) -> dict:
    phases, ours, references = STAGES[stage]
    runs: dict[str, list[dict]] = {p: [] for p in phases}
    load_before = load()
    for _ in range(repeat):
        for phase in phases:  # interleaved: every phase once per round
            result = run_child(phase, folder, bound)
            result["load"] = os.getloadavg()[0]
            runs[phase].append(result)
    out: dict = {"stage": stage, "rows": rows, "repeat": repeat, "bound": bound, "phases": {}}
    ok = {p: [r for r in rs if "failed" not in r] for p, rs in runs.items()}
    med = {p: statistics.median(r["seconds"] for r in rs) for p, rs in ok.items() if rs}
    fastest = min((p for p in references if p in med), key=med.__getitem__, default=None)
    print(f"\n{stage}: {rows:,} rows, {repeat} interleaved round(s), medians; "
          f"load average before {load_before}, after {load()}")  # fmt: skip
    for phase in phases:
        if phase not in med:
            print(f"  {phase:>16}: FAILED {runs[phase][-1]['failed']}")
            out["phases"][phase] = {"failed": runs[phase][-1]["failed"]}
            continue
        rs = ok[phase]
        peak = max(r["peak_rss_mb"] for r in rs)
        child = max(r.get("child_peak_rss_mb", 0) for r in rs)
        ratio = med[phase] / med[fastest] if fastest else float("nan")
        figures = {
            "seconds": med[phase], "rows_per_s": rows / med[phase], "peak_rss_mb": peak,
            "child_peak_rss_mb": child or None, "ratio": ratio, "reference": fastest,
            "rounds": [round(r["seconds"], 2) for r in rs],
            "load_1min": [round(r["load"], 2) for r in rs],
        }  # fmt: skip
        if phase in ours:
            figures["memory_ok"] = max(peak, child) <= MEMORY_GOAL_MB
        if rs[-1].get("rss_before_mb"):
            figures["rss_before_mb"] = max(r["rss_before_mb"] for r in rs)
        if "parts" in rs[-1]:
            figures["parts"] = rs[-1]["parts"]
        if "parquet_mb" in rs[-1]:
            figures["parquet_mb"] = rs[-1]["parquet_mb"]
        out["phases"][phase] = figures
        print(
            f"  {phase:>16}: {med[phase]:8.2f}s {rows / med[phase]:>12,.0f} rows/s  "
            f"peak RSS {peak:7.1f} MB" + (f" (+ Polars child {child:.1f} MB)" if child else "")
            + (f" (before the ingest {b:.0f} MB)" if (b := figures.get("rss_before_mb")) else "")
            + f"  {ratio:5.2f}x {fastest}  rounds {figures['rounds']} load {figures['load_1min']}"
            + "".join(f"\n{'':>20}{k}: {v['seconds']:.2f}s, peak RSS after it "
                      f"{v['peak_rss_mb']:.0f} MB" for k, v in figures.get("parts", {}).items())
        )  # fmt: skip
    if stage == "person" and {"person-build", "person-copy", "duckdb-person"} <= med.keys():
        first = med["person-build"] + med["person-copy"]
        out["first_through_copy"] = {"seconds": first, "ratio": first / med["duckdb-person"]}
        print(f"  first release through the copy (build + copy): {first:.2f}s, "
              f"{first / med['duckdb-person']:.2f}x duckdb-person")  # fmt: skip
    print("RESULT " + json.dumps(out))
    return out


def compare(workdir: Path, rows: int, other: int) -> None:
    """Each phase's peak RSS at `other` rows beside this run's (flat memory)."""
    mine, theirs = _results(workdir, rows), _results(workdir, other)
    if not theirs:
        print(f"\nno results at {other:,} rows in {workdir}: run --rows {other} first")
        return
    print(f"\npeak RSS (MB), {other:,} rows -> {rows:,} rows (goal <= {MEMORY_GOAL_MB} MB, flat)")
    for stage, figures in mine.items():
        for phase, f in figures["phases"].items():
            g = theirs.get(stage, {}).get("phases", {}).get(phase, {})
            if "peak_rss_mb" not in f or "peak_rss_mb" not in g:
                continue
            a, b = g["peak_rss_mb"], f["peak_rss_mb"]
            ca, cb = g.get("child_peak_rss_mb") or 0, f.get("child_peak_rss_mb") or 0
            child = f"  child {ca:6.0f} -> {cb:6.0f}" if ca or cb else ""
            print(f"  {phase:>16}: {a:7.0f} -> {b:7.0f}  ({b / a:4.2f}x){child}")


def _results(workdir: Path, rows: int) -> dict:
    path = workdir / f"results-{rows}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="interleaved rounds, medians (default 1 from 50M rows, else 3)",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/dpportal-whole-path"))
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--bound", type=int, default=BOUND, help="L, rows per person")
    parser.add_argument("--compare-rows", type=int, help="print peak RSS beside a run at M rows")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args.folder, args.bound)))
        return
    folder = args.workdir / f"rows-{args.rows}"
    folder.mkdir(parents=True, exist_ok=True)
    repeat = args.repeat or (1 if args.rows >= 50_000_000 else 3)
    if not csv_path(folder).exists():
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import sys; from pathlib import Path; "
             "import bench.whole_path as w; w.generate(Path(sys.argv[1]), int(sys.argv[2]))",
             str(folder), str(args.rows)],
            check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        took = time.perf_counter() - started
        print(f"generated {csv_path(folder)} in {took:.0f}s (load {load()})")
    size = csv_path(folder).stat().st_size
    print(f"{args.rows:,} rows, CSV {size / 1e9:.2f} GB, L = {args.bound}, "
          f"{os.cpu_count()} cores, load average {load()}")  # fmt: skip
    results = _results(args.workdir, args.rows)
    for stage in args.stages.split(","):
        results[stage] = bench_stage(stage, folder, args.rows, repeat, args.bound)
        (args.workdir / f"results-{args.rows}.json").write_text(json.dumps(results, indent=1))
    if args.compare_rows:
        compare(args.workdir, args.rows, args.compare_rows)


if __name__ == "__main__":
    main()
