"""The upload handler that stops an upload over the size limit, whatever Content-Length says."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import reverse
from rest_framework.test import APIClient

from datasets.models import Dataset
from datasets.upload_limits import LimitedUploadHandler

pytestmark = pytest.mark.django_db

LIMIT = 1000
BIG = b"a,b\n" + b"1,2\n" * 10_000  # 40 KB: over the limit, under limit + the envelope allowance


def body_for(content: bytes, **fields: str) -> bytes:
    return encode_multipart(BOUNDARY, {**fields, "file": SimpleUploadedFile("a.csv", content)})


def stored_nothing() -> bool:
    return not Dataset.objects.exists() and list(Path(settings.MEDIA_ROOT).rglob("*")) == []


def handler_of(response) -> LimitedUploadHandler:
    (handler,) = response.wsgi_request.upload_handlers
    assert isinstance(handler, LimitedUploadHandler)
    return handler


@pytest.fixture
def upload_url(client, owner, project, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = LIMIT
    client.force_login(owner)
    return reverse("datasets:upload", kwargs={"project_slug": project.slug})


def test_a_file_over_the_limit_is_stopped_at_the_limit(client, upload_url):
    response = client.post(upload_url, {"name": "big", "file": SimpleUploadedFile("a.csv", BIG)})
    assert response.status_code == 413
    assert "The file is too large: the limit is 1000 bytes." in response.content.decode()
    handler = handler_of(response)
    assert handler.exceeded and handler.received <= LIMIT  # never spooled past the limit
    assert stored_nothing()


def test_a_content_length_that_lies_low_does_not_help(client, upload_url):
    body = body_for(BIG * 5)  # 200 KB sent, 60 KB declared: passes the header check
    response = client.generic(
        "POST", upload_url, body, content_type=MULTIPART_CONTENT, CONTENT_LENGTH="60000"
    )
    assert response.status_code == 413
    assert handler_of(response).received <= LIMIT
    assert stored_nothing()


def test_a_body_without_content_length_is_not_read(client, upload_url):
    # Django reads no body without a Content-Length (a chunked upload): nothing is spooled
    response = client.generic(
        "POST", upload_url, body_for(BIG), content_type=MULTIPART_CONTENT, CONTENT_LENGTH=""
    )
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert handler_of(response).received == 0
    assert stored_nothing()


def test_a_file_at_the_limit_is_accepted(client, upload_url):
    content = b"a,b\n" + b"1,2\n" * 249  # exactly 1000 bytes
    response = client.post(upload_url, {"file": SimpleUploadedFile("a.csv", content)})
    assert response.status_code == 302, response.content.decode()
    dataset = Dataset.objects.get()
    assert (Path(settings.MEDIA_ROOT) / dataset.source_file).read_bytes() == content
    assert handler_of(response).received == LIMIT and not handler_of(response).exceeded


def test_the_upload_page_still_checks_csrf(owner, project):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    url = reverse("datasets:upload", kwargs={"project_slug": project.slug})
    file = SimpleUploadedFile("a.csv", b"a,b\n1,2\n")
    assert client.post(url, {"file": file}).status_code == 403
    assert not Dataset.objects.exists()
    client.get(url)
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    file.seek(0)
    response = client.post(url, {"csrfmiddlewaretoken": token, "file": file})
    assert response.status_code == 302
    assert Dataset.objects.count() == 1


def test_the_api_stops_a_file_over_the_limit(owner, project, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = LIMIT
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)  # session authentication: its CSRF check reads the form too
    client.get(reverse("datasets:upload", kwargs={"project_slug": project.slug}))
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post(
        f"/api/v1/projects/{project.slug}/datasets/upload/",
        {"file": SimpleUploadedFile("a.csv", BIG)},
        format="multipart",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 413, response.content
    error = response.json()["error"]
    assert error["code"] == "too_large" and "the limit is 1000 bytes" in error["message"]
    assert handler_of(response).received <= LIMIT
    assert stored_nothing()
