"""After approval, no value makes a release fail; a failure after reading the data charges.

One person's value must not decide whether a release computes: a failure is seen by
everyone who sees the status, and a refunded failure would be an answer for free. So:

- a battery of hostile values (int64 +-(2**53 + 1) and +-(2**63 - 1), NaN and +-inf,
  text "inf" and "1e400" in a numeric column, empty cells, a 1 MiB text cell in a
  grouping column) goes through the real compute path for every statistic kind, on the
  aggregation plan (DuckDB) and on the numpy readers, and the release computes; the
  true aggregates of both paths agree with each other and, for the clipped sum, with
  the sum of the clipped true values computed here in exact arithmetic;
- a failure injected once the rows are being read leaves the reservation charged
  (ledger: reserve, charge), also when a later retry gives up before reading; a failure
  before any row is read returns it (reserve, release).

Parameterised over the registry of statistic kinds (`KINDS`): a kind added to the list
without a hostile-value statistic below fails `test_every_kind_has_a_hostile_statistic`.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.utils import timezone

from budgets.models import LedgerEntry
from budgets.selectors import ledger_audit
from datasets.models import Column, Dataset
from releases import compute, lifecycle
from releases.compute import run
from releases.compute.plan import PLAN_KINDS
from releases.kinds import REGISTRY
from releases.models import Release, ReleaseResult
from releases.tasks import release_compute_task
from tests.releases_support import submitted

KINDS = tuple(REGISTRY)

BIG = 2**53 + 1
MAX = 2**63 - 1
MIB_TEXT = "x" * 2**20
MIB_DIGITS = "1" * 2**20  # a number in text past float range: read as +inf, so missing
GROUPS = ["a", "b"]

# value columns: int64 (stored numbers), float64, and numbers stored as text
INTS = [3, 40, 99, BIG, -BIG, MAX, -MAX, -(2**63), 2**53, None, 0, 100, 7, 55, 12, 60]
FLOATS = [1.5, float("nan"), float("inf"), float("-inf"), None, 1e308, -1e308, 42.0]
FLOATS += [99.5, 0.25, 3.0, 77.0, float(MAX), float(BIG), 10.0, 20.0]
TEXTS = ["5", "inf", "", "nan", "1e400", "-inf", None, MIB_DIGITS, " 12 ", "+7", "abc"]
TEXTS += [str(BIG), str(MAX), str(-MAX), "50", "100"]
GROUP_CELLS = ["a", "b", MIB_TEXT, "", None, "a", "b", "b", "a", MIB_TEXT, "c", "a"]
GROUP_CELLS += ["b", "", "a", "b"]
VALUE_COLUMNS = ("big", "flt", "txt")

#: per kind, its statistics over one value column (the grouping column holds the 1 MiB
#: cell and empty cells; "bin", int64 with the same values, is a numeric grouping)
HOSTILE: dict[str, list[dict]] = {
    "count": [
        {"kind": "count"},
        {"kind": "count", "column": "grp", "category": "a"},
    ],
    "histogram": [
        {"kind": "histogram", "column": "grp", "column2": "{v}"},
        {"kind": "histogram", "column": "{v}"},
    ],
    "sum": [{"kind": "sum", "column": "{v}"}],
    "mean": [{"kind": "mean", "column": "{v}", "n_guess": 100}],
    "argmax": [{"kind": "argmax", "column": "grp"}],
    "grouped_sum": [{"kind": "grouped_sum", "column": "{v}", "group_by": "grp"}],
    "grouped_mean": [
        {"kind": "grouped_mean", "column": "{v}", "group_by": "grp", "group_by2": "bin",
         "n_guess": 100},
    ],
    "quantiles": [{"kind": "quantiles", "column": "{v}", "quantiles": "0.25, 0.5"}],
    "stddev": [{"kind": "stddev", "column": "{v}", "group_by": "grp", "n_guess": 100}],
    "variance": [{"kind": "variance", "column": "{v}", "n_guess": 100}],
    "crosstab": [{"kind": "crosstab", "columns": ["grp", "{v}", "bin"], "way": 2, "total": True}],
    "bounds": [{"kind": "bounds", "column": "{v}", "outside": 0}],
    # the 1 MiB cell is a key cut to RELEASE_KEYS_MAX_KEY_CHARS; empty cells are a key ""
    "keys": [{"kind": "keys", "column": "grp"}],
    # over the person column: "grp" as the ID (the 1 MiB cell, empty cells) -- see PERSON
    "rows_per_person": [{"kind": "rows_per_person", "cap": "3"}],
}  # fmt: skip
#: the ID column of the kinds that need one (the hostile cells are then persons' IDs)
PERSON = {"rows_per_person": "grp"}


def statistics_for(kind: str, column: str) -> list[dict]:
    return [
        {
            k: (
                v.format(v=column)
                if isinstance(v, str)
                else [x.format(v=column) for x in v]
                if isinstance(v, list)
                else v
            )
            for k, v in s.items()
        }
        for s in HOSTILE[kind]
    ]


def mechanism_for(kind: str) -> dict:
    """The release's mechanism for `kind`: Laplace, or Gaussian for a kind it refuses."""
    if REGISTRY[kind].mechanism_problem("laplace"):
        return {"mechanism": "gaussian", "delta": "1e-6"}
    return {}


