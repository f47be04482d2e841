"""The release record: one public document per published release, with a JSON Schema.

A release holding a statistic of every registered kind is computed through the real
compute path (the true aggregates handed to the noise are kept here, in test memory
only) and published, under each mechanism. Its record must follow the schema, carry
no true aggregate, state what the public data states, and give itself away when any
of its fields is changed (record_sha256, spec_sha256). The endpoint answers for a
published release only, under its own project's slug.
"""

from __future__ import annotations

import bisect
import copy
import json
import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse

from budgets.selectors import project_registry
from dpportal import product
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds, lifecycle
from releases.public.data import release_public_data
from releases.public.options import CONFIDENCE_LEVELS
from releases.public.record import (
    STATISTIC_KEYS,
    canonical_sha256,
    public_spec,
    release_record,
)
from tests.factories import MembershipFactory, ProjectFactory
from tests.releases_support import make_dataset, submitted
from tests.test_kinds_facts import STATISTICS

SEED = 20261127  # the noise of the published releases (the fixture `published`)

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "releases/schemas/release-record.schema.json")
    .read_text(encoding="utf-8")
)  # fmt: skip


def validate(document: dict) -> None:
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())


def _drawn_under(mechanism: str) -> list[str]:
    return [name for name in kinds.REGISTRY if not kinds.get(name).mechanism_problem(mechanism)]


def _publish(*, project, owner, reviewer, mechanism: str, statistics: list[dict]):
    dataset = make_dataset(project=project, owner=owner, rows=3000, people=1200, id_column="person")
    extra = {"mechanism": mechanism}
    if mechanism == "gaussian":
        extra["delta"] = "0.00001"
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="5", statistics=statistics,
        **extra,
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    release.refresh_from_db()
    cache.clear()
    return release


@pytest.fixture(params=["laplace", "gaussian"])
def published(request, project, owner, reviewer, monkeypatch):
    """(release of every kind the mechanism draws, the true aggregates handed to the noise)."""
    project.epsilon_cap = Decimal(10)
    project.save(update_fields=["epsilon_cap"])
    truths: list[Any] = []
    noisy_entry = dp.noisy_entry

    def keep_truth(**kwargs):
        # seeded noise: with the CSPRNG a draw of zero (likely at this budget) would now
        # and then publish a true value, legitimately, and fail the leak scan below
        truths.append(copy.deepcopy(kwargs["aggregate"]))
        return noisy_entry(**{**kwargs, "rng": SeededTestRandom(SEED + len(truths))})

    monkeypatch.setattr(dp, "noisy_entry", keep_truth)
    release = _publish(
        project=project, owner=owner, reviewer=reviewer, mechanism=request.param,
        statistics=[dict(STATISTICS[name]) for name in _drawn_under(request.param)],
    )  # fmt: skip
    assert len(truths) == len(_drawn_under(request.param))
    return release, truths


# --- shape ----------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_record_of_every_kind_follows_the_schema_and_the_contract(published):
    release, _ = published
    record = release_record(release)
    validate(record)
    assert [s["kind"] for s in record["statistics"]] == _drawn_under(release.mechanism)
    assert record["record_version"] == 1
    assert record["schema"] == "/schemas/release-record.schema.json"
    assert record["product"] == {"name": "dpportal", "version": product.product_version()}
    assert record["project"] == {"slug": release.project.slug, "name": release.project.name}
    assert record["dataset"] == {"name": release.dataset.name}
    assert record["release"]["id"] == release.pk
    assert record["release"]["title"] == release.title
    assert record["release"]["published_on"] == release.published_at.date().isoformat()
    assert record["release"]["approval"]["role"] == "reviewer"
    assert record["privacy_unit"] == {
        "unit": "person", "id_column": "person", "contribution_bound": 1,
    }  # fmt: skip
    assert record["budget"]["mechanism"] == release.mechanism
    assert Decimal(record["budget"]["epsilon"]) == release.epsilon
    assert Decimal(record["budget"]["delta"]) == release.delta
    assert record["accountant"]["library"] == "dp_accounting"
    assert record["confidence_levels"] == list(CONFIDENCE_LEVELS)
    # the digests as the contract defines them
    assert record["spec_sha256"] == canonical_sha256(record["spec"])
    assert record["spec"] == public_spec(release=release)
    assert record["record_sha256"] == canonical_sha256(
        {k: v for k, v in record.items() if k != "record_sha256"}
    )
    # the record travels as JSON and reads back the same
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_the_record_states_what_the_public_data_states(published):
    """Every statistic keeps data.json's facts (the public data at every level) and adds the
    stored explanation and the frozen domain; the mechanism records are the registry's."""
    release, _ = published
    record = release_record(release)
    data = json.loads(json.dumps(release_public_data(release=release)))
    payload = {int(e["position"]): e for e in release.result.payload["statistics"]}
    frozen = {int(e["position"]): e for e in release.spec["statistics"]}
    for stat, public in zip(record["statistics"], data["statistics"], strict=True):
        for key in STATISTIC_KEYS:
            assert stat[key] == _finite(public[key]), (stat["kind"], key)
        assert stat["explanation"] == payload[stat["position"]]["explanation"]
        for key, value in stat["domain"].items():
            assert frozen[stat["position"]][key] == value
        assert set(stat["intervals"]) == set(CONFIDENCE_LEVELS)
    registry = project_registry(project=release.project)
    (listed,) = [r for r in registry["releases"] if r["id"] == release.pk]
    assert record["mechanism_records"] == listed["mechanisms"]
    # nothing about where the data lives, nor the database's ids of dataset and project
    for private in ("parquet_file", "external", "dataset", "project"):
        assert private not in record["spec"]
    assert release.dataset.parquet_file not in json.dumps(record)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def test_only_the_selections_without_an_exact_record_are_generic(published):
    """The registry's records of every kind: a generic (epsilon, delta) record only for the
    private bounds (AboveThreshold, pure epsilon-DP as a whole) and the categories found in
    the data (partition selection, (epsilon, delta) by its threshold), whose guarantees are
    not those of one discrete Laplace or Gaussian draw; every other kind's noise is recorded
    with its exact parameters (scale, sigma, sensitivity)."""
    release, _ = published
    record = release_record(release)
    generic = sum(
        Fraction(r["epsilon"]) * r["count"]
        for r in record["mechanism_records"]
        if r["kind"] == "generic_eps_delta"
    )
    selections = sum(
        Fraction(s["epsilon"]) for s in record["statistics"] if s["kind"] in ("bounds", "keys")
    )
    assert generic == selections
    gaussian = [r for r in record["mechanism_records"] if r["kind"] == "discrete_gaussian"]
    assert all("sigma" in r for r in gaussian)
    assert (release.mechanism == "gaussian") == bool(gaussian)


