"""Grouped sums and means: intervals at the single sum's and mean's standard, end to end.

Through the real compute path: a Parquet dataset (written with pyarrow) is
declared, a release is submitted, approved and claimed on PostgreSQL, and its
TRUE aggregates come once from the real engine (compute.run.release_aggregate:
the DuckDB plan, which clips and rounds every value to the public grid). The
worker's own noising step (releases.dp.noisy_entry) then runs R times with the
test-only seeded RNG, and every interval is read back the way the pages read
it: the kind's intervals (releases.kinds) for the grouped kinds,
accuracy.result_halfwidth / accuracy.mean_interval for the single sum and mean.
The truth each interval must cover is the exact CLIPPED statistic, computed
here from the raw values in Fraction arithmetic (never from the grid).

- 1e7 rows, all 12.3, in one group, bounds [0, 100], epsilon 10 per statistic,
  a grouped sum and the single sum: rounding 12.3 to a coarse grid moves a sum of
  1e7 rows by three noise scales, so only a grid fine enough for a public row
  bound, plus that bound's allowance, keeps the grouped sum's coverage.
- grouped means on a 5,000-row survey (six cells of 150 to 1,000 rows).
- width: a grouped mean's cell is no wider than 1.1x the single mean's pivot
  interval at equal epsilon and n (interval arithmetic on the parts was
  1.5-1.7x wider).

Coverage criterion: per cell and level, coverage >= nominal - 3 SE, SE =
sqrt(c (1 - c) / R), R = 500; all cells at once (simultaneous intervals) the
same. If an interval covered exactly at its nominal level, one check would fail
with probability ~0.13 % (normal approximation); the intervals are
conservative (discrete tails rounded outward, a worst-case rounding allowance,
union bounds over cells) but only slightly: the sums' noise is so fine-grained
(scale ~2**48 grid units) that their coverage is nominal to within 1e-6. There
are 78 checks, so ~10 % of seed choices would fail if every interval were exact
at nominal; the seeds are fixed, so the outcome is deterministic. Power: the
coarse grid gave 48 % at 95 % (48 SE below nominal); a coverage 2 points below
nominal at 99 % is 4.5 SE below it. The width test compares mean widths over
WIDTH_RUNS draws; cell and single mean share their noise laws and grid, so the
ratio is 1 up to sampling (measured 0.98-1.02; interval arithmetic gave 1.53-1.66).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.utils import timezone

from datasets.models import Column, Dataset
from dpportal.privacy import accuracy
from dpportal.privacy.rng import SeededTestRandom
from releases import dp, kinds, lifecycle
from releases.compute.readers import StatisticReader
from releases.compute.run import release_aggregate, release_claim
from tests.releases_support import REGIONS, make_dataset, submitted

pytestmark = pytest.mark.django_db

R = 500
LEVELS = ("0.90", "0.95", "0.99")
BIG = 10_000_000
VALUE = 12.3
GROUPS = ["a", "b"]  # cells: a, b, Other, Missing


def floor_rate(level: str, runs: int = R) -> float:
    p = float(Fraction(level))
    return p - 3 * math.sqrt(p * (1 - p) / runs)


def value_dataset(*, project, owner, name: str, groups: pa.Array, values: pa.Array) -> Dataset:
    """A declared dataset of two columns: "group" (categories a, b) and "value" in [0, 100]."""
    relative = f"datasets/{name}-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"group": groups, "value": values}), path)
    dataset = Dataset.objects.create(
        project=project, name=name, uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, declared=True, unit_confirmed_at=timezone.now(),
        unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="group", position=0, suggested_type="string", kind="categorical",
        categories=GROUPS, missing="category",
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="value", position=1, suggested_type="float", kind="numeric",
        lower=Decimal(0), upper=Decimal(100),
    )  # fmt: skip
    return dataset


def one_group(rows: int) -> pa.Array:
    """`rows` strings "a" (built from a dictionary array: no Python list of rows)."""
    indices = pa.array(np.zeros(rows, dtype=np.int8))
    return pc.cast(pa.DictionaryArray.from_arrays(indices, pa.array(["a"])), pa.string())


def computed(project, owner, reviewer, dataset, *, mechanism: str, statistics, epsilon: str):
    """The claimed release and its true aggregates from the real engine (once)."""
    project.epsilon_cap = Decimal(1000)
    project.save()
    extra = {"delta": "0.000004"} if mechanism == "gaussian" else {}
    release = submitted(
        project=project, owner=owner, dataset=dataset, mechanism=mechanism, epsilon=epsilon,
        statistics=statistics, **extra,
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    claimed = release_claim(release_id=release.pk)
    return claimed, release_aggregate(release=claimed)


def draw(spec, entry, aggregate, rng) -> dict:
    """The worker's noising step for one statistic, seeded."""
    return dp.noisy_entry(
        entry=entry, aggregate=aggregate, mechanism=spec["mechanism"],
        confidence=spec["confidence"],
        contribution_bound=spec["privacy_unit"]["contribution_bound"],
        cells=StatisticReader.from_spec(entry).axes, rng=rng,
    )  # fmt: skip


