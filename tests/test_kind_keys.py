"""The categories found in the data: parsing, the aggregate, the noisy entry, every surface.

The compute oracle counts distinct persons per key independently (plain Python over
the Parquet file) and compares with the numpy readers through the real compute path,
with and without a person column, keys_per_person 1 and 3. Keys are data strings:
a key "<script>" must never reach a page unescaped, and a key starting with "=" is
neutralised in data.csv.
"""

from __future__ import annotations

import collections
import csv
import io
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from datasets.models import Column, Dataset
from dpportal.errors import ValidationFailed
from dpportal.privacy.partition_selection import plan_selection
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds, lifecycle, services
from releases.kinds.keys import published_order
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>"


def _keys_dataset(
    *, project, owner, with_person: bool, bound: int = 3, codes: bool = True
) -> Dataset:
    """100 persons: person i holds keys by a fixed pattern, over 1 to 4 rows each; one
    hostile key and one formula key held by many; missing values and a missing code."""
    people, values = [], []
    for i in range(100):
        mine = [f"k{i % 7}", f"k{(i * 3) % 5}", HOSTILE if i % 2 else "=1+1", f"k{i % 4}"]
        for j in range(1 + i % 4):
            people.append(f"p{i}")
            values.append(mine[j])
        people.append(f"p{i}")
        values.append(None if i % 3 else "-9")
    table = pa.table({"person": people, "tag": values})
    relative = f"datasets/keys-{project.pk}-{with_person}-{codes}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=37)  # persons span row groups
    dataset = Dataset.objects.create(
        project=project, name="tags", uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, id_column="person" if with_person else "",
        contribution_bound=bound if with_person else 1, declared=True,
        unit_confirmed_at=timezone.now(), unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="person", position=0, suggested_type="string", kind="excluded"
    )
    Column.objects.create(
        dataset=dataset, name="tag", position=1, suggested_type="string", kind="categorical",
        categories=[], missing_codes=["-9"] if codes else [],
    )  # fmt: skip
    return dataset


def _oracle(dataset: Dataset) -> tuple[dict[str, set[str]], collections.Counter]:
    """Each person's distinct keys (missing and "-9" are not keys) and, rows as persons,
    the rows per key."""
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    held: dict[str, set[str]] = collections.defaultdict(set)
    rows: collections.Counter = collections.Counter()
    for person, value in zip(
        table.column("person").to_pylist(), table.column("tag").to_pylist(), strict=True
    ):
        if value is None or value == "-9":
            continue
        held[person].add(value)
        rows[value] += 1
    return held, rows


def _aggregate(*, project, owner, reviewer, dataset, statistic: dict):
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="1", mechanism="gaussian",
        delta="0.00001", statistics=[statistic],
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    release = compute.release_claim(release_id=release.pk)
    return release, compute.release_aggregate(release=release)[0]


def test_rows_as_persons_count_rows_per_key(project, owner, reviewer):
    dataset = _keys_dataset(project=project, owner=owner, with_person=False)
    _, rows = _oracle(dataset)
    _, got = _aggregate(
        project=project, owner=owner, reviewer=reviewer, dataset=dataset,
        statistic={"kind": "keys", "column": "tag"},
    )  # fmt: skip
    assert got == dict(rows)
    assert "-9" not in got and None not in got


@pytest.mark.parametrize("keys_per_person", [1, 3])
def test_distinct_persons_per_key_each_bounded_to_keys_per_person(
    project, owner, reviewer, keys_per_person
):
    """With a person column every person's rows are within L = 4 here, so the kept rows
    are all of them: each person counts once in a key (not once per row), and in exactly
    min(keys_per_person, their distinct keys) keys."""
    dataset = _keys_dataset(project=project, owner=owner, with_person=True, bound=5)
    held, _ = _oracle(dataset)
    _, got = _aggregate(
        project=project, owner=owner, reviewer=reviewer, dataset=dataset,
        statistic={"kind": "keys", "column": "tag", "keys_per_person": keys_per_person},
    )  # fmt: skip
    assert set(got) <= {k for keys in held.values() for k in keys}
    assert sum(got.values()) == sum(min(keys_per_person, len(k)) for k in held.values())
    for key, count in got.items():
        assert count <= sum(1 for keys in held.values() if key in keys)
    if keys_per_person >= max(len(k) for k in held.values()):
        assert got == dict(collections.Counter(k for keys in held.values() for k in keys))