# --- no true aggregate ----------------------------------------------------------------------


def _numbers_of(value: Any) -> list[float]:
    """Every number in a true aggregate, whatever its container."""
    if isinstance(value, np.ndarray):
        return [float(x) for x in value.ravel().tolist()]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float | Decimal | Fraction | np.number):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers_of(v)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _numbers_of(v)]
    if hasattr(value, "__dict__"):
        return _numbers_of(vars(value))
    if hasattr(value, "__slots__"):
        return _numbers_of({name: getattr(value, name, None) for name in value.__slots__})
    return []


def _record_numbers(value: Any) -> list[float]:
    """Every number in the record: JSON numbers, and strings that read as a number."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(Fraction(value))] if "/" in value else [float(Decimal(value))]
        except (InvalidOperation, ValueError, ZeroDivisionError):
            return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _record_numbers(v)]
    return [x for v in value for x in _record_numbers(v)]


def _telling(x: float) -> bool:
    """A true number that noise would hit only by a negligible chance: not a small whole
    number (a noisy count equals its true count with a probability of a few percent), nor
    one next to zero (a part's ratio in a unit it was never published in)."""
    return math.isfinite(x) and abs(x) > 1e-6 and not (x == round(x) and abs(x) < 100_000)


def _granularities(value: Any) -> set[Fraction]:
    if isinstance(value, dict):
        found = {Fraction(value["granularity"])} if "granularity" in value else set()
        return found.union(*(_granularities(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_granularities(v) for v in value))
    return set()


def _cells(part: Any) -> list[float] | None:
    numbers = _numbers_of(part)
    return numbers if numbers else None


def _truth_candidates(truth: Any, stat: dict) -> set[float]:
    """The true numbers of one statistic as they could appear in a document: as aggregated
    (grid units), in the data's units (times the grid step, its half, their squares), and
    the ratios of its parts cell by cell (a mean: sum over count)."""
    raw = _numbers_of(truth)
    steps = _granularities([stat["explanation"], stat["domain"]])
    scales = {Fraction(1)} | {f for g in steps if g != 1 for f in (g, g / 2, g * g, g * g / 4)}
    out = {x * float(f) for x in raw for f in scales}
    parts = truth if isinstance(truth, list | tuple) and len(truth) > 1 else []
    cells = [_cells(part) for part in parts]
    for a in cells:
        for b in cells:
            if a is None or b is None or a is b or len(a) != len(b):
                continue
            out |= {x / y * float(f) for x, y in zip(a, b) if y for f in scales}
    return {x for x in out if _telling(x)}


def test_the_record_holds_no_true_aggregate(published):
    release, truths = published
    record = release_record(release)
    published_numbers = _record_numbers(record)
    found = sorted(published_numbers)
    for stat_truth, stat in zip(truths, record["statistics"], strict=True):
        for true in _truth_candidates(stat_truth, stat):
            near = [
                x for x in found[bisect.bisect_left(found, true - abs(true) * 1e-12) :]
                if x <= true + abs(true) * 1e-12
            ]  # fmt: skip
            assert not near, (stat["kind"], true)


def test_the_check_finds_a_true_aggregate_put_in_a_record(published):
    """The scan above is not blind: a true sum slipped into an explanation is found."""
    release, truths = published
    record = release_record(release)
    position = [s["kind"] for s in record["statistics"]].index("sum")
    true = next(x for x in _numbers_of(truths[position]) if _telling(x))
    record["statistics"][position]["explanation"]["leak"] = str(Decimal(true))
    assert any(abs(x - true) <= abs(true) * 1e-12 for x in _record_numbers(record))


# --- a change anywhere shows ----------------------------------------------------------------


def _leaves(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))] or [path]
    return [path]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "0" if value else "x"
    if value is None:
        return 0
    return [*value, 0] if isinstance(value, list) else {**value, "x": 0}


