"""Every statistic kind through the real compute path, for the per-kind statistical tests.

One builder statistic per kind (`SURVEY_STATISTICS`, `AUDIT_STATISTICS`, keyed like
the kinds registry (releases.kinds): a kind added later has no entry and its tests fail by name
until it gets one: `statistic_for`), releases built and
approved through the services, true aggregates computed ONCE through the real engine
(releases.compute.release_aggregate), then noised as many times as a test needs by the
function the compute task calls (releases.dp.noisy_entry) with a seeded test source.

`stated_noise` reads what a published entry states about its noise (distribution and
parameter in value units) through the public page's data (releases.public.noise_data),
never from the code that drew it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.utils import timezone

from datasets.models import Column, Dataset
from dpportal.privacy import accuracy, calibration, marginals, noise
from dpportal.privacy.rng import RandomSource
from releases import compute, dp, kinds, lifecycle, services
from releases.compute.readers import StatisticReader
from releases.public import noise_data

KINDS = tuple(kinds.REGISTRY)

#: one statistic per kind on tests.releases_support.make_dataset's survey file
SURVEY_STATISTICS: dict[str, dict[str, Any]] = {
    "count": {"kind": "count"},
    "histogram": {"kind": "histogram", "column": "region", "column2": "age"},
    "sum": {"kind": "sum", "column": "income"},
    "mean": {"kind": "mean", "column": "age", "n_guess": 3000},
    # the selections at a small epsilon, so that their laws spread over several cells
    "argmax": {"kind": "argmax", "column": "region", "epsilon": "0.2"},
    "grouped_sum": {"kind": "grouped_sum", "column": "income", "group_by": "region"},
    "grouped_mean": {
        "kind": "grouped_mean", "column": "income", "group_by": "region", "n_guess": 500,
    },
    "quantiles": {
        "kind": "quantiles", "column": "age", "quantiles": "0.25, 0.5, 0.9", "step": "5",
        "epsilon": "0.05",
    },
    "stddev": {"kind": "stddev", "column": "age", "n_guess": 3000},
    "variance": {"kind": "variance", "column": "age", "group_by": "region", "n_guess": 500},
    "crosstab": {"kind": "crosstab", "columns": ["region", "age"], "way": 2, "total": True},
    "bounds": {"kind": "bounds", "column": "income", "epsilon": "0.5"},
    "keys": {"kind": "keys", "column": "region"},
    "rows_per_person": {"kind": "rows_per_person", "cap": "20"},
}  # fmt: skip

#: one statistic per kind on `write_neighbours`' small file (columns group, value)
AUDIT_STATISTICS: dict[str, dict[str, Any]] = {
    "count": {"kind": "count"},
    "histogram": {"kind": "histogram", "column": "group"},
    "sum": {"kind": "sum", "column": "value"},
    "mean": {"kind": "mean", "column": "value", "n_guess": 300},
    "argmax": {"kind": "argmax", "column": "group"},
    "grouped_sum": {"kind": "grouped_sum", "column": "value", "group_by": "group"},
    "grouped_mean": {
        "kind": "grouped_mean", "column": "value", "group_by": "group", "n_guess": 100,
    },
    "quantiles": {"kind": "quantiles", "column": "value", "quantiles": "0.5", "step": "10"},
    "stddev": {"kind": "stddev", "column": "value", "n_guess": 300},
    "variance": {"kind": "variance", "column": "value", "group_by": "group", "n_guess": 100},
    # the person's cell ("a") of the one-column table comes first
    "crosstab": {"kind": "crosstab", "columns": ["group"], "way": 1},
    "bounds": {"kind": "bounds", "column": "value", "ends": "upper"},
    # the person holds one key ("a"), counted once however many of their rows hold it
    "keys": {"kind": "keys", "column": "group", "keys_per_person": 1},
    # the added person has 2 rows: one more person in bucket "2"
    "rows_per_person": {"kind": "rows_per_person", "cap": "4"},
}  # fmt: skip

MECHANISMS = ("laplace", "gaussian")
DELTA = "1e-7"  # the Gaussian releases' delta


def kinds_under(mechanism: str) -> tuple[str, ...]:
    """The kinds a release of `mechanism` can hold (a cross-tabulation is Gaussian only)."""
    return tuple(k for k in KINDS if not kinds.get(k).mechanism_problem(mechanism))


def skip_if_refused(kind: str, mechanism: str) -> None:
    """A kind the mechanism cannot draw has no release to test under it."""
    if kinds.get(kind).mechanism_problem(mechanism):
        pytest.skip(f"{kind} is not drawn under the {mechanism} mechanism")


def statistic_for(table: dict[str, dict[str, Any]], kind: str) -> dict[str, Any]:
    """The table's statistic of `kind`; a kind without one fails its test by name."""
    if kind not in table:
        pytest.fail(f"statistic kind {kind!r} has no case in tests/kinds_support.py")
    return dict(table[kind])


@dataclass(frozen=True)
class Truth:
    """One statistic's frozen spec entry, its TRUE aggregate (test memory only) and context."""

    entry: dict[str, Any]
    aggregate: Any
    axes: list
    mechanism: str
    confidence: str
    contribution_bound: int

    def noisy(self, rng: RandomSource, *, contribution_bound: int | None = None) -> dict:
        """One public result entry, exactly as the compute task makes it (dp.noisy_entry)."""
        bound = self.contribution_bound if contribution_bound is None else contribution_bound
        return dp.noisy_entry(
            entry=self.entry, aggregate=self.aggregate, mechanism=self.mechanism,
            confidence=self.confidence, contribution_bound=bound, cells=self.axes, rng=rng,
        )  # fmt: skip

    def draws(self, runs: int, rng: RandomSource) -> list[dict]:
        return [self.noisy(rng) for _ in range(runs)]

    @property
    def granularity(self) -> Fraction:
        """The spec's public grid (a sum's, a mean's sum part's, a spread's), 1 if none."""
        return Fraction(str(self.entry.get("granularity") or "1"))