def test_every_distinct_key_is_counted_when_the_bound_is_large(project, owner, reviewer):
    dataset = _keys_dataset(project=project, owner=owner, with_person=True, bound=5)
    held, _ = _oracle(dataset)
    _, got = _aggregate(
        project=project, owner=owner, reviewer=reviewer, dataset=dataset,
        statistic={"kind": "keys", "column": "tag", "keys_per_person": 4},
    )  # fmt: skip
    assert got == dict(collections.Counter(k for keys in held.values() for k in keys))


def _both_paths(monkeypatch, *, project, owner, reviewer, dataset, statistic):
    """The true aggregate on the plan (DuckDB, one query) and through the numpy readers."""
    from releases.compute import run

    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="1", mechanism="gaussian",
        delta="0.00001", statistics=[statistic],
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    release = compute.release_claim(release_id=release.pk)
    assert run.duckdb_plan(release.spec) is not None
    on_plan = compute.release_aggregate(release=release)[0]
    with monkeypatch.context() as patch:
        patch.setattr(run, "duckdb_plan", lambda spec: None)
        on_numpy = compute.release_aggregate(release=release)[0]
    return on_plan, on_numpy


@pytest.mark.parametrize(
    ("with_person", "keys_per_person"), [(False, 1), (True, 1), (True, 3), (True, 5)]
)
def test_duckdb_and_the_numpy_readers_agree(
    monkeypatch, project, owner, reviewer, with_person, keys_per_person
):
    """Equal where the choice of a person's keys is forced (rows as persons; every key
    counted at 5), else the same totals and each key within its number of holders (the
    engines draw their own random choice)."""
    dataset = _keys_dataset(
        project=project, owner=owner, with_person=with_person, bound=5, codes=False
    )
    statistic = {"kind": "keys", "column": "tag", "keys_per_person": keys_per_person}
    on_plan, on_numpy = _both_paths(
        monkeypatch, project=project, owner=owner, reviewer=reviewer, dataset=dataset,
        statistic=statistic,
    )  # fmt: skip
    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    held: dict[str, set[str]] = collections.defaultdict(set)
    for person, value in zip(
        table.column("person").to_pylist(), table.column("tag").to_pylist(), strict=True
    ):
        if value is not None:
            held[person].add(value)
    if not with_person or keys_per_person == 5:
        assert on_plan == on_numpy
        return
    total = sum(min(keys_per_person, len(k)) for k in held.values())
    assert sum(on_plan.values()) == sum(on_numpy.values()) == total
    for key in set(on_plan) | set(on_numpy):
        holders = sum(1 for keys in held.values() if key in keys)
        assert on_plan.get(key, 0) <= holders and on_numpy.get(key, 0) <= holders


def test_keys_per_person_choice_is_uniform_among_a_persons_keys(project, owner, reviewer):
    """One person with 4 keys at keys_per_person 1: each key chosen about a quarter of the
    time over 400 aggregations (a binomial(400, 1/4) below 40 or above 160 has probability
    below 1e-9 for each key)."""
    relative = f"datasets/one-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"person": ["x"] * 4, "tag": ["a", "b", "c", "d"]}), path)
    from releases.compute.readers_keys import distinct_person_counts

    table = pq.read_table(path)
    seen: collections.Counter = collections.Counter()
    for _ in range(400):
        got = distinct_person_counts(
            table.column("tag").combine_chunks(),
            table.column("person").combine_chunks(),
            keys_per_person=1,
        )
        assert sum(got.values()) == 1
        seen.update(got)
    assert all(40 < seen[k] < 160 for k in "abcd"), seen


# --- planning --------------------------------------------------------------------------


def _data(dataset, statistic, **extra):
    return {
        "title": "Tags", "dataset": dataset.pk, "mechanism": "gaussian", "delta": "0.00001",
        "confidence": "0.95", "epsilon": "1", "statistics": [statistic], **extra,
    }  # fmt: skip


