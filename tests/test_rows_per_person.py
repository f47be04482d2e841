"""The rows-per-person kind: builder, compute (DuckDB == numpy oracle == Spark), noise."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpportal.errors import ValidationFailed
from dpportal.privacy.rng import SeededTestRandom
from dpportal.privacy.rows_per_person import bucket_index, buckets
from releases import dp, kinds, services
from releases.compute import rows_per_person as compute_rows
from tests.releases_support import make_dataset

KIND = kinds.get("rows_per_person")


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def _spec(cap: int, id_column: str = "person") -> dict:
    return {
        "parquet_file": "d.parquet",
        "privacy_unit": {"id_column": id_column, "contribution_bound": 2},
        "statistics": [_entry(cap)],
    }


def _entry(cap: int, epsilon: str = "1") -> dict:
    return {
        "position": 0, "kind": "rows_per_person", "label": "Rows per person", "columns": [],
        "category": None, "epsilon": epsilon, "delta": "0", "cap": cap,
    }  # fmt: skip


def _write(folder, ids: list, row_group_size: int = 50, type_=pa.string()) -> None:
    pq.write_table(
        pa.table({"person": pa.array(ids, type=type_), "x": list(range(len(ids)))}),
        folder / "d.parquet",
        row_group_size=row_group_size,
    )


def _oracle(ids: list, cap: int) -> list[int]:
    """Independent of the module: a dict of rows per person, then each bucket by its ends."""
    per: dict = {}
    for i in ids:
        if i is not None:
            per[i] = per.get(i, 0) + 1
    out = [0] * len(buckets(cap))
    for n in per.values():
        out[bucket_index(n, cap)] += 1
    return out


def _long_tail(seed: int, persons: int) -> list:
    gen = np.random.default_rng(seed)  # test DATA, not noise
    rows = np.minimum(gen.zipf(1.5, persons), 3000)
    ids: list = [f"p{i}" for i, r in enumerate(rows) for _ in range(int(r))]
    gen.shuffle(ids)
    ids[::97] = [None] * len(ids[::97])  # rows without a person
    return ids


@pytest.mark.parametrize("cap", [1, 16, 50, 1000])
def test_duckdb_equals_the_numpy_reader_and_an_independent_count(media, cap):
    ids = _long_tail(3, 400) + ["heavy"] * 2500
    _write(media, ids)
    expected = _oracle(ids, cap)
    spec = _spec(cap)
    got = compute_rows.persons_duckdb(spec, spec["statistics"][0])
    numpy = compute_rows.persons_numpy(pq.ParquetFile(media / "d.parquet"), id_column="person",
                                       cap=cap)  # fmt: skip
    assert got.tolist() == numpy.tolist() == expected
    assert got.sum() == len({i for i in ids if i is not None})


def test_integer_ids_and_an_empty_file(media):
    _write(media, [3, 3, 7, None, 3, 9, 9], type_=pa.int64())
    spec = _spec(16)
    assert compute_rows.persons_duckdb(spec, spec["statistics"][0]).tolist()[:4] == [1, 1, 1, 0]
    _write(media, [None, None])
    assert compute_rows.persons_duckdb(spec, spec["statistics"][0]).sum() == 0
    assert compute_rows.persons_numpy(
        pq.ParquetFile(media / "d.parquet"), id_column="person", cap=16
    ).sum() == 0  # fmt: skip


@pytest.mark.spark
def test_spark_equals_duckdb(media, spark):
    ids = _long_tail(4, 300)
    _write(media, ids)
    spec = _spec(100)
    entry = spec["statistics"][0]
    assert (
        compute_rows.persons_spark(spec, entry).tolist()
        == compute_rows.persons_duckdb(spec, entry).tolist()
        == _oracle(ids, 100)
    )


def test_noise_is_discrete_laplace_of_scale_one_over_epsilon_whatever_l():
    """The scale is 1/epsilon at L = 1 and at L = 7 alike: the unit is the person."""
    truth = np.arange(len(buckets(20)), dtype=np.int64)
    entries = [
        dp.noisy_entry(
            entry=_entry(20, "0.5"),
            aggregate=truth,
            mechanism="gaussian",
            confidence="0.95",
            contribution_bound=bound,
            cells=[],
            rng=SeededTestRandom(1),
        )  # fmt: skip
        for bound in (1, 7)
    ]
    for out in entries:
        assert out["explanation"]["scale"] == "2"
        assert out["explanation"]["noise"] == "discrete_laplace"
        assert out["explanation"]["l1_sensitivity"] == "1"
        assert out["cells"][:2] == ["1", "2"] and out["cells"][16:18] == ["17–19", "20"]
        assert out["cells"][-1] == "21+"
        assert all(isinstance(v, int) for v in out["values"])
    assert entries[0]["values"] == entries[1]["values"]  # same seed, same noise
    assert KIND.result_mechanism(entries[0], "gaussian") == "laplace"


def test_tradeoff_and_suggestion_from_a_stored_result():
    truth = np.zeros(len(buckets(4)), dtype=np.int64)
    truth[:4] = [1000, 500, 0, 200]  # persons with 1, 2, 3, 4 rows
    entry = dp.noisy_entry(
        entry=_entry(4, "5"), aggregate=truth, mechanism="laplace", confidence="0.95",
        contribution_bound=1, cells=[], rng=SeededTestRandom(2),
    )  # fmt: skip
    rows = KIND.limit_tradeoff(entry, confidence="0.95")
    assert [r.limit for r in rows] == [1, 2, 3, 4]
    for r in rows:
        assert r.share_low <= r.share <= r.share_high
    assert rows[-1].share == 1  # nobody above the cap: L = 4 keeps every row
    assert KIND.suggestion(rows, Fraction(1, 2)).limit == 1


@pytest.mark.django_db
def test_the_builder_refuses_a_dataset_without_a_person_column(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    data = {
        "title": "R", "dataset": dataset.pk, "mechanism": "laplace", "confidence": "0.95",
        "epsilon": "1", "statistics": [{"kind": "rows_per_person"}],
    }  # fmt: skip
    with pytest.raises(ValidationFailed, match="needs a person column"):
        services.release_save_draft(project=project, actor=owner, data=data)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("cap", "message"),
    [("0", "between 1 and 100000"), ("100001", "between 1 and 100000"), ("ten", "whole number")],
)
def test_the_builder_names_the_cap_limit(project, owner, cap, message):
    dataset = make_dataset(project=project, owner=owner, rows=200, id_column="person", people=50)
    data = {
        "title": "R", "dataset": dataset.pk, "mechanism": "laplace", "confidence": "0.95",
        "epsilon": "1", "statistics": [{"kind": "rows_per_person", "cap": cap}],
    }  # fmt: skip
    with pytest.raises(ValidationFailed, match=message):
        services.release_save_draft(project=project, actor=owner, data=data)


@pytest.mark.django_db
def test_a_draft_keeps_its_cap_and_its_default_label(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=200, id_column="person", people=50)
    data = {
        "title": "R", "dataset": dataset.pk, "mechanism": "laplace", "confidence": "0.95",
        "epsilon": "1", "statistics": [{"kind": "rows_per_person", "cap": "40"}],
    }  # fmt: skip
    release = services.release_save_draft(project=project, actor=owner, data=data)
    (stat,) = release.statistics.all()
    assert (int(stat.upper), stat.label) == (40, "Rows per person")
    again = services.release_form_data(release=release)["statistics"][0]
    assert again["upper"] == "40"


# --- surfaces ------------------------------------------------------------------------------


@pytest.fixture
def computed(project, owner, reviewer):
    from django.core.cache import cache

    from releases import compute, lifecycle
    from tests.releases_support import submitted

    dataset = make_dataset(
        project=project, owner=owner, rows=1500, people=300, id_column="person", bound=3
    )
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="1",
        statistics=[{"kind": "rows_per_person", "cap": "30"}, {"kind": "count"}],
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk, rng=SeededTestRandom(9)) == "computed"
    release.refresh_from_db()
    cache.clear()
    return release


@pytest.mark.django_db
def test_the_owner_sees_the_tradeoff_and_the_suggested_limit(client, computed, owner):
    from django.urls import reverse

    client.force_login(owner)
    url = reverse("releases:detail", args=[computed.pk])
    page = client.get(url).content.decode()
    assert 'id="tradeoff-0"' in page and "Suggest L" in page
    assert "This dataset&#x27;s L is now 3" in page or "This dataset's L is now 3" in page
    declare = reverse("datasets:declare", args=[computed.dataset_id])
    assert f"{declare}?contribution_bound=" in page
    assert 'id="tradeoff-1"' not in page  # the count has no trade-off
    # another share; a share outside (0, 100] is named and the default used
    assert "at least 50 %" in client.get(url, {"share": "50"}).content.decode()
    bad = client.get(url, {"share": "150"}).content.decode()
    assert "at most 100 %" in bad and 'id="tradeoff-0"' in bad


@pytest.mark.django_db
def test_a_reviewer_sees_the_histogram_but_no_tradeoff(client, computed, reviewer):
    from django.urls import reverse

    client.force_login(reviewer)
    page = client.get(reverse("releases:detail", args=[computed.pk])).content.decode()
    assert "17–19" in page and 'id="tradeoff-0"' not in page


@pytest.mark.django_db
def test_the_public_page_shows_the_histogram_with_intervals(client, computed, owner):
    from django.urls import reverse

    from releases import lifecycle

    lifecycle.release_publish(release=computed, actor=owner)
    slug = computed.project.slug
    page = client.get(reverse("public:release", args=[slug, computed.pk])).content.decode()
    assert "Rows per person" in page and "17–19" in page and "31+" in page
    assert "tradeoff" not in page
    data = client.get(reverse("public:release-json", args=[slug, computed.pk])).json()
    entry = next(s for s in data["statistics"] if s["kind"] == "rows_per_person")
    assert entry["cells"][-1]["cell"] == "31+"


@pytest.mark.django_db
def test_the_declaration_page_fills_in_the_chosen_limit(client, computed, owner):
    from django.urls import reverse

    client.force_login(owner)
    url = reverse("datasets:declare", args=[computed.dataset_id])
    page = client.get(url, {"contribution_bound": "7"}).content.decode()
    assert 'value="7"' in page
    computed.dataset.refresh_from_db()
    assert computed.dataset.contribution_bound == 3  # only filled in: not changed


# --- the owner's private check -------------------------------------------------------------


def _check_payload(dataset, statistics) -> str:
    import json

    return json.dumps(
        {
            "title": "C",
            "dataset": dataset.pk,
            "mechanism": "laplace",
            "confidence": "0.95",
            "epsilon": "1",
            "statistics": statistics,
        }  # fmt: skip
    )


@pytest.fixture
def checked(project, owner):
    dataset = make_dataset(
        project=project, owner=owner, rows=2000, people=400, id_column="person", bound=3
    )
    return dataset


def _true_facts(dataset) -> dict:
    from pathlib import Path

    from django.conf import settings

    table = pq.read_table(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    age = [a for a in table.column("age").to_pylist() if a is not None]
    per: dict = {}
    for p in table.column("person").to_pylist():
        if p is not None:
            per[p] = per.get(p, 0) + 1
    counts = sorted(per.values())
    return {
        "below": sum(1 for a in age if a < 10),
        "above": sum(1 for a in age if a > 60),
        "persons": len(counts),
        "max": counts[-1],
        "dropped": sum(max(0, n - 3) for n in counts),
    }


@pytest.mark.django_db
def test_the_owner_gets_the_private_check_in_the_response_only(client, checked, owner, caplog):
    from django.urls import reverse

    from releases.models import Release

    client.force_login(owner)
    url = reverse("releases:private_check", args=[checked.project.slug])
    stats = [{"kind": "sum", "column": "age", "lower": "10", "upper": "60"}, {"kind": "count"}]
    releases_before = Release.objects.count()
    with caplog.at_level("DEBUG"):
        response = client.post(url, _check_payload(checked, stats), content_type="application/json")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    body = response.json()
    assert body["ok"] and body["private"]
    truth = _true_facts(checked)
    (item,) = body["check"]["statistics"]
    assert (item["below"], item["above"]) == (str(truth["below"]), str(truth["above"]))
    persons = body["check"]["persons"]
    assert persons["persons"] == str(truth["persons"]) and persons["max"] == str(truth["max"])
    assert persons["dropped"] == f"{truth['dropped']:,}"
    assert persons["limit"] == "3"
    assert Release.objects.count() == releases_before  # nothing saved
    logged = caplog.text
    for value in (persons["dropped"], persons["persons"], item["below"], item["above"]):
        assert f" {value} " not in logged and f"={value}" not in logged


@pytest.mark.django_db
def test_the_builder_offers_the_private_check_labelled_as_such(client, checked, owner):
    from django.urls import reverse

    client.force_login(owner)
    page = client.get(reverse("releases:new", args=[checked.project.slug])).content.decode()
    assert "Check against the data (private: for you only, never published)" in page
    assert reverse("releases:private_check", args=[checked.project.slug]) in page


@pytest.mark.django_db
def test_no_one_else_gets_the_private_check(client, checked, reviewer):
    from django.urls import reverse

    from tests.factories import UserFactory

    url = reverse("releases:private_check", args=[checked.project.slug])
    payload = _check_payload(checked, [{"kind": "count"}])
    assert client.post(url, payload, content_type="application/json").status_code == 404
    client.force_login(UserFactory(username="stranger"))
    assert client.post(url, payload, content_type="application/json").status_code == 404
    client.force_login(reviewer)
    response = client.post(url, payload, content_type="application/json")
    assert response.status_code == 403 and b"persons" not in response.content
    assert client.get(url).status_code == 405


@pytest.mark.django_db
def test_the_private_check_names_its_row_limit(client, checked, owner, settings):
    from django.urls import reverse

    settings.DPPORTAL_PRIVATE_CHECK_MAX_ROWS = 100
    client.force_login(owner)
    url = reverse("releases:private_check", args=[checked.project.slug])
    response = client.post(
        url, _check_payload(checked, [{"kind": "count"}]), content_type="application/json"
    )
    assert response.status_code == 400
    assert "DPPORTAL_PRIVATE_CHECK_MAX_ROWS" in response.json()["error"]
    assert "100 rows" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("given", "stored"), [({"cap": "25"}, 25), ({"upper": "40"}, 40), ({}, 1000)]
)
def test_the_api_takes_the_cap(project, owner, given, stored):
    from rest_framework.test import APIClient

    dataset = make_dataset(project=project, owner=owner, rows=200, id_column="person", people=50)
    client = APIClient()
    client.force_authenticate(owner)
    body = {
        "title": "R", "dataset": dataset.pk, "mechanism": "laplace", "confidence": "0.95",
        "epsilon": "1", "statistics": [{"kind": "rows_per_person", **given}],
    }  # fmt: skip
    response = client.post(f"/api/v1/projects/{project.slug}/releases/create/", body, format="json")
    assert response.status_code == 201, response.content
    (stat,) = response.json()["statistics"]
    assert stat["kind"] == "rows_per_person" and float(stat["upper"]) == stored


def test_the_private_check_stops_at_its_time_limit(settings):
    """DuckDB is interrupted past DPPORTAL_PRIVATE_CHECK_SECONDS and the refusal names it."""
    from releases import private_check

    settings.DPPORTAL_PRIVATE_CHECK_SECONDS = 0.2
    with pytest.raises(private_check.CheckRefused, match="DPPORTAL_PRIVATE_CHECK_SECONDS"):
        private_check._run("SELECT sum(hash(i)) AS s FROM range(20000000000) AS t(i)")