def intervals(out: dict, level: str, simultaneous: bool) -> list[tuple[Fraction, Fraction]]:
    """Each cell's published interval [low, high], as the pages read it."""
    kind, explanation = out["kind"], out["explanation"]
    if kind == "sum":
        value = Fraction(Decimal(out["values"][0]))
        h = Fraction(accuracy.result_halfwidth(explanation, confidence=level))
        return [(value - h, value + h)]
    if kind == "mean":
        _, low, high = accuracy.mean_interval(explanation, confidence=level)
        return [(Fraction(low), Fraction(high))]
    cells = [
        c.as_dict()
        for c in kinds.get(out["kind"]).intervals(out, confidence=level, simultaneous=simultaneous)
    ]
    return [(Fraction(c["low"]), Fraction(c["high"])) for c in cells]


def coverage(spec, entry, aggregate, truth: list[Fraction | None], *, seed: int) -> dict:
    """{(level, simultaneous): (per-cell hit counts, all-cells hit count)} over R draws.

    Cells whose truth is None (no rows: a mean is undefined there) are not counted."""
    rng = SeededTestRandom(seed)
    counted = [i for i, t in enumerate(truth) if t is not None]
    out = {(lv, sim): ([0] * len(truth), 0) for lv in LEVELS for sim in (False, True)}
    for _ in range(R):
        result = draw(spec, entry, aggregate, rng)
        for key in out:
            cells = intervals(result, *key)
            inside = [lo <= t <= hi if t is not None else True for (lo, hi), t in
                      zip(cells, truth, strict=True)]  # fmt: skip
            hits, together = out[key]
            out[key] = (
                [h + ok for h, ok in zip(hits, inside, strict=True)],
                together + all(inside[i] for i in counted),
            )
    return out


def assert_coverage(found: dict, truth: list, what: object) -> None:
    """Every level, per cell and all cells at once, >= nominal - 3 SE (all misses listed)."""
    short = []
    for (level, simultaneous), (hits, together) in sorted(found.items()):
        if simultaneous and len(truth) == 1:
            continue  # the same interval as per cell
        if simultaneous:
            rates = [together / R]
        else:
            rates = [h / R for h, t in zip(hits, truth, strict=True) if t is not None]
        if min(rates) < floor_rate(level):
            short.append((level, "all cells" if simultaneous else "per cell", rates))
    assert not short, (what, short)