def test_a_laplace_release_refuses_keys_with_a_message(project, owner):
    dataset = _keys_dataset(project=project, owner=owner, with_person=True)
    with pytest.raises(ValidationFailed, match="need a delta above 0"):
        services.release_plan_parse(
            project=project,
            data=_data(dataset, {"kind": "keys", "column": "tag"}, mechanism="laplace"),
        )


@pytest.mark.parametrize(
    ("with_person", "statistic", "message"),
    [
        (True, {"kind": "keys", "column": "tag", "keys_per_person": 4}, "between 1 and"),
        (True, {"kind": "keys", "column": "tag", "keys_per_person": "x"}, "whole number"),
        (False, {"kind": "keys", "column": "tag", "keys_per_person": 2}, "must be 1"),
        (True, {"kind": "keys", "column": "tag", "max_keys": 0}, "most keys"),
        (True, {"kind": "keys", "column": "tag", "max_keys": 10**6}, "most keys"),
        (True, {"kind": "keys", "column": "person"}, "excluded"),
        (True, {"kind": "keys"}, "needs a column"),
    ],
)
def test_bad_parameters_are_refused_with_a_message(project, owner, with_person, statistic, message):
    dataset = _keys_dataset(project=project, owner=owner, with_person=with_person)
    with pytest.raises(ValidationFailed, match=message):
        services.release_plan_parse(project=project, data=_data(dataset, statistic))


def test_a_numeric_column_is_refused(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=100)
    with pytest.raises(ValidationFailed, match="declared categorical"):
        services.release_plan_parse(
            project=project, data=_data(dataset, {"kind": "keys", "column": "age"})
        )


def test_the_preview_states_the_persons_a_key_needs_and_the_half_width(project, owner):
    dataset = _keys_dataset(project=project, owner=owner, with_person=True)
    plan = services.release_plan_parse(
        project=project,
        data=_data(dataset, {"kind": "keys", "column": "tag", "keys_per_person": 2}),
    )
    (stat,) = plan.statistics
    preview = dp.statistic_accuracy(plan=plan, stat=stat)
    selection = plan_selection(
        epsilon=Fraction(stat.epsilon), delta=Fraction(stat.delta), keys_per_person=2,
        with_counts=True,
    )  # fmt: skip
    needed = preview["persons_for_probability"]
    assert needed["0.5"] == selection.count_for_probability(0.5)
    assert needed["0.95"] == selection.count_for_probability(0.95)
    assert needed["0.5"] <= needed["0.95"]
    assert preview["threshold"] == selection.threshold
    assert preview["halfwidth"] > 0
    assert kinds.get("keys").cost(plan=plan, stat=stat).delta == Fraction(stat.delta) > 0


# --- the noisy entry ---------------------------------------------------------------------


def _entry(*, with_counts=True, max_keys=1000):
    return {
        "position": 0, "kind": "keys", "label": "t", "columns": [{"name": "tag"}],
        "category": None, "epsilon": "1", "delta": "0.00001", "keys_per_person": 1,
        "with_counts": with_counts, "max_keys": max_keys,
    }  # fmt: skip


def test_the_entry_holds_keys_by_noisy_count_and_no_true_count():
    truth = {f"k{i}": 1000 + 7 * i for i in range(20)} | {"rare": 1}
    out = dp.noisy_entry(
        entry=_entry(), aggregate=truth, mechanism="gaussian", confidence="0.95",
        contribution_bound=1, cells=[], rng=SeededTestRandom(1),
    )  # fmt: skip
    assert "rare" not in out["cells"]  # far below the threshold (false failure < 1e-9)
    pairs = list(zip(out["values"], out["cells"], strict=True))
    assert pairs == sorted(pairs, key=lambda p: (-p[0], p[1]))
    assert out["values"] != [truth[k] for k in out["cells"]]
    assert "1007" not in str(out["explanation"])
    cells = kinds.get("keys").intervals(out, confidence="0.95")
    assert all(c.low < c.value < c.high for c in cells)


