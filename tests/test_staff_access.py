"""Staff who are not members of a project: the budget page only, nothing else of it.

Staff deliberately hold one role in every project (DESIGN.md: "may raise a
project's cap (logged)"; budgets.services.project_caps_update): the budget page,
where caps are raised, shows them the caps, the ledger and the cap history. Every
other page of the project (its overview, members, datasets, releases, the builder)
answers them 404 like any non-member, in the browser and the API.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.factories import UserFactory


@pytest.fixture
def staff(db):
    return UserFactory(username="stella-staff", is_staff=True)


PAGES = [
    ("budgets:project_detail", "slug"),
    ("datasets:list", "project_slug"),
    ("datasets:upload", "project_slug"),
    ("releases:new", "project_slug"),
]


@pytest.mark.parametrize(("name", "kwarg"), PAGES)
def test_staff_non_member_gets_404_on_project_pages(client, project, staff, name, kwarg):
    client.force_login(staff)
    response = client.get(reverse(name, kwargs={kwarg: project.slug}))
    assert response.status_code == 404


def test_staff_non_member_gets_404_from_the_builder_preview(client, project, staff):
    client.force_login(staff)
    response = client.post(reverse("releases:preview", kwargs={"project_slug": project.slug}))
    assert response.status_code == 404


def test_staff_non_member_cannot_add_members(client, project, staff):
    client.force_login(staff)
    url = reverse("budgets:member_add", kwargs={"slug": project.slug})
    response = client.post(url, {"username": staff.username, "role": "owner"})
    assert response.status_code == 404
    assert not project.memberships.filter(user=staff).exists()


@pytest.mark.parametrize("tail", ["", "members/", "ledger/", "datasets/", "releases/"])
def test_staff_non_member_gets_404_from_the_project_api(project, staff, tail):
    api = APIClient()
    api.force_authenticate(staff)
    assert api.get(f"/api/v1/projects/{project.slug}/{tail}").status_code == 404


def test_the_budget_page_is_the_staff_role(client, project, staff):
    client.force_login(staff)
    response = client.get(reverse("budgets:project_budget", kwargs={"slug": project.slug}))
    assert response.status_code == 200


def test_a_non_staff_non_member_gets_404_on_the_budget_page(client, project):
    client.force_login(UserFactory(username="nora-nobody"))
    response = client.get(reverse("budgets:project_budget", kwargs={"slug": project.slug}))
    assert response.status_code == 404