def hostile_dataset(project, owner, *, row_group_size: int = 5, id_column: str = "") -> Dataset:
    n = len(INTS)
    assert len(FLOATS) == len(TEXTS) == len(GROUP_CELLS) == n
    table = pa.table(
        {
            "grp": pa.array(GROUP_CELLS, type=pa.string()),
            "big": pa.array(INTS, type=pa.int64()),
            "flt": pa.array(FLOATS, type=pa.float64()),
            "txt": pa.array(TEXTS, type=pa.string()),
            "bin": pa.array(INTS[::-1], type=pa.int64()),
        }
    )
    relative = f"datasets/hostile-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    dataset = Dataset.objects.create(
        project=project, name="hostile", uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, declared=True, unit_confirmed_at=timezone.now(),
        unit_confirmed_by=owner, id_column=id_column,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="grp", position=0, suggested_type="string",
        kind="categorical", categories=GROUPS, missing="category",
    )  # fmt: skip
    for position, (name, stored) in enumerate(
        [("big", "integer"), ("flt", "float"), ("txt", "string"), ("bin", "integer")], start=1
    ):
        Column.objects.create(
            dataset=dataset, name=name, position=position, suggested_type=stored,
            kind="numeric", lower=Decimal(0), upper=Decimal(100), bin_edges=[0, 50, 100],
        )  # fmt: skip
    return dataset


def approved(project, owner, reviewer, dataset, statistics, **kwargs) -> Release:
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=statistics, epsilon="1",
        **kwargs,
    )  # fmt: skip
    return lifecycle.release_approve(release=release, reviewer=reviewer)


def ledger_kinds(release: Release) -> list[str]:
    return list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


@pytest.fixture(params=["plan", "numpy"])
def path(request, monkeypatch):
    """The aggregation plan where it applies, or the numpy readers for everything."""
    if request.param == "numpy":
        monkeypatch.setattr(run, "duckdb_plan", lambda spec: None)
    return request.param


def test_every_kind_has_a_hostile_statistic():
    assert set(KINDS) <= set(HOSTILE), f"add a hostile statistic for {set(KINDS) - set(HOSTILE)}"


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_hostile_values_compute_for_every_kind(kind, path, project, owner, reviewer):
    """On the plan path only the stored-number columns (numbers in text are not on the
    plan: they would send the whole release to the numpy readers)."""
    dataset = hostile_dataset(project, owner, id_column=PERSON.get(kind, ""))
    columns = ("big", "flt") if path == "plan" else VALUE_COLUMNS
    statistics = [s for column in columns for s in statistics_for(kind, column)]
    release = approved(project, owner, reviewer, dataset, statistics, **mechanism_for(kind))
    on_plan = run.duckdb_plan(release.spec) is not None
    assert on_plan == (path == "plan" and kind in PLAN_KINDS)
    outcome = release_compute_task.apply(args=[release.pk])
    assert outcome.successful()
    release.refresh_from_db()
    assert (release.status, release.failure_reason) == ("computed", "")
    assert ledger_kinds(release) == ["reserve", "charge"]
    payload = ReleaseResult.objects.get(release=release).payload
    assert [s["kind"] for s in payload["statistics"]] == [s["kind"] for s in statistics]


def true_aggregates(release: Release, *, numpy: bool, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        if numpy:
            patch.setattr(run, "duckdb_plan", lambda spec: None)
        claimed = compute.release_claim(release_id=release.pk)
        return compute.release_aggregate(release=claimed)


def plain(aggregate):
    if hasattr(aggregate, "tolist"):
        return aggregate.tolist()
    if isinstance(aggregate, list | tuple):
        return [plain(a) for a in aggregate]
    return aggregate


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [k for k in KINDS if k in PLAN_KINDS])
def test_both_paths_read_hostile_values_alike(kind, project, owner, reviewer, monkeypatch):
    """The plan (DuckDB casts in SQL) and the numpy readers give the same true aggregates."""
    dataset = hostile_dataset(project, owner)
    statistics = [s for column in ("big", "flt") for s in statistics_for(kind, column)]
    release = approved(project, owner, reviewer, dataset, statistics, **mechanism_for(kind))
    on_plan = true_aggregates(release, numpy=False, monkeypatch=monkeypatch)
    on_numpy = true_aggregates(release, numpy=True, monkeypatch=monkeypatch)
    assert plain(on_plan) == plain(on_numpy)