def test_the_cap_keeps_the_largest_counts_or_a_random_choice_of_keys_only():
    truth = {f"k{i:02d}": 1000 * (i + 1) for i in range(30)}
    out = dp.noisy_entry(
        entry=_entry(max_keys=5), aggregate=truth, mechanism="gaussian", confidence="0.95",
        contribution_bound=1, cells=[], rng=SeededTestRandom(2),
    )  # fmt: skip
    assert out["cells"] == ["k29", "k28", "k27", "k26", "k25"]
    assert out["keys"] == {"with_counts": True, "passed": 30, "capped": True, "max_keys": 5}
    chosen = collections.Counter()
    for seed in range(200):
        only = published_order(dict.fromkeys(truth), cap=5, rng=SeededTestRandom(seed))
        assert only == sorted(only) and len(only) == 5
        chosen.update(only)
    # each key is chosen with probability 1/6: 200 draws, expected 33 (binomial tails < 1e-7)
    assert all(5 <= chosen[k] <= 75 for k in truth), chosen


def test_keys_only_publishes_no_value():
    out = dp.noisy_entry(
        entry=_entry(with_counts=False), aggregate={"a": 5000, "b": 4000}, mechanism="gaussian",
        confidence="0.95", contribution_bound=1, cells=[], rng=SeededTestRandom(3),
    )  # fmt: skip
    assert out["cells"] == ["a", "b"] and out["values"] == []
    assert kinds.get("keys").intervals(out, confidence="0.95") == []
    assert kinds.get("keys").noise_parts(out["explanation"]) == []


# --- every surface, with hostile keys ------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["with_counts", "keys_only"])
def published(request, project, owner, reviewer):
    project.epsilon_cap, project.delta_cap = Decimal(10), Decimal("0.01")
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    dataset = _keys_dataset(project=project, owner=owner, with_person=False)
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="1", mechanism="gaussian",
        delta="0.00001",
        statistics=[{"kind": "keys", "column": "tag", "with_counts": request.param}],
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    release.refresh_from_db()
    cache.clear()
    return release


