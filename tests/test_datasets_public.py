"""What the public sees of datasets: only what is public by design, and the unit actually used.

The registry lists a dataset's privacy unit only when the dataset is usable (ready,
declared, unit confirmed) or a published release used it: never a failed upload,
one still ingesting, or one never declared. A public release page describes the
unit frozen in the release, in the project's words and the dataset's.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from datasets.models import Dataset
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


def test_registry_lists_only_published_datasets(client, project, owner, reviewer):
    """Only a dataset some published release used is named: a declared, confirmed one
    with nothing published is still the owner's to reveal."""
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    release.dataset.name = "published-one"
    release.dataset.save()

    def dataset(name, **fields):
        return Dataset.objects.create(project=project, name=name, uploaded_by=owner, **fields)

    dataset("failed-upload", status="failed", failure_reason="bad")
    dataset("still-ingesting", status="ingesting")
    dataset("never-declared", status="ready")
    dataset("unconfirmed", status="ready", declared=True, id_column="pid", contribution_bound=9)
    dataset(
        "usable-unpublished",
        status="ready",
        declared=True,
        id_column="pid",
        contribution_bound=4,
        unit_confirmed_at=release.created_at,
        unit_confirmed_by=owner,
    )
    doc = client.get(f"/registry/{project.slug}.json").json()
    names = [d["name"] for d in doc["privacy_unit"]["datasets"]]
    assert names == ["published-one"]
    page = client.get(reverse("registry:project", args=[project.slug])).content.decode()
    hidden = ("failed-upload", "still-ingesting", "never-declared", "unconfirmed", "usable")
    for name in hidden:
        assert name not in page
    assert "published-one" in page


def release_page(client, release) -> str:
    url = reverse("public:release", args=[release.project.slug, release.pk])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def release_json_unit(client, release) -> str:
    url = reverse("public:release-json", args=[release.project.slug, release.pk])
    return client.get(url).json()["release"]["privacy_unit"]


@pytest.fixture
def published(project, owner, reviewer):
    project.privacy_unit_description = "One participant of the study, with all their years"
    project.save()
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _set_unit(release, *, id_column: str, bound: int, confirmed: bool, owner) -> None:
    dataset = release.dataset
    dataset.id_column, dataset.contribution_bound = id_column, bound
    submitted_at = release.budget_request.requested_at
    dataset.unit_confirmed_at = submitted_at - timedelta(minutes=5) if confirmed else None
    dataset.unit_confirmed_by = owner if confirmed else None
    dataset.save()
    release.spec = {
        **release.spec,
        "privacy_unit": {"id_column": id_column or None, "contribution_bound": bound},
    }
    release.save(update_fields=["spec"])


def test_person_unit_confirmed_is_described_with_its_id_column_and_bound(client, published, owner):
    _set_unit(published, id_column="participant", bound=30, confirmed=True, owner=owner)
    text = release_json_unit(client, published)
    assert text.startswith("One participant of the study, with all their years.")
    assert "one person, identified by the column “participant”" in text
    assert "at most 30 rows per person were used" in text
    assert "not confirmed" not in text and "one row" not in text
    assert "identified by the column “participant”" in release_page(client, published)


def test_row_unit_never_confirmed_says_so_next_to_a_person_level_description(
    client, published, owner
):
    _set_unit(published, id_column="", bound=1, confirmed=False, owner=owner)
    text = release_json_unit(client, published)
    assert "(one row of the dataset)" not in text
    assert "had not confirmed that one row is one privacy unit" in text
    assert "protected less than this description says" in text
    assert "had not confirmed that one row is one privacy unit" in release_page(client, published)


def test_row_unit_confirmed_says_it_was_confirmed(client, published, owner):
    _set_unit(published, id_column="", bound=1, confirmed=True, owner=owner)
    text = release_json_unit(client, published)
    assert "one row of the dataset “survey.csv”, as its owner confirmed" in text


def test_a_confirmation_after_the_release_does_not_count_for_it(client, published, owner):
    _set_unit(published, id_column="participant", bound=30, confirmed=True, owner=owner)
    dataset = published.dataset
    dataset.unit_confirmed_at = published.budget_request.requested_at + timedelta(days=1)
    dataset.save()
    text = release_json_unit(client, published)
    assert "had not confirmed this privacy unit before the release" in text
