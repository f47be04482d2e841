"""The compute service in-process: noisy results, one charge, idempotent deliveries."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from budgets.models import LedgerEntry
from releases import compute, lifecycle
from releases.models import Release, ReleaseResult
from releases.tasks import release_compute_task
from tests.releases_support import make_dataset, submitted, true_values


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=5000)


@pytest.fixture
def queued(project, owner, reviewer, dataset):
    release = submitted(project=project, owner=owner, dataset=dataset)
    return lifecycle.release_approve(release=release, reviewer=reviewer)


def ledger_kinds(release):
    return list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


@pytest.mark.django_db
def test_compute_stores_noisy_results_and_charges_once(queued, dataset):
    assert compute.release_compute(release_id=queued.pk) == "computed"
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "computed"
    assert release.progress == 1.0
    assert ledger_kinds(release) == ["reserve", "charge"]
    payload = ReleaseResult.objects.get(release=release).payload
    truth = true_values(dataset)
    stats = payload["statistics"]
    assert [s["kind"] for s in stats] == [
        "count",
        "count",
        "histogram",
        "histogram",
        "sum",
        "mean",
        "argmax",
    ]
    noisy = [stats[0]["values"][0], stats[1]["values"][0], *stats[2]["values"]]
    exact = [truth["count"], truth["south"], *truth["region_hist"]]
    assert noisy != exact  # noise was added (all equal has probability ~0)
    assert stats[2]["cells"] == ["north", "south", "east", "west", "Other", "Missing"]
    assert stats[3]["shape"] == [6, 4]
    assert len(stats[3]["values"]) == 24
    assert stats[6]["values"] == [] and stats[6]["argmax"]["label"] in stats[6]["cells"]
    # values are close to the truth (the scale is small at these epsilons)
    assert abs(noisy[0] - truth["count"]) < 500
    assert abs(float(stats[4]["values"][0]) - truth["income_sum"]) < 150000 * 200
    assert 0 <= stats[5]["values"][0] <= 100


@pytest.mark.django_db
def test_second_run_is_a_no_op_and_values_never_change(queued):
    assert compute.release_compute(release_id=queued.pk) == "computed"
    first = ReleaseResult.objects.get(release_id=queued.pk).payload
    assert compute.release_compute(release_id=queued.pk) == "done"
    release_compute_task.apply(args=[queued.pk])
    assert ReleaseResult.objects.filter(release_id=queued.pk).count() == 1
    assert ReleaseResult.objects.get(release_id=queued.pk).payload == first
    assert ledger_kinds(queued) == ["reserve", "charge"]


@pytest.mark.django_db
def test_error_after_commit_is_retried_as_a_no_op(queued, monkeypatch, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("after_commit")
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    result = release_compute_task.apply(args=[queued.pk])  # eager: retries run inline
    assert result.successful()
    assert not fail.exists()  # the failure was injected
    assert Release.objects.get(pk=queued.pk).status == "computed"
    assert ReleaseResult.objects.filter(release_id=queued.pk).count() == 1
    assert ledger_kinds(queued) == ["reserve", "charge"]


@pytest.mark.django_db
def test_error_before_commit_leaves_nothing_then_retry_computes(queued, monkeypatch, tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("before_commit")
    monkeypatch.setenv("DPPORTAL_TEST_FAIL_FILE", str(fail))
    with pytest.raises(RuntimeError):
        compute.release_compute(release_id=queued.pk)
    assert not ReleaseResult.objects.filter(release_id=queued.pk).exists()
    assert ledger_kinds(queued) == ["reserve"]
    assert Release.objects.get(pk=queued.pk).status == "computing"
    assert compute.release_compute(release_id=queued.pk) == "computed"
    assert ledger_kinds(queued) == ["reserve", "charge"]


@pytest.mark.django_db
def test_retries_exhausted_fail_the_release_and_release_the_reservation(queued, settings):
    settings.MEDIA_ROOT = settings.MEDIA_ROOT / "elsewhere"  # the file is gone
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert "reserved budget was returned" in release.failure_reason
    assert ledger_kinds(release) == ["reserve", "release"]
    assert not ReleaseResult.objects.filter(release_id=queued.pk).exists()


@pytest.mark.django_db
def test_changed_domain_after_approval_is_refused(queued, dataset):
    column = dataset.columns.get(name="region")
    column.categories = ["north", "south"]
    column.save()
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert "declared domains changed" in release.failure_reason
    assert ledger_kinds(release) == ["reserve", "release"]


@pytest.mark.django_db
def test_changed_stored_spec_is_refused(queued):
    Release.objects.filter(pk=queued.pk).update(spec={**queued.spec, "epsilon": "5"})
    release_compute_task.apply(args=[queued.pk])
    release = Release.objects.get(pk=queued.pk)
    assert release.status == "failed"
    assert "does not match its approval" in release.failure_reason


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_store_one_result(project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=20000)
    release = submitted(project=project, owner=owner, dataset=dataset)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    barrier = threading.Barrier(4)
    outcomes = []

    def run():
        barrier.wait()
        try:
            outcomes.append(compute.release_compute(release_id=release.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("computed") == 1
    assert ReleaseResult.objects.filter(release_id=release.pk).count() == 1
    assert ledger_kinds(release) == ["reserve", "charge"]


@pytest.mark.django_db
def test_privacy_unit_keeps_at_most_L_rows_per_person(project, owner, reviewer):
    dataset = make_dataset(
        project=project, owner=owner, rows=6000, people=500, id_column="person", bound=2
    )
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(compute.dataset_path({"parquet_file": dataset.parquet_file}))
    mask = compute.keep_mask(parquet, id_column="person", bound=2)
    path = compute.dataset_path({"parquet_file": dataset.parquet_file})
    ids = pq.read_table(path, columns=["person"]).column(0).to_pylist()
    kept = {}
    for pid, keep in zip(ids, mask, strict=True):
        kept[pid] = kept.get(pid, 0) + int(keep)
    assert max(kept.values()) == 2
    assert all(v == min(2, ids.count(p)) for p, v in list(kept.items())[:50])
    # a second draw keeps a different subset (chosen with the CSPRNG)
    assert (compute.keep_mask(parquet, id_column="person", bound=2) != mask).any()