def test_hostile_keys_are_escaped_on_every_page_and_neutralised_in_csv(client, published, owner):
    release = published
    (entry,) = release.result.payload["statistics"]
    assert HOSTILE in entry["cells"] and "=1+1" in entry["cells"]  # 25 rows each
    slug = release.project.slug
    page = client.get(reverse("public:release", args=[slug, release.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert HOSTILE not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body or "\\u003Cscript" in body
    assert "a key&#x27;s absence says nothing certain" in body or "absence says nothing" in body
    data = client.get(reverse("public:release-json", args=[slug, release.pk])).json()
    (stat,) = data["statistics"]
    assert HOSTILE in [c["cell"] if isinstance(c, dict) else c for c in stat["cells"]]
    response = client.get(reverse("public:release-csv", args=[slug, release.pk]))
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    cells = {r.get("cell") for r in rows}
    assert "=1+1" not in cells and "'=1+1" in cells
    client.force_login(owner)
    results = client.get(reverse("releases:detail", args=[release.pk]))
    assert results.status_code == 200
    assert HOSTILE not in results.content.decode()


def test_the_review_states_the_selection_and_release_probabilities(published):
    from releases.review.selectors import review_document_get

    review = review_document_get(budget_request=published.budget_request)
    (stat,) = review.statistics
    assert stat.mechanism == "partition_selection"
    details = {param: text for _, text, param in stat.details}
    assert "threshold" in details["selection"]
    assert "is published with probability 50" in details["release-probability"]
    assert stat.delta == Decimal(published.delta) > 0


# --- declaring the published keys as the column's categories -----------------------------


def _declare(client, user, release, position="0"):
    client.force_login(user)
    return client.post(
        reverse("releases:declare_keys", args=[release.pk]), {"position": position}, follow=True
    )


def test_the_owner_declares_the_published_keys_and_later_statistics_say_so(
    client, published, owner, reviewer
):
    release = published
    (entry,) = release.result.payload["statistics"]
    response = _declare(client, owner, release)
    assert response.status_code == 200
    column = Column.objects.get(dataset=release.dataset, name="tag")
    assert column.categories == entry["cells"]  # the published values, in their order
    assert column.categories_source["release"] == release.pk
    assert column.categories_source["epsilon"] == entry["epsilon"]
    declare_page = client.get(reverse("datasets:declare", args=[release.dataset.pk]))
    assert "found in the data by partition selection" in declare_page.content.decode()
    # a later histogram of the column: its review and its public page name the release
    later = submitted(
        project=release.project, owner=owner, dataset=release.dataset, epsilon="0.5",
        statistics=[{"kind": "histogram", "column": "tag"}],
    )  # fmt: skip
    from releases.review.selectors import review_document_get

    review = review_document_get(budget_request=later.budget_request)
    (stat,) = review.statistics
    assert "Categories published by release «" in stat.columns[0].domain_text
    assert "partition selection at ε = 1" in stat.columns[0].domain_text
    lifecycle.release_approve(release=later, reviewer=reviewer)
    assert compute.release_compute(release_id=later.pk) == "computed"
    later.refresh_from_db()
    lifecycle.release_publish(release=later, actor=owner)
    cache.clear()
    page = client.get(reverse("public:release", args=[release.project.slug, later.pk]))
    body = page.content.decode()
    assert "are those published by release" in body
    assert HOSTILE not in body


def test_a_refused_declaration_changes_nothing(client, published, owner, reviewer):
    release = published
    before = Column.objects.get(dataset=release.dataset, name="tag")
    response = _declare(client, reviewer, release)  # not an owner
    assert response.status_code in (403, 404, 200)
    response = _declare(client, owner, release, position="7")
    assert "no statistic of categories found in the data" in response.content.decode()
    response = _declare(client, owner, release, position="x")
    assert response.status_code == 200
    # a release of the dataset under review: its frozen domain must stay
    submitted(
        project=release.project, owner=owner, dataset=release.dataset, epsilon="0.5",
        statistics=[{"kind": "count"}],
    )  # fmt: skip
    response = _declare(client, owner, release)
    assert "under review or computing" in response.content.decode()
    after = Column.objects.get(dataset=release.dataset, name="tag")
    assert (after.categories, after.categories_source) == (before.categories, {})


def test_the_api_takes_and_states_the_keys_parameters(project, owner):
    from rest_framework.test import APIClient

    dataset = _keys_dataset(project=project, owner=owner, with_person=True)
    api = APIClient()
    api.force_authenticate(owner)
    statistic = {"kind": "keys", "column": "tag", "keys_per_person": 2, "with_counts": False,
                 "max_keys": 50}  # fmt: skip
    created = api.post(
        reverse("api:releases-create", args=[project.slug]),
        _data(dataset, statistic),
        format="json",
    )
    assert created.status_code in (200, 201), created.content
    release_id = created.json().get("id") or created.json()["release"]["id"]
    detail = api.get(reverse("api:releases-detail", kwargs={"release_id": release_id})).json()
    text = str(detail)
    assert "'keys_per_person': 2" in text and "'max_keys': 50" in text
    refused = api.post(
        reverse("api:releases-create", args=[project.slug]),
        _data(dataset, {**statistic, "keys_per_person": 4}),
        format="json",
    )
    assert refused.status_code == 400
    assert "between 1 and the contribution bound L" in json.dumps(refused.json())


def test_a_lone_key_is_never_marked_as_dpportal_s_own_cell(client, project, owner, reviewer):
    """One key found: the column declares no category, so by place it would sit where
    "Other" sits; a key is a key, whatever its place."""
    relative = f"datasets/lone-{project.pk}.parquet"
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"person": ["p"] * 101, "tag": ["solo"] * 100 + ["rare"]}), path)
    dataset = Dataset.objects.create(
        project=project, name="lone", uploaded_by=owner, parquet_file=relative,
        status=Dataset.Status.READY, declared=True, unit_confirmed_at=timezone.now(),
        unit_confirmed_by=owner,
    )  # fmt: skip
    Column.objects.create(
        dataset=dataset, name="person", position=0, suggested_type="string", kind="excluded"
    )
    Column.objects.create(
        dataset=dataset, name="tag", position=1, suggested_type="string", kind="categorical",
        categories=[],
    )  # fmt: skip
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="1", mechanism="gaussian",
        delta="0.00001", statistics=[{"kind": "keys", "column": "tag"}],
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    cache.clear()
    data = client.get(reverse("public:release-json", args=[project.slug, release.pk])).json()
    (stat,) = data["statistics"]
    assert [(c["cell"], c["bucket"]) for c in stat["cells"]] == [("solo", None)]
    client.force_login(owner)
    page = client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    assert 'class="bucket"' not in page