@pytest.mark.django_db
@pytest.mark.parametrize("column", VALUE_COLUMNS)
def test_the_clipped_sum_is_the_sum_of_the_clipped_true_values(
    column, path, project, owner, reviewer, monkeypatch
):
    """int64 2**63 - 1 counts as the upper bound 100 (not wrapped, not a float overflow);
    -(2**63 - 1) as 0; missing cells (null, NaN, +-inf, text that is no finite number)
    are left out; all exactly (Fraction arithmetic on the true values)."""
    dataset = hostile_dataset(project, owner)
    release = approved(project, owner, reviewer, dataset, [{"kind": "sum", "column": column}])
    claimed = compute.release_claim(release_id=release.pk)
    (aggregate,) = compute.release_aggregate(release=claimed)
    gamma = Fraction(release.spec["statistics"][0]["granularity"])
    raw = {"big": INTS, "flt": FLOATS, "txt": TEXTS}[column]
    expected = Fraction(0)
    for value in raw:
        try:
            number = Fraction(str(value).strip()) if value is not None else None
        except ValueError:
            number = None  # nan, inf, "", "abc": missing
        if number is not None and column == "txt" and abs(number) > 10**308:
            number = None  # past float range: not a finite number, missing
        if number is not None:
            expected += min(max(number, Fraction(0)), Fraction(100))
    # every clipped value here is a multiple of the grid: no rounding
    assert aggregate * gamma == expected


# --- the reservation: charged once the rows were being read ---------------------------


@pytest.fixture
def queued(project, owner, reviewer):
    dataset = hostile_dataset(project, owner)
    return approved(project, owner, reviewer, dataset, [{"kind": "sum", "column": "big"}])


@pytest.mark.django_db
def test_a_failure_after_reading_charges_the_reservation(queued, monkeypatch, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("before_commit always")  # every attempt fails after aggregating
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    release_compute_task.apply(args=[queued.pk])  # eager: the retries run inline
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert release.data_read_at is not None
    assert ledger_kinds(release) == ["reserve", "charge"]
    assert release.failure_reason.endswith(
        "The reserved budget was spent: the computation failed after it had read the dataset."
    )
    assert not ReleaseResult.objects.filter(release=release).exists()
    assert ledger_audit(project=release.project) == []  # a charged failure is consistent


@pytest.mark.django_db
@pytest.mark.parametrize("numpy", [False, True])
def test_a_reader_failing_mid_read_charges_the_reservation(numpy, queued, monkeypatch):
    """A value-dependent error inside the readers (injected) is a failure after reading."""

    def broken(*args, **kwargs):
        raise pa.ArrowInvalid("a cell did not read")

    if numpy:
        monkeypatch.setattr(run, "duckdb_plan", lambda spec: None)
        monkeypatch.setattr(compute.StatisticReader, "aggregate", broken)
    else:
        monkeypatch.setattr(run, "run_plan", broken)
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert ledger_kinds(release) == ["reserve", "charge"]


@pytest.mark.django_db
def test_a_failure_before_reading_returns_the_reservation(queued, monkeypatch, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("before_read always")
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert release.data_read_at is None
    assert ledger_kinds(release) == ["reserve", "release"]
    assert release.failure_reason.endswith("Nothing was spent: the reserved budget was returned.")
    assert ledger_audit(project=release.project) == []
    # had it read the data, the refund would be a violation the audit names
    Release.objects.filter(pk=release.pk).update(data_read_at=timezone.now())
    assert ledger_audit(project=release.project) == [
        f"project {release.project.slug!r}, budget request {release.budget_request_id} "
        f"({release.title!r}): release failed after reading its data but was refunded"
    ]


@pytest.mark.django_db
def test_storage_unreachable_returns_the_reservation(queued, settings):
    settings.MEDIA_ROOT = settings.MEDIA_ROOT / "elsewhere"  # the stored copy is gone
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert (release.status, release.data_read_at) == ("failed", None)
    assert ledger_kinds(release) == ["reserve", "release"]


@pytest.mark.django_db
def test_a_retry_giving_up_before_reading_still_charges_an_earlier_read(
    queued, monkeypatch, tmp_path, settings
):
    """Worker killed mid-read (simulated: the first attempt read, then died without a
    word); the re-dispatched attempts then fail before reading (storage gone): the read
    already happened, so giving up charges."""
    fail = tmp_path / "fail"
    fail.write_text("before_commit")  # the first attempt dies after reading
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    with pytest.raises(RuntimeError):
        compute.release_compute(release_id=queued.pk)
    assert Release.objects.get(pk=queued.pk).status == "computing"
    settings.MEDIA_ROOT = settings.MEDIA_ROOT / "elsewhere"
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert ledger_kinds(release) == ["reserve", "charge"]


@pytest.mark.django_db
def test_a_retry_that_succeeds_after_a_read_failure_charges_once(queued, monkeypatch, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("before_commit")  # fails once after reading, then the retry computes
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert not fail.exists()
    assert release.status == "computed"
    assert ledger_kinds(release) == ["reserve", "charge"]
