"""The privacy unit is a declaration, not a default; data-derived declarations are confirmed.

Through the services, the pages and the API: a dataset whose unit no owner has
confirmed (or with an undeclared column) is refused by the release builder page,
the preview, the draft and submit services and the API, with one clear message.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from datasets.models import Column
from datasets.selectors import dataset_is_usable, dataset_usability_problem
from datasets.services import (
    dataset_confirm_unit,
    dataset_create,
    dataset_declare,
    dataset_ingest,
)
from dpportal.errors import ValidationFailed
from releases import lifecycle, services
from releases.models import Release
from tests.releases_support import builder_data, draft, make_dataset
from tests.test_datasets_declare import CSV, VALID

pytestmark = pytest.mark.django_db

V1 = "/api/v1"
UNCONFIRMED = "must confirm its privacy unit"


def api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def dataset(project, owner):
    dataset = dataset_create(
        project=project,
        name="survey",
        uploaded_by=owner,
        dispatch=False,
        uploaded_file=SimpleUploadedFile("s.csv", CSV),
    )
    return dataset_ingest(dataset_id=dataset.pk)


# --- the service ------------------------------------------------------------------------


def test_declaring_without_choosing_the_unit_leaves_it_unconfirmed(dataset, owner):
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=VALID, id_column="person", contribution_bound=2
    )
    assert dataset.declared and dataset.unit_confirmed_at is None
    assert not dataset_is_usable(dataset=dataset)
    assert UNCONFIRMED in dataset_usability_problem(dataset=dataset)


def test_choosing_the_unit_confirms_it_and_changing_it_withdraws_the_confirmation(dataset, owner):
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    assert dataset.unit_confirmed_by == owner and dataset_is_usable(dataset=dataset)
    # the same unit again, without a choice: the confirmation stands
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID)
    assert dataset.unit_confirmed_at is not None
    # another unit, without a choice: no longer confirmed
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=VALID, id_column="person", contribution_bound=3
    )
    assert dataset.unit_confirmed_at is None and not dataset_is_usable(dataset=dataset)


@pytest.mark.parametrize(
    ("unit", "id_column", "message"),
    [
        ("row", "person", "no ID column may be named"),
        ("person", "", "name the ID column"),
        ("household", "", "choose the privacy unit"),
    ],
)
def test_a_unit_choice_that_contradicts_itself_is_refused(dataset, owner, unit, id_column, message):
    with pytest.raises(ValidationFailed) as caught:
        dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit=unit, id_column=id_column)
    assert any(message in m for m in caught.value.extra["errors"]["__all__"])
    dataset.refresh_from_db()
    assert not dataset.declared and dataset.unit_confirmed_at is None


def test_confirming_the_current_unit_even_when_frozen(dataset, owner, project):
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=VALID, id_column="person", contribution_bound=2
    )
    with pytest.raises(ValidationFailed, match="not the dataset's declared privacy unit"):
        dataset_confirm_unit(dataset=dataset, actor=owner, unit="row")
    with pytest.raises(ValidationFailed, match="not the dataset's declared privacy unit"):
        dataset_confirm_unit(
            dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=3
        )
    dataset.refresh_from_db()
    assert dataset.unit_confirmed_at is None
    Release.objects.create(  # frozen, as for a release from before confirmations
        project=project,
        dataset=dataset,
        title="t",
        created_by=owner,
        status="submitted",
        epsilon="0.1",
        delta="0",
    )  # frozen, as for an old release
    dataset = dataset_confirm_unit(
        dataset=dataset, actor=owner, unit="person", id_column="person", contribution_bound=2
    )
    assert dataset.unit_confirmed_by == owner and dataset_is_usable(dataset=dataset)


def test_exclude_the_rest(dataset, owner):
    only = {"age": VALID["age"], "sex": VALID["sex"]}
    with pytest.raises(ValidationFailed):
        dataset_declare(dataset=dataset, actor=owner, columns=only, unit="row")
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=only, unit="row", exclude_rest=True
    )
    kinds = dict(dataset.columns.values_list("name", "kind"))
    assert kinds == {
        "person": "excluded",
        "age": "numeric",
        "sex": "categorical",
        "income": "excluded",
        "score": "excluded",
    }
    assert dataset_is_usable(dataset=dataset)


def test_an_undeclared_column_makes_the_dataset_unusable(dataset, owner):
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    Column.objects.filter(dataset=dataset, name="score").update(kind=Column.Kind.UNDECLARED)
    assert "declare every column (not yet: “score”)" in dataset_usability_problem(dataset=dataset)


def test_data_derived_parts_need_the_columns_confirmation(dataset, owner):
    marked = {**VALID, "sex": {**VALID["sex"], "derived_from_data": ["categories"]}}
    with pytest.raises(ValidationFailed) as caught:
        dataset_declare(dataset=dataset, actor=owner, columns=marked, unit="row")
    [message] = caught.value.extra["errors"]["sex"]
    assert "private profile" in message and "reveals that someone has it" in message
    dataset.refresh_from_db()
    assert not dataset.declared
    marked["sex"]["confirm_derived"] = True
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=marked, unit="row")
    sex = dataset.columns.get(name="sex")
    assert sex.derived_from_data == ["categories"]
    # declared again unchanged, unmarked: still data-derived, confirmed already
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    assert dataset.columns.get(name="sex").derived_from_data == ["categories"]
    # other categories: no longer derived from the data
    other = {**VALID, "sex": {"kind": "categorical", "categories": "f\nm\nx"}}
    dataset = dataset_declare(dataset=dataset, actor=owner, columns=other, unit="row")
    assert dataset.columns.get(name="sex").derived_from_data == []


# --- releases refuse an unconfirmed dataset: services, page and API --------------------


@pytest.fixture
def unconfirmed(project, owner):
    return make_dataset(project=project, owner=owner, rows=200, unit_confirmed=False)


def test_draft_preview_and_submit_services_refuse_an_unconfirmed_unit(project, owner, unconfirmed):
    with pytest.raises(ValidationFailed, match=UNCONFIRMED):
        draft(project=project, owner=owner, dataset=unconfirmed)
    with pytest.raises(ValidationFailed, match=UNCONFIRMED):
        services.release_preview(project=project, data=builder_data(unconfirmed))
    # a draft saved before the confirmation was withdrawn cannot be submitted
    unconfirmed.unit_confirmed_at = timezone.now()
    unconfirmed.save()
    release = draft(project=project, owner=owner, dataset=unconfirmed)
    unconfirmed.unit_confirmed_at = None
    unconfirmed.save()
    with pytest.raises(ValidationFailed, match=UNCONFIRMED):
        lifecycle.release_submit(release=release, actor=owner)
    release.refresh_from_db()
    assert release.status == Release.Status.DRAFT and release.budget_request is None


def test_builder_page_refuses_an_unconfirmed_unit_then_accepts_it_confirmed(
    client, project, owner, unconfirmed
):
    client.force_login(owner)
    url = reverse("releases:new", args=[project.slug])
    payload = {"payload": json.dumps(builder_data(unconfirmed))}
    response = client.post(url, payload)
    assert response.status_code == 400
    assert UNCONFIRMED in response.content.decode()
    assert Release.objects.count() == 0
    preview = client.post(
        reverse("releases:preview", args=[project.slug]),
        builder_data(unconfirmed),
        content_type="application/json",
    )
    assert preview.status_code == 400 and UNCONFIRMED in preview.json()["error"]
    # the owner confirms the unit shown on the dataset's page
    page = client.get(reverse("datasets:detail", kwargs={"pk": unconfirmed.pk})).content.decode()
    assert "Not confirmed" in page and "Confirm this privacy unit" in page
    confirm = client.post(
        reverse("datasets:confirm_unit", kwargs={"pk": unconfirmed.pk}),
        {"unit": "row", "id_column": "", "contribution_bound": "1"},
    )
    assert confirm.status_code == 302
    assert client.post(url, payload).status_code == 302
    assert Release.objects.count() == 1


def test_api_refuses_an_unconfirmed_unit_then_accepts_it_confirmed(project, owner, unconfirmed):
    client = api(owner)
    definition = builder_data(unconfirmed)
    for route in ("create", "preview"):
        response = client.post(
            f"{V1}/projects/{project.slug}/releases/{route}/", definition, format="json"
        )
        assert response.status_code == 400, response.content
        assert UNCONFIRMED in response.json()["error"]["message"]
    detail = client.get(f"{V1}/datasets/{unconfirmed.pk}/").json()
    assert detail["usable"] is False and UNCONFIRMED in detail["usability_problem"]
    assert detail["unit_confirmed"] is False
    wrong = client.post(
        f"{V1}/datasets/{unconfirmed.pk}/confirm-unit/",
        {"privacy_unit": "person", "id_column": "person"},
        format="json",
    )
    assert wrong.status_code == 400
    confirmed = client.post(
        f"{V1}/datasets/{unconfirmed.pk}/confirm-unit/", {"privacy_unit": "row"}, format="json"
    )
    assert confirmed.status_code == 200 and confirmed.json()["usable"] is True
    created = client.post(
        f"{V1}/projects/{project.slug}/releases/create/", definition, format="json"
    )
    assert created.status_code == 201, created.content


def test_api_declaration_with_a_unit_confirms_it_and_shows_derived_parts(project, owner, dataset):
    columns = {
        **VALID,
        "age": {**VALID["age"], "bin_edges": ["18", "40", "65", "90"]},
        "sex": {
            "kind": "categorical",
            "categories": ["female", "male"],
            "derived_from_data": ["categories"],
            "confirm_derived": True,
        },
    }
    response = api(owner).post(
        f"{V1}/datasets/{dataset.pk}/declare/",
        {"columns": columns, "privacy_unit": "row"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["unit_confirmed"] is True and body["usable"] is True
    sex = next(c for c in body["columns"] if c["name"] == "sex")
    assert sex["derived_from_data"] == ["categories"]
    unconfirmed = {**columns, "age": {**columns["age"], "derived_from_data": ["bounds"]}}
    refused = api(owner).post(
        f"{V1}/datasets/{dataset.pk}/declare/",
        {"columns": unconfirmed, "privacy_unit": "row"},
        format="json",
    )
    assert refused.status_code == 400
    assert "reveals" in refused.json()["error"]["details"]["errors"]["age"][0]


# --- the declaration page -----------------------------------------------------------------


def test_declaration_page_needs_an_explicit_unit_and_shows_data_derived_values(
    client, owner, reviewer, dataset
):
    client.force_login(owner)
    url = reverse("datasets:declare", kwargs={"pk": dataset.pk})
    page = client.get(url).content.decode()
    # no unit pre-selected: it is a choice, never a default
    assert "checked" not in page.split('id="privacy-unit"')[1].split("</fieldset>")[0]
    post = {
        "kind-0": "excluded",
        "kind-1": "numeric",
        "lower-1": "18",
        "upper-1": "90",
        "kind-2": "categorical",
        "categories-2": "female\nmale",
        "derived-2": "categories",
        "exclude_rest": "1",
    }
    response = client.post(url, post)
    assert response.status_code == 400
    text = response.content.decode()
    assert "Choose the privacy unit" in text
    response = client.post(url, {**post, "unit": "row"})
    assert response.status_code == 400  # the data-derived categories are not confirmed
    text = response.content.decode()
    assert "The categories were filled in with the data&#x27;s private profile" in text
    assert "Choose the privacy unit" not in text
    response = client.post(url, {**post, "unit": "row", "confirm-derived-2": "1"})
    assert response.status_code == 302
    dataset.refresh_from_db()
    assert dataset.unit_confirmed_by == owner and dataset_is_usable(dataset=dataset)
    assert dataset.columns.get(name="sex").derived_from_data == ["categories"]
    again = client.get(url).content.decode()
    assert 'name="derived-2" value="categories"' in again and "data-derived:" in again
    assert "dataset-declare.js" in again and "<script>" not in again
    client.force_login(reviewer)
    detail = client.get(reverse("datasets:detail", kwargs={"pk": dataset.pk})).content.decode()
    assert "data-derived: the categories" in detail and "Confirmed by" in detail
