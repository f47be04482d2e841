"""datasets.services.dataset_declare and dataset_delete."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import Column, Dataset
from datasets.selectors import dataset_get_for_member, dataset_is_usable
from datasets.services import dataset_create, dataset_declare, dataset_delete, dataset_ingest
from dpportal.errors import InvalidTransition, NotFound, PermissionDenied, ValidationFailed
from releases.models import Release
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CSV = b"person,age,sex,income,score\n1,34,female,52000.5,3\n2,51,male,61000,4\n2,51,male,,5\n"

VALID = {
    "person": {"kind": "excluded"},
    "age": {"kind": "numeric", "lower": "18", "upper": "90", "bin_edges": "18, 40, 65, 90"},
    "sex": {"kind": "categorical", "categories": "female\nmale\n", "missing": "category"},
    "income": {"kind": "numeric", "lower": "0", "upper": "200000.50"},
    "score": {"kind": "categorical", "categories": ["1", "2", "03", "4", "5"]},
}


@pytest.fixture
def dataset(project, owner):
    dataset = dataset_create(
        project=project,
        name="survey",
        uploaded_file=SimpleUploadedFile("s.csv", CSV),
        uploaded_by=owner,
        dispatch=False,
    )
    return dataset_ingest(dataset_id=dataset.pk)


def declared_state(dataset):
    return list(
        dataset.columns.order_by("position").values_list(
            "kind", "categories", "lower", "upper", "bin_edges", "missing"
        )
    )


def test_valid_declaration_saves_every_column_and_the_unit(dataset, owner):
    assert not dataset_is_usable(dataset=dataset)
    dataset = dataset_declare(
        dataset=dataset,
        actor=owner,
        columns=VALID,
        id_column="person",
        contribution_bound="2",
        unit="person",
    )
    assert dataset.declared and dataset_is_usable(dataset=dataset)
    assert (dataset.id_column, dataset.contribution_bound) == ("person", 2)
    assert dataset.unit_confirmed_by == owner and dataset.unit_confirmed_at is not None
    cols = {c.name: c for c in dataset.columns.all()}
    assert cols["person"].kind == Column.Kind.EXCLUDED
    assert (cols["age"].lower, cols["age"].upper) == (Decimal(18), Decimal(90))
    assert cols["age"].bin_edges == ["18", "40", "65", "90"]
    assert cols["sex"].categories == ["female", "male"]
    assert cols["sex"].missing == Column.Missing.CATEGORY
    assert cols["income"].upper == Decimal("200000.50")
    assert cols["score"].categories == ["1", "2", "3", "4", "5"]  # integer column: normalized


def test_row_unit_ignores_the_bound(dataset, owner):
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID, contribution_bound="7")
    assert (dataset.id_column, dataset.contribution_bound) == ("", 1)


def test_one_bad_column_saves_nothing(dataset, owner):
    before = declared_state(dataset)
    bad = {**VALID, "age": {"kind": "numeric", "lower": "90", "upper": "18"}}
    with pytest.raises(ValidationFailed, match="nothing was saved") as caught:
        dataset_declare(dataset=dataset, actor=owner, columns=bad, id_column="person")
    assert caught.value.extra["errors"] == {
        "age": ["the lower bound must be below the upper bound."]
    }
    assert declared_state(dataset) == before
    dataset.refresh_from_db()
    assert not dataset.declared and dataset.id_column == ""


@pytest.mark.parametrize(
    ("column", "spec", "message"),
    [
        ("age", {}, "choose categorical, numeric, date or excluded."),
        ("age", {"kind": "numeric", "upper": "9"}, "the lower bound is required."),
        (
            "age",
            {"kind": "numeric", "lower": "x", "upper": "9"},
            "the lower bound must be a number.",
        ),
        (
            "age",
            {"kind": "numeric", "lower": "0", "upper": "inf"},
            "the upper bound must be a finite number.",
        ),
        (
            "age",
            {"kind": "numeric", "lower": "0", "upper": "1e30"},
            "the upper bound must be below 10^20 with at most 10 decimal places.",
        ),
        (
            "age",
            {"kind": "numeric", "lower": "0", "upper": "90", "bin_edges": "0, 50, 40"},
            "bin edges must be strictly increasing.",
        ),
        (
            "age",
            {"kind": "numeric", "lower": "0", "upper": "90", "bin_edges": "0, 50, 100"},
            "bin edges must lie within [lower, upper].",
        ),
        (
            "age",
            {"kind": "numeric", "lower": "0", "upper": "90", "bin_edges": "10"},
            "give at least two bin edges, or none.",
        ),
        (
            "sex",
            {"kind": "numeric", "lower": "0", "upper": "1"},
            "this column holds text (most of its cells are not numbers): declare it "
            "categorical, date or excluded.",
        ),
        (
            "income",
            {"kind": "categorical", "categories": "1"},
            "this column holds decimal numbers: declare it numeric (with bin edges) instead.",
        ),
        (
            "sex",
            {"kind": "categorical", "categories": "\n \n"},
            "list at least one category, one per line.",
        ),
        (
            "sex",
            {"kind": "categorical", "categories": "f\nm\nf"},
            "categories are listed twice: f.",
        ),
        (
            "score",
            {"kind": "categorical", "categories": "1\nthree"},
            "category 'three' is not a whole number.",
        ),
        (
            "sex",
            {"kind": "categorical", "categories": "f", "missing": "guess"},
            "choose what happens to missing values.",
        ),
    ],
)
def test_invalid_column_declarations(dataset, owner, column, spec, message):
    with pytest.raises(ValidationFailed) as caught:
        dataset_declare(dataset=dataset, actor=owner, columns={**VALID, column: spec})
    assert caught.value.extra["errors"] == {column: [message]}
    assert not Dataset.objects.get(pk=dataset.pk).declared


@pytest.mark.parametrize(
    ("id_column", "bound", "message"),
    [
        ("nobody", "1", "the ID column must be one of the dataset's columns."),
        ("age", "1", "declare the ID column 'age' excluded: its values are never published."),
        ("person", "0", "rows kept per person must be a whole number from 1 to 10000."),
        ("person", "two", "rows kept per person must be a whole number from 1 to 10000."),
    ],
)
def test_invalid_privacy_unit(dataset, owner, id_column, bound, message):
    with pytest.raises(ValidationFailed) as caught:
        dataset_declare(
            dataset=dataset, actor=owner, columns=VALID, id_column=id_column,
            contribution_bound=bound,
        )  # fmt: skip
    assert caught.value.extra["errors"] == {"__all__": [message]}


def test_reviewer_cannot_declare(dataset, reviewer):
    with pytest.raises(PermissionDenied):
        dataset_declare(dataset=dataset, actor=reviewer, columns=VALID)


def test_only_a_ready_dataset_can_be_declared(project, owner):
    dataset = dataset_create(
        project=project, name="x", uploaded_file=SimpleUploadedFile("x.csv", CSV),
        uploaded_by=owner, dispatch=False,
    )  # fmt: skip
    with pytest.raises(InvalidTransition, match="Only a ready dataset"):
        dataset_declare(dataset=dataset, actor=owner, columns=VALID)


def test_declaration_stays_editable_while_releases_are_drafts_then_freezes(dataset, owner, project):
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID)
    release = Release.objects.create(
        project=project, dataset=dataset, title="r", created_by=owner, epsilon=Decimal("0.5")
    )
    changed = {**VALID, "sex": {"kind": "excluded"}}
    dataset_declare(dataset=dataset, actor=owner, columns=changed)
    assert dataset.columns.get(name="sex").kind == Column.Kind.EXCLUDED
    release.status = Release.Status.SUBMITTED
    release.save()
    with pytest.raises(InvalidTransition, match="frozen"):
        dataset_declare(dataset=dataset, actor=owner, columns=VALID)
    assert dataset.columns.get(name="sex").kind == Column.Kind.EXCLUDED


def test_delete_removes_the_row_and_the_files(dataset, owner, django_capture_on_commit_callbacks):
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(dataset.pk)
    # the raw upload went once ingested; the Parquet is what remains
    assert (folder / "data.parquet").exists() and not (folder / "source.csv").exists()
    with django_capture_on_commit_callbacks(execute=True):
        dataset_delete(dataset=dataset, actor=owner)
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert not folder.exists()


def test_delete_is_refused_for_reviewers_and_when_a_release_uses_it(dataset, owner, reviewer):
    with pytest.raises(PermissionDenied):
        dataset_delete(dataset=dataset, actor=reviewer)
    Release.objects.create(
        project=dataset.project, dataset=dataset, title="r", created_by=owner,
        epsilon=Decimal("0.5"),
    )  # fmt: skip
    with pytest.raises(InvalidTransition, match="used by releases"):
        dataset_delete(dataset=dataset, actor=owner)
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    assert (Path(settings.MEDIA_ROOT) / dataset.parquet_file).exists()


def test_get_for_member(dataset, owner, reviewer):
    assert dataset_get_for_member(dataset_id=dataset.pk, user=owner) == dataset
    assert dataset_get_for_member(dataset_id=dataset.pk, user=reviewer) == dataset
    with pytest.raises(PermissionDenied):
        dataset_get_for_member(dataset_id=dataset.pk, user=reviewer, roles={"owner"})
    with pytest.raises(NotFound):
        dataset_get_for_member(dataset_id=dataset.pk, user=UserFactory(username="stranger"))
    with pytest.raises(NotFound):
        dataset_get_for_member(dataset_id=dataset.pk + 999, user=owner)