BIG_STATS = [
    {"kind": "sum", "column": "value"},
    {"kind": "grouped_sum", "column": "value", "group_by": "group"},
]


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_1e7_equal_rows_at_epsilon_10_cover_the_clipped_sums(project, owner, reviewer, mechanism):
    """1e7 rows of 12.3 in group "a", bounds [0, 100], epsilon 10 per statistic.

    Before the grouped sum had the single sum's grid and rounding allowance, its cell
    "a" was covered in 21 / 48 / 88 % of the runs at 90 / 95 / 99 % (Laplace) and
    85 / 91 / 97 % (Gaussian, delta 2e-6)."""
    dataset = value_dataset(
        project=project, owner=owner, name="equal", groups=one_group(BIG),
        values=pa.array(np.full(BIG, VALUE)),
    )  # fmt: skip
    claimed, aggregates = computed(
        project, owner, reviewer, dataset, mechanism=mechanism, statistics=BIG_STATS,
        epsilon="20",
    )  # fmt: skip
    if mechanism == "laplace":  # the numpy readers (the plan's oracle) agree on the fine grid
        groups = list(range(pq.ParquetFile(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
                            .metadata.num_row_groups))  # fmt: skip
        assert release_aggregate(release=claimed, row_groups=groups) == aggregates
    exact = Fraction(VALUE)  # the float 12.3 exactly; inside [0, 100], so clipping keeps it
    truths = {
        "sum": [BIG * exact],
        "grouped_sum": [BIG * exact, Fraction(0), Fraction(0), Fraction(0)],
    }
    for position, (entry, aggregate) in enumerate(
        zip(claimed.spec["statistics"], aggregates, strict=True)
    ):
        assert Fraction(entry["epsilon"]) == 10
        truth = truths[entry["kind"]]
        found = coverage(claimed.spec, entry, aggregate, truth, seed=9100 + 1000 * position)
        assert_coverage(found, truth, (mechanism, entry["kind"]))


def survey_truth(dataset) -> list[Fraction | None]:
    """The clipped mean of income per region cell (north..west, Other, Missing), exactly."""
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    sums, counts = [Fraction(0)] * 6, [0] * 6
    for region, income in zip(
        table.column("region").to_pylist(), table.column("income").to_pylist(), strict=True
    ):
        if income is None:
            continue
        cell = 5 if region is None else REGIONS.index(region) if region in REGIONS else 4
        sums[cell] += min(max(Fraction(income), Fraction(0)), Fraction(150000))
        counts[cell] += 1
    return [s / n if n else None for s, n in zip(sums, counts, strict=True)]


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_grouped_mean_cells_cover_the_clipped_means(project, owner, reviewer, mechanism):
    dataset = make_dataset(project=project, owner=owner, rows=5000)
    stats = [{"kind": "grouped_mean", "column": "income", "group_by": "region", "n_guess": 800}]
    claimed, (aggregate,) = computed(
        project, owner, reviewer, dataset, mechanism=mechanism, statistics=stats, epsilon="0.3"
    )
    truth = survey_truth(dataset)
    assert all(t is not None for t in truth)
    (entry,) = claimed.spec["statistics"]
    found = coverage(claimed.spec, entry, aggregate, truth, seed=4400)
    assert_coverage(found, truth, (mechanism, "grouped_mean"))


WIDTH_RUNS = 200


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("rows", [300, 20_000])
def test_grouped_mean_cell_is_as_narrow_as_the_mean_pivot(
    project, owner, reviewer, mechanism, rows
):
    """All rows in group "a": cell a and the single mean have the same n and epsilon.

    Mean width over WIDTH_RUNS draws at 95 %: grouped cell <= 1.1x the single mean."""
    gen = np.random.default_rng(5)  # test DATA, not noise
    dataset = value_dataset(
        project=project, owner=owner, name="uniform", groups=one_group(rows),
        values=pa.array(gen.uniform(0, 100, rows)),
    )  # fmt: skip
    stats = [
        {"kind": "mean", "column": "value", "n_guess": rows},
        {"kind": "grouped_mean", "column": "value", "group_by": "group", "n_guess": rows},
    ]
    claimed, aggregates = computed(
        project, owner, reviewer, dataset, mechanism=mechanism, statistics=stats, epsilon="2"
    )
    spec = claimed.spec
    single, grouped = spec["statistics"]
    assert single["epsilon"] == grouped["epsilon"]
    assert aggregates[1][1][0] == aggregates[0][1] == rows  # the same n in cell a
    widths = {"mean": [], "grouped_mean": []}
    rng = SeededTestRandom(77 + rows)
    for _ in range(WIDTH_RUNS):
        for entry, aggregate in zip(spec["statistics"], aggregates, strict=True):
            (low, high), *_ = intervals(draw(spec, entry, aggregate, rng), "0.95", False)
            widths[entry["kind"]].append(float(high - low))
    ratio = np.mean(widths["grouped_mean"]) / np.mean(widths["mean"])
    assert ratio <= 1.1, ratio
    assert np.mean(widths["mean"]) < 50  # not vacuous: narrower than half the bounds