def _set(document: dict, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


def _get(document: Any, path: tuple) -> Any:
    for key in path:
        document = document[key]
    return document


def _detected(document: dict) -> bool:
    """What a reader checks: the record's digest, the spec's digest and the schema."""
    body = {k: v for k, v in document.items() if k != "record_sha256"}
    if canonical_sha256(body) != document.get("record_sha256"):
        return True
    if canonical_sha256(document.get("spec")) != document.get("spec_sha256"):
        return True
    try:
        validate(document)
    except jsonschema.ValidationError:
        return True
    return False


def test_changing_any_leaf_of_the_record_is_detected(published):
    """Every leaf of the record (values, intervals at each level, explanations, domains,
    the spec, the records, each top-level fact and the digests themselves), changed one at
    a time, fails the schema or a digest."""
    release, _ = published
    record = release_record(release)
    assert not _detected(record)
    leaves = _leaves(record)
    assert {path[0] for path in leaves} == set(record)
    for path in leaves:
        changed = copy.deepcopy(record)
        _set(changed, path, _changed(_get(record, path)))
        assert _detected(changed), path
    # a key removed, or one added, is detected as well
    for key in record:
        assert _detected({k: v for k, v in record.items() if k != key}), key
    assert _detected({**record, "extra": 1})


def test_the_record_from_the_pages_cached_levels_is_the_same(published):
    release, _ = published
    one_level = {}

    def public_data_at(level):
        one_level[level] = release_public_data(release=release, levels=(level,))
        return one_level[level]

    assert release_record(release, public_data_at=public_data_at) == release_record(release)
    assert sorted(one_level) == sorted(CONFIDENCE_LEVELS)


def test_a_change_in_the_published_facts_changes_the_record(published):
    release, _ = published
    before = release_record(release)
    release.title = release.title + " (corrected)"
    release.save(update_fields=["title"])
    after = release_record(release)
    assert after["release"]["title"] != before["release"]["title"]
    assert after["record_sha256"] != before["record_sha256"]
    assert after["spec_sha256"] == before["spec_sha256"]


# --- the endpoints ------------------------------------------------------------------------


def test_the_endpoint_serves_the_record_like_data_json(client, published):
    release, _ = published
    url = reverse("public:release-record", args=[release.project.slug, release.pk])
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response["Cache-Control"].startswith("public")
    served = json.loads(response.content)
    assert served == release_record(release)
    validate(served)
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    # the release page links to it
    page = client.get(reverse("public:release", args=[release.project.slug, release.pk]))
    assert url in page.content.decode()
    assert "Release record (JSON)" in page.content.decode()


def test_the_endpoint_is_404_unless_published_and_under_its_own_project(
    client, project, owner, reviewer
):
    project.epsilon_cap = Decimal(10)
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner, rows=500)
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=[{"kind": "count"}]
    )
    url = reverse("public:release-record", args=[project.slug, release.pk])
    assert client.get(url).status_code == 404  # submitted
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    assert client.get(url).status_code == 404  # computed, not published
    client.force_login(owner)
    assert client.get(url).status_code == 404  # not even for its owner
    client.logout()
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    assert client.get(url).status_code == 200
    other = ProjectFactory(created_by=owner)
    MembershipFactory(project=other, user=owner, role="owner")
    elsewhere = reverse("public:release-record", args=[other.slug, release.pk])
    assert client.get(elsewhere).status_code == 404
    missing = reverse("public:release-record", args=[project.slug, release.pk + 1000])
    assert client.get(missing).status_code == 404


def test_the_schema_url_serves_the_schema(client):
    response = client.get("/schemas/release-record.schema.json")
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("public")
    served = json.loads(response.content)
    assert served == SCHEMA
    jsonschema.Draft202012Validator.check_schema(served)
    assert (
        client.get(response.wsgi_request.path, HTTP_IF_NONE_MATCH=response["ETag"]).status_code
        == 304
    )
