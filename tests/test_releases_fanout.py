"""Sealing partial aggregates (Fernet) and the failure rule shared by the fan-out parts."""

from __future__ import annotations

import json

import pytest

from budgets.models import LedgerEntry
from releases import compute, fanout, lifecycle
from releases.models import Release, ReleaseEvent, ReleaseResult
from tests.releases_support import make_dataset, submitted

PARTIAL = [[123457, 98765], 4242, [1, 2, 3, 987654]]


def test_seal_round_trip_hides_the_values_and_is_fresh_each_time():
    key = fanout.new_key()
    token = fanout.seal(PARTIAL, key=key, part_id="a")
    assert fanout.unseal(token, key=key, part_id="a") == PARTIAL
    assert "987654" not in token and "4242" not in token
    assert fanout.seal(PARTIAL, key=key, part_id="a") != token  # a fresh IV per seal
    assert fanout.new_key() != key


def test_unseal_refuses_tampering_another_key_and_another_part():
    key = fanout.new_key()
    token = fanout.seal(PARTIAL, key=key, part_id="a")
    flipped = token[:40] + ("A" if token[40] != "A" else "B") + token[41:]
    with pytest.raises(ValueError, match="integrity"):
        fanout.unseal(flipped, key=key, part_id="a")
    with pytest.raises(ValueError, match="integrity"):
        fanout.unseal(token, key=fanout.new_key(), part_id="a")
    with pytest.raises(ValueError, match="another part"):
        fanout.unseal(token, key=key, part_id="b")


def test_a_token_is_not_json_of_the_values():
    token = fanout.seal(PARTIAL, key=fanout.new_key(), part_id="a")
    with pytest.raises(ValueError):
        json.loads(token)


def ledger_kinds(release) -> list[str]:
    return list(
        LedgerEntry.objects.filter(request_id=release.budget_request_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


@pytest.mark.django_db
def test_release_fail_is_a_no_op_once_results_are_stored(project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    payload = ReleaseResult.objects.get(release=release).payload
    assert lifecycle.release_fail(release_id=release.pk, reason="a late part failed") is None
    release.refresh_from_db()
    assert release.status == "computed" and release.failure_reason == ""
    assert ledger_kinds(release) == ["reserve", "charge"]
    assert ReleaseResult.objects.get(release=release).payload == payload
    assert not ReleaseEvent.objects.filter(release=release, to_status="failed").exists()


@pytest.mark.django_db
def test_release_fail_twice_fails_once_and_releases_once(project, owner, reviewer):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    release = submitted(project=project, owner=owner, dataset=dataset)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_claim(release_id=release.pk) is not None  # computing
    assert lifecycle.release_fail(release_id=release.pk, reason="part 1 failed") is not None
    assert lifecycle.release_fail(release_id=release.pk, reason="part 2 failed") is None
    release = Release.objects.get(pk=release.pk)
    assert release.status == "failed" and release.failure_reason == "part 1 failed"
    assert ledger_kinds(release) == ["reserve", "release"]
    assert ReleaseEvent.objects.filter(release=release, to_status="failed").count() == 1