def truths_of(
    *, project, owner, reviewer, dataset, statistics, mechanism, epsilon="1"
) -> list[Truth]:
    """Draft, submit, approve and claim a release of `statistics`, each held at its own
    "epsilon" or `epsilon`;
    aggregate it once for real. Returns one Truth per statistic, in order.
    """
    statistics = [{"epsilon": epsilon, **s, "hold": True} for s in statistics]
    total = sum(Decimal(s["epsilon"]) for s in statistics)
    data = {
        "title": "Kinds", "dataset": dataset.pk, "mechanism": mechanism, "confidence": "0.95",
        "epsilon": str(total), "statistics": statistics,
    }  # fmt: skip
    if mechanism == "gaussian":
        data["delta"] = DELTA
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    release = compute.release_claim(release_id=release.pk)
    aggregates = compute.release_aggregate(release=release)
    spec = release.spec
    return [
        Truth(
            entry=entry,
            aggregate=aggregate,
            axes=StatisticReader.from_spec(entry).axes,
            mechanism=spec["mechanism"],
            confidence=spec["confidence"],
            contribution_bound=spec["privacy_unit"]["contribution_bound"],
        )  # fmt: skip
        for entry, aggregate in zip(spec["statistics"], aggregates, strict=False)
    ]


def memoize_public_math(monkeypatch) -> None:
    """Memoize two pure functions of public parameters that noisy_entry calls on every
    draw: the Gaussian calibration (calibration.gaussian_sigma, ~20 ms a call, where the
    noise specs call it) and the noise half-widths (accuracy.noise_halfwidth). The very
    same values come back, computed once per set of parameters instead of per draw."""
    memoized = functools.lru_cache(calibration.gaussian_sigma)
    monkeypatch.setattr(noise, "gaussian_sigma", memoized)
    monkeypatch.setattr(marginals, "gaussian_sigma", memoized)  # a cross-tabulation's
    monkeypatch.setattr(accuracy, "noise_halfwidth", functools.lru_cache(accuracy.noise_halfwidth))


def raise_caps(project) -> None:
    """Room for many releases: the tests charge nothing (they never finalize)."""
    project.epsilon_cap = Decimal(1000)
    project.delta_cap = Decimal("0.01")
    project.save()


# --- what a published entry states ---------------------------------------------------------


@dataclass(frozen=True)
class StatedNoise:
    """One noise draw as published: its distribution and parameter in value units."""

    distribution: str  # "discrete_laplace" or "discrete_gaussian"
    parameter: float  # scale b or sigma, value units


def stated_noise(entry: dict[str, Any]) -> dict[str, StatedNoise]:
    """The published noise of a result entry, by part ("" for a single draw; "sum",
    "count", "squares" for a mean, a grouped mean and a spread), in value units."""
    facts = noise_data.noise(entry["explanation"], kind=entry["kind"])
    parts = {p: facts[p] for p in ("sum", "count", "squares") if isinstance(facts.get(p), dict)}
    if not parts:
        parts = {"": facts}
    return {
        name: StatedNoise(distribution=part["distribution"], parameter=float(part["value"]))
        for name, part in parts.items()
    }


# --- the audit's neighbouring datasets ---------------------------------------------------

GROUPS = ["a", "b", "c"]
BOUND = 2  # rows per person (L)
AUDIT_LOWER, AUDIT_UPPER = 0, 100


def write_neighbours(*, project, owner, name: str, with_person: bool) -> Dataset:
    """D: 300 people with one row each, 100 per group, values 5, 15, ..., 95 (10 of each
    in each group); D' (with_person): D plus one person with L = 2 rows in group "a" at
    the upper bound, the worst case for every kind here (both rows in one cell, at the
    largest |value|; the group counts tie, so the argmax is as sensitive as it gets)."""
    people = [f"p{i}" for i in range(300)]
    groups = [GROUPS[i % 3] for i in range(300)]
    values = [5.0 + 10 * ((i // 3) % 10) for i in range(300)]
    if with_person:
        people += ["x", "x"]
        groups += ["a", "a"]
        values += [float(AUDIT_UPPER)] * 2
    table = pa.table({"person": people, "group": groups, "value": values})
    relative = f"datasets/{name}-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    dataset = Dataset.objects.create(
        project=project, name=name, uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, id_column="person", contribution_bound=BOUND,
        declared=True, unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="person", position=0, suggested_type="string", kind="excluded"
    )
    Column.objects.create(
        dataset=dataset, name="group", position=1, suggested_type="string",
        kind="categorical", categories=GROUPS, missing="drop",
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="value", position=2, suggested_type="float", kind="numeric",
        lower=Decimal(AUDIT_LOWER), upper=Decimal(AUDIT_UPPER), bin_edges=[0, 25, 50, 75, 100],
    )  # fmt: skip
    return dataset


def as_float(value: Any) -> float:
    return float(Decimal(value)) if isinstance(value, str) else float(value)
