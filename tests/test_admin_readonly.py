"""The admin cannot change what is frozen or used: a POST to its change view changes nothing.

Staff see datasets used by a release, their columns, submitted releases, results
and ledger rows, but the change view refuses every write (403) and the row is
unchanged afterwards. A dataset no release uses keeps only its name editable.
"""

from __future__ import annotations

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from budgets.models import LedgerEntry
from datasets.models import Column, Dataset
from releases.models import Release, ReleaseResult
from tests.factories import UserFactory
from tests.public_builders import build_release
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    admin = UserFactory(username="staff-admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def change_url(obj) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])


def state(obj) -> dict:
    obj.refresh_from_db()
    return model_to_dict(obj)


def assert_post_changes_nothing(client, obj, data: dict) -> None:
    before = state(obj)
    assert client.get(change_url(obj)).status_code == 200  # still viewable
    response = client.post(change_url(obj), data)
    assert response.status_code == 403
    assert state(obj) == before


def test_a_used_dataset_and_its_columns_are_read_only(staff, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=50)
    submitted(
        project=project, owner=owner, dataset=dataset, statistics=[{"kind": "count"}], epsilon="0.1"
    )
    assert_post_changes_nothing(
        staff,
        dataset,
        {
            "name": "renamed",
            "id_column": "person",
            "contribution_bound": "50",
            "status": "failed",
            "columns-TOTAL_FORMS": "0",
            "columns-INITIAL_FORMS": "0",
        },
    )
    column = dataset.columns.get(name="region")
    assert_post_changes_nothing(staff, column, {"kind": "excluded", "categories": '["x"]'})
    delete = reverse("admin:datasets_dataset_delete", args=[dataset.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    assert Dataset.objects.filter(pk=dataset.pk).exists()


def test_an_unused_dataset_keeps_its_privacy_fields_read_only(staff, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=50)
    before = state(dataset)
    response = staff.post(
        change_url(dataset),
        {
            "name": "renamed",
            "id_column": "person",
            "contribution_bound": "50",
            "unit_confirmed_at": "",
            "declared": "",
            "status": "failed",
            "compute_backend": "auto",  # an operational choice the admin may still make
            "columns-TOTAL_FORMS": "0",
            "columns-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302
    after = state(dataset)
    assert after["name"] == "renamed"
    assert {k: v for k, v in after.items() if k != "name"} == {
        k: v for k, v in before.items() if k != "name"
    }
    assert Column.objects.filter(dataset=dataset).count() == 5


def test_submitted_releases_results_and_the_ledger_are_read_only(staff, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    assert release.status == Release.Status.PUBLISHED
    assert_post_changes_nothing(
        staff,
        release,
        {
            "title": "Rewritten",
            "description": "Rewritten",
            "statistics-TOTAL_FORMS": "0",
            "statistics-INITIAL_FORMS": "0",
        },
    )
    result = ReleaseResult.objects.get(release=release)
    assert_post_changes_nothing(staff, result, {"payload": "{}"})
    for entry in LedgerEntry.objects.filter(project=project):
        assert_post_changes_nothing(staff, entry, {"epsilon": "0", "delta": "0", "note": "x"})
    assert LedgerEntry.objects.filter(project=project).count() >= 2


def test_a_draft_release_stays_editable(staff, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=50)
    release = Release.objects.create(
        project=project, dataset=dataset, title="Draft", created_by=owner, epsilon="0.1", delta="0"
    )
    response = staff.post(
        change_url(release),
        {
            "title": "Draft 2",
            "description": "",
            "statistics-TOTAL_FORMS": "0",
            "statistics-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    release.refresh_from_db()
    assert release.title == "Draft 2" and release.status == Release.Status.DRAFT
