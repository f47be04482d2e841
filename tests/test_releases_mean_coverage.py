"""Issue 13.6b: the mean's interval keeps its coverage through the real compute path.

A release with one mean is submitted, approved and claimed on PostgreSQL; its
true aggregate comes from the real readers over the Parquet file
(compute.run.release_aggregate); then the worker's own noising step
(releases.dp.noisy_entry, the function release_finalize calls) runs R = 1,500
times with seeded noise, and each stored explanation is read back the way the
results and public pages read it (accuracy.mean_interval) at 90, 95 and 99 %.
The truth is the clipped mean computed independently from the raw column.

Assertion: coverage >= nominal - 3 SE, SE = sqrt(c (1 - c) / R). An interval
whose true coverage were exactly nominal fails one such check with probability
0.13 % (the pivot interval is that tight at the widest piece), so the 12 checks
here would fail ~1.6 % of seeds; the seeds are fixed, so the test is
deterministic. A too-narrow interval fails: at 99 % a miss rate of 2 % is
beyond 3 SE (0.77 percentage points) by 5 SE at R = 1,500.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpportal.privacy import accuracy
from dpportal.privacy.rng import SeededTestRandom
from releases import dp, lifecycle
from releases.compute.readers import StatisticReader
from releases.compute.run import release_aggregate, release_claim
from tests.releases_support import make_dataset, submitted, true_values

pytestmark = pytest.mark.django_db

R = 1_500
LEVELS = ("0.90", "0.95", "0.99")


@pytest.mark.parametrize(
    ("mechanism", "rows"),
    [("laplace", 200), ("laplace", 20_000), ("gaussian", 200), ("gaussian", 20_000)],
)
def test_mean_interval_coverage_through_the_compute_path(project, owner, reviewer, mechanism, rows):
    dataset = make_dataset(project=project, owner=owner, rows=rows)
    extra = {"delta": "0.000001"} if mechanism == "gaussian" else {}
    release = submitted(
        project=project, owner=owner, dataset=dataset, mechanism=mechanism, epsilon="1",
        statistics=[{"kind": "mean", "column": "age", "n_guess": rows}], **extra,
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    claimed = release_claim(release_id=release.pk)
    (aggregate,) = release_aggregate(release=claimed)
    spec = claimed.spec
    (entry,) = spec["statistics"]
    truth = true_values(dataset)["age_mean"]
    rng = SeededTestRandom(1300 + rows)
    inside = dict.fromkeys(LEVELS, 0)
    for _ in range(R):
        out = dp.noisy_entry(
            entry=entry,
            aggregate=aggregate,
            mechanism=spec["mechanism"],
            confidence=spec["confidence"],
            contribution_bound=spec["privacy_unit"]["contribution_bound"],
            cells=StatisticReader.from_spec(entry).axes,
            rng=rng,
        )
        for level in LEVELS:
            _, low, high = accuracy.mean_interval(out["explanation"], confidence=level)
            inside[level] += low <= truth <= high
    for level in LEVELS:
        nominal = float(Fraction(level))
        floor = nominal - 3 * math.sqrt(nominal * (1 - nominal) / R)
        assert inside[level] / R >= floor, (level, inside[level] / R)
    # not vacuous: the interval is far narrower than the bounds [0, 100]
    _, low, high = accuracy.mean_interval(out["explanation"], confidence="0.95")
    assert high - low < 25
