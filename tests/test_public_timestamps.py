"""Nothing public tells the time of day (issue 12, point 4).

Approval and publication are public to the day; anything finer, next to other
public times, could time a computation (whose duration depends on the noise the
exact samplers drew). This walks EVERY public page, download and JSON document of
a published project: each JSON document recursively (every string, and every key
that names a time), each page and CSV by patterns of a time of day.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests.public_builders import build_release

pytestmark = pytest.mark.django_db

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# a time of day in any common spelling: 2026-11-23T10:15, 10:15:07, 10:15 UTC, 10h15
TIME_OF_DAY = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}"
    r"|\b\d{1,2}:\d{2}:\d{2}\b"
    r"|\b\d{1,2}:\d{2}\s*(?:UTC|GMT|[AaPp]\.?[Mm]\b|[+-]\d{2}:?\d{2})"
    r"|\b\d{1,2}h\d{2}\b"
)
EMBEDDED_JSON = r'<script[^>]*type="application/json"[^>]*>(.*?)</script>'
TIME_KEY = re.compile(r"(^|_)(at|on|time|date|timestamp)$", re.I)


def _walk(node, path="$"):
    """Yield (path, key, value) for every leaf of a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list):
                yield from _walk(value, f"{path}.{key}")
            else:
                yield f"{path}.{key}", key, value
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def _public_urls(release) -> tuple[list[str], list[str]]:
    slug, pk = release.project.slug, release.pk
    pages = [
        reverse("public:home"),
        reverse("public:project", args=[slug]),
        reverse("public:release", args=[slug, pk]),
        reverse("public:release", args=[slug, pk]) + "?confidence=0.99&display=rounded",
        reverse("public:release-csv", args=[slug, pk]),
        reverse("registry:project", args=[slug]),
    ]
    documents = [
        reverse("public:release-json", args=[slug, pk]),
        reverse("registry:project_json", args=[slug]),
        reverse("api:public-projects"),
        reverse("api:public-releases", args=[slug]),
        reverse("api:public-release", args=[slug, pk]),
        reverse("api:public-registry", args=[slug]),
    ]
    return pages, documents


def _embedded_json(html: str) -> list:
    return [
        json.loads(block)
        for block in re.findall(
            r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', html, re.S
        )
    ]


def check_document(url: str, document) -> int:
    """Fail on any timestamp finer than a day; return how many time fields were checked."""
    checked = 0
    for path, key, value in _walk(document):
        if isinstance(value, str) and TIME_OF_DAY.search(value):
            pytest.fail(f"{url} {path} shows a time of day: {value!r}")
        if TIME_KEY.search(str(key)) and value is not None:
            assert isinstance(value, str) and DAY.match(value), f"{url} {path} = {value!r}"
            checked += 1
    return checked


@pytest.fixture
def published(project, owner, reviewer):
    # computed at a moment whose time of day is distinctive
    moment = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    return build_release(project=project, owner=owner, reviewer=reviewer, computed_at=moment)


def test_every_public_page_and_document_gives_days_only(client, published):
    pages, documents = _public_urls(published)
    time_fields = 0
    for url in documents:
        response = client.get(url)
        assert response.status_code == 200, url
        time_fields += check_document(url, json.loads(response.content))
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.getvalue().decode()
        match = TIME_OF_DAY.search(body)
        assert match is None, f"{url} shows a time of day: {match.group(0)!r}"
        for document in _embedded_json(body):
            time_fields += check_document(url, document)
    # approval and publication (release JSON, CSV, API, registry) are there, as days
    assert time_fields >= 8
    assert "2024-05-06" not in json.dumps(
        [json.loads(client.get(url).content) for url in documents]
    )  # nor the day it was computed


def test_the_walk_catches_a_time_of_day():
    """The checker itself: it must fail on a time in a value or under a time-like key."""
    with pytest.raises(pytest.fail.Exception):
        check_document("x", {"a": [{"note": "approved 2026-11-23T10:15:00+00:00"}]})
    with pytest.raises(pytest.fail.Exception):
        check_document("x", {"release": {"published_at": "2026-11-23 10:15"}})
    with pytest.raises(AssertionError):
        check_document("x", {"release": {"published_at": "23 November 2026"}})
    with pytest.raises(AssertionError):
        check_document("x", {"generated_at": 1764000000})
    assert TIME_OF_DAY.search("Published 2026-11-23 10:15 UTC")
    assert TIME_OF_DAY.search("at 10:15:07")
    assert check_document("x", {"approved_at": "2026-11-23", "published_at": None}) == 1
