"""The dataset pages: upload, detail (profile for owners only), status JSON, declare, delete."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.models import Dataset
from datasets.selectors import dataset_get_shape
from datasets.services import dataset_create, dataset_ingest
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# 200 rows: each region in 100 rows, so the profile suggests them (rare values never)
CSV = b"person,age,region\n" + b"".join(
    b"%d,%d,%s\n" % (i // 2, 20 + i % 60, b"north" if i % 2 else b"south") for i in range(200)
)
PRIVATE = "private suggestion — never published"


@pytest.fixture
def ready(project, owner):
    dataset = dataset_create(
        project=project,
        name="survey",
        uploaded_file=SimpleUploadedFile("s.csv", CSV),
        uploaded_by=owner,
        dispatch=False,
    )
    return dataset_ingest(dataset_id=dataset.pk)


def test_owner_uploads_through_the_page(client, owner, project, django_capture_on_commit_callbacks):
    client.force_login(owner)
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    page = client.get(url)
    assert page.status_code == 200 and "never shown to anyone outside" in page.content.decode()
    packed = gzip.compress(CSV)  # once: gzip's header carries the time of compression
    file = SimpleUploadedFile("survey.csv.gz", packed)
    response = client.post(url, {"name": "Survey 2026", "file": file})
    dataset = Dataset.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("datasets:detail", kwargs={"pk": dataset.pk})
    assert (dataset.name, dataset.status) == ("Survey 2026", Dataset.Status.UPLOADED)
    assert (Path(settings.MEDIA_ROOT) / dataset.source_file).read_bytes() == packed
    detail = client.get(response.url).content.decode()
    assert 'id="ingest-bar"' in detail and "status.json" in detail


@pytest.mark.parametrize(
    ("content", "limit", "status", "message"),
    [
        (b"", None, 400, "The file is empty."),
        (CSV, 10, 413, "the limit is"),
        (b"x" * 200_000, 1000, 413, "The file is too large: the limit is"),
    ],
    ids=["empty", "over-limit", "request-over-limit"],
)
def test_bad_uploads_show_a_message_and_store_nothing(
    client, owner, project, settings, content, limit, status, message
):
    if limit is not None:
        settings.DPPORTAL_MAX_UPLOAD_BYTES = limit
    client.force_login(owner)
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    response = client.post(url, {"file": SimpleUploadedFile("a.csv", content)})
    assert response.status_code == status
    assert message in response.content.decode()
    assert Dataset.objects.count() == 0
    assert list(Path(settings.MEDIA_ROOT).rglob("*")) == []


def test_upload_page_is_for_owners_only(client, reviewer, project):
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    assert client.get(url).status_code == 404  # anonymous
    client.force_login(reviewer)
    assert client.get(url).status_code == 403
    client.force_login(UserFactory(username="stranger"))
    assert client.get(url).status_code == 404


def test_owner_sees_the_private_profile_reviewer_does_not(client, owner, reviewer, ready):
    url = reverse("datasets:detail", kwargs={"pk": ready.pk})
    client.force_login(owner)
    page = client.get(url).content.decode()
    frequent = "<li>north</li><li>south</li>"  # each frequent value its own item
    assert PRIVATE in page and frequent in page and "range (rounded outward" in page
    client.force_login(reviewer)
    page = client.get(url).content.decode()
    assert PRIVATE not in page and "<li>north</li>" not in page and "range" not in page
    assert "Declared domains are public" in page


def test_owner_sees_the_rows_and_each_columns_empty_share(client, owner, reviewer, project):
    # 100 rows; "income" empty in 39 of them, "region" never
    csv = b"region,income\n" + b"".join(
        b"%s,%s\n" % (b"north" if i % 2 else b"south", b"" if i < 39 else b"%d" % (1000 + i))
        for i in range(100)
    )
    dataset = dataset_create(
        project=project,
        name="wages",
        uploaded_file=SimpleUploadedFile("w.csv", csv),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset = dataset_ingest(dataset_id=dataset.pk)
    shape = dataset_get_shape(dataset=dataset)
    assert shape.rows == 100
    assert shape.empty_share == {"region": "0", "income": "0.39"}
    url = reverse("datasets:detail", kwargs={"pk": dataset.pk})
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert re.search(r'id="dataset-rows">\s*100 rows', page)
    shares = re.findall(r'class="private empty-share">([^<]*)<', page)
    assert shares == ["0 % of the cells are empty", "39 % of the cells are empty"]
    client.force_login(reviewer)  # private, like the profile
    page = client.get(url).content.decode()
    assert "dataset-rows" not in page and "empty-share" not in page


def test_the_declaration_page_reads_only_the_chosen_kinds_inputs(client, owner, ready):
    """Posted with the inputs of each column's kind only (the others hidden, or never
    sent): nothing else is required."""
    client.force_login(owner)
    url = reverse("datasets:declare", kwargs={"pk": ready.pk})
    form = {
        "unit": "row",
        "kind-0": "excluded",
        "kind-1": "numeric",
        "lower-1": "0",
        "upper-1": "100",
        "kind-2": "categorical",
        "categories-2": "north\nsouth",
    }
    response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    columns = {c.name: c for c in ready.columns.all()}
    assert columns["region"].categories == ["north", "south"]
    assert (columns["age"].lower, columns["age"].upper) == (0, 100)
    assert columns["region"].missing == "drop" and columns["age"].bin_edges == []


@pytest.mark.parametrize("who", ["anonymous", "stranger"])
def test_non_members_get_404_everywhere(client, ready, who):
    if who == "stranger":
        client.force_login(UserFactory(username="stranger"))
    for name in ["detail", "status", "declare", "delete"]:
        assert client.get(reverse(f"datasets:{name}", kwargs={"pk": ready.pk})).status_code == 404
    list_url = reverse("datasets:list", kwargs={"project_slug": ready.project.slug})
    assert client.get(list_url).status_code == 404


def test_reviewer_cannot_declare_or_delete(client, reviewer, ready):
    client.force_login(reviewer)
    for name in ["declare", "delete"]:
        url = reverse(f"datasets:{name}", kwargs={"pk": ready.pk})
        assert client.get(url).status_code == 403
        assert client.post(url, {}).status_code == 403
    assert Dataset.objects.filter(pk=ready.pk).exists()


def test_status_json(client, reviewer, ready):
    client.force_login(reviewer)
    data = client.get(reverse("datasets:status", kwargs={"pk": ready.pk})).json()
    assert data == {
        "status": "ready",
        "status_display": "Ready",
        "progress": 1.0,
        "failure_reason": "",
    }


def test_failed_dataset_page_shows_the_reason(client, owner, project):
    dataset = dataset_create(
        project=project,
        name="bad",
        uploaded_file=SimpleUploadedFile("b.csv", b"a,a\n1,2\n"),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset_ingest(dataset_id=dataset.pk)
    client.force_login(owner)
    page = client.get(reverse("datasets:detail", kwargs={"pk": dataset.pk})).content.decode()
    assert "The file was not accepted" in page
    assert "Columns 1 and 2 have the same name" in page


def declaration_post(**overrides):
    data = {
        "unit": "person",
        "id_column": "person",
        "contribution_bound": "2",
        "kind-0": "excluded",
        "kind-1": "numeric",
        "lower-1": "0",
        "upper-1": "120",
        "bins-1": "0, 18, 65, 120",
        "missing-1": "drop",
        "kind-2": "categorical",
        "categories-2": "north\nsouth\neast\nwest",
        "missing-2": "category",
    }
    data.update(overrides)
    return data


def test_declare_page_saves_and_shows_public_domains(client, owner, reviewer, ready):
    client.force_login(owner)
    url = reverse("datasets:declare", kwargs={"pk": ready.pk})
    page = client.get(url).content.decode()
    assert "What you declare here becomes public." in page
    assert PRIVATE.capitalize() in page and "Fill in from profile" in page
    response = client.post(url, declaration_post())
    assert response.status_code == 302
    ready.refresh_from_db()
    assert ready.declared and ready.id_column == "person" and ready.contribution_bound == 2
    client.force_login(reviewer)
    page = client.get(reverse("datasets:detail", kwargs={"pk": ready.pk})).content.decode()
    assert "north, south, east, west" in page
    assert "Numeric in [0, 120]; bins at 0; 18; 65; 120" in page
    assert "at most 2 rows per person" in page


def test_declare_page_shows_errors_and_saves_nothing(client, owner, ready):
    client.force_login(owner)
    url = reverse("datasets:declare", kwargs={"pk": ready.pk})
    response = client.post(url, declaration_post(**{"upper-1": "-5", "kind-0": "numeric"}))
    page = response.content.decode()
    assert response.status_code == 400
    assert "nothing was saved" in page
    assert "The lower bound must be below the upper bound." in page
    assert "Declare the ID column" in page
    assert "north\nsouth\neast\nwest" in page  # the owner's input is kept
    ready.refresh_from_db()
    assert not ready.declared
    assert set(ready.columns.values_list("kind", flat=True)) == {"undeclared"}


def test_delete_through_the_page(client, owner, ready, django_capture_on_commit_callbacks):
    client.force_login(owner)
    folder = Path(settings.MEDIA_ROOT) / "datasets" / str(ready.pk)
    assert folder.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("datasets:delete", kwargs={"pk": ready.pk}))
    assert response.status_code == 302
    assert not Dataset.objects.filter(pk=ready.pk).exists()
    assert not folder.exists()
    listing = client.get(response.url).content.decode()
    assert "and its files are deleted" in listing
