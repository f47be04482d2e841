"""Issue 17: project names in any script get readable addresses (Unicode slugs)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.urls import reverse

from budgets.models import Project
from budgets.services.projects import project_create
from dpportal.errors import ValidationFailed
from tests.factories import MembershipFactory
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


def _create(owner, name, slug=None):
    return project_create(
        name=name,
        description="人口统计。",
        privacy_unit_description="一位受访者。",
        epsilon_cap="1",
        delta_cap="0",
        created_by=owner,
        slug=slug,
    )


def test_a_chinese_name_gives_a_chinese_slug(owner):
    assert _create(owner, "人口普查 2026").slug == "人口普查-2026"
    assert _create(owner, "Перепись").slug == "перепись"
    with pytest.raises(ValidationFailed):
        _create(owner, "人口普查 2026")  # the same short name twice is refused
    assert Project.objects.filter(slug="人口普查-2026").count() == 1


def test_addresses_with_a_chinese_slug_resolve_and_read(client, owner, reviewer):
    project = _create(owner, "人口普查")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("public:project", args=[project.slug])
    assert url == "/p/" + quote("人口普查") + "/"  # percent-encoded, shown readable by browsers
    page = client.get(url)
    assert page.status_code == 200 and "人口普查" in page.content.decode()
    registry = client.get(reverse("registry:project", args=[project.slug]))
    assert registry.status_code == 200
    csv = client.get(reverse("public:release-csv", args=[project.slug, release.pk]))
    assert csv.status_code == 200
    assert csv["Content-Disposition"] == (
        "attachment; filename*=utf-8''" + quote(f"人口普查-release-{release.pk}.csv")
    )
    client.force_login(owner)
    assert client.get(reverse("budgets:project_detail", args=[project.slug])).status_code == 200


def test_the_create_form_takes_a_chinese_short_name(client, owner):
    client.force_login(owner)
    response = client.post(
        reverse("budgets:project_create"),
        {
            "name": "收入调查",
            "slug": "收入调查",
            "description": "收入。",
            "privacy_unit_description": "一户家庭。",
            "epsilon_cap": "1",
            "delta_cap": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Project.objects.filter(slug="收入调查", name="收入调查").exists()


def test_slashes_and_dots_still_cannot_enter_a_slug(owner):
    assert _create(owner, "a/b.c 人口").slug == "abc-人口"
