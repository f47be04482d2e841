"""No public surface names a user: the reviewer who approved a release is stated by role."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


def _public_bodies(client, release) -> dict[str, str]:
    slug = release.project.slug
    urls = {
        "home": reverse("public:home"),
        "project": reverse("public:project", args=[slug]),
        "page": reverse("public:release", args=[slug, release.pk]),
        "json": reverse("public:release-json", args=[slug, release.pk]),
        "csv": reverse("public:release-csv", args=[slug, release.pk]),
        "registry": reverse("registry:project", args=[slug]),
        "registry_json": reverse("registry:project_json", args=[slug]),
    }
    out = {}
    for name, url in urls.items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        out[name] = body.decode("utf-8-sig")
    return out


def test_no_username_or_full_name_in_any_public_surface(client, project, owner, reviewer):
    reviewer.first_name, reviewer.last_name = "Ravindra", "Quillfeather"
    reviewer.save()
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    bodies = _public_bodies(client, release)
    names = [
        value
        for user in get_user_model().objects.all()
        for value in (user.get_username(), user.first_name, user.last_name, user.email)
        if value
    ]
    assert "ravi-reviewer" in names and "olivia-owner" in names
    for surface, body in bodies.items():
        for name in names:
            assert name not in body, f"{name!r} is published on {surface}"
    assert "a reviewer of the project" in bodies["page"]
    assert "a reviewer of the project" in bodies["csv"]
