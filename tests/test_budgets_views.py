"""The budget pages through their real URLs: access, bad input, decisions, caps."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from budgets.models import BudgetRequest, CapChange, LedgerEntry, Membership, Project
from budgets.services import budget_request_approve, budget_request_create
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def make_request(project, owner, epsilon="0.1", delta="0", title="Ages by region"):
    return budget_request_create(
        project=project,
        title=title,
        epsilon=epsilon,
        delta=delta,
        summary={"statistics": [{"label": "Age histogram", "kind": "histogram", "halfwidth": "3"}]},
        spec_hash="c" * 64,
        requested_by=owner,
    )


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def approve_url(req):
    return reverse("review:request_approve", args=[req.pk])


def test_urls_are_where_the_other_apps_expect_them():
    assert reverse("budgets:project_detail", args=["demo"]) == "/projects/demo/"
    assert reverse("registry:project", args=["demo"]) == "/registry/demo/"
    assert reverse("registry:project_json", args=["demo"]) == "/registry/demo.json"


# --- approval access -----------------------------------------------------------------


@pytest.fixture
def outsiders():
    other = ProjectFactory()
    other_owner = UserFactory(username="oscar-other-owner")
    other_reviewer = UserFactory(username="rita-other-reviewer")
    MembershipFactory(project=other, user=other_owner, role="owner")
    MembershipFactory(project=other, user=other_reviewer, role="reviewer")
    return {
        "non-member": UserFactory(username="nadia-nobody"),
        "owner of another project": other_owner,
        "reviewer of another project": other_reviewer,
    }


def test_approval_refused_to_everyone_but_another_reviewer(client, project, owner, outsiders):
    MembershipFactory(project=project, user=owner, role="reviewer")  # owner is a reviewer too
    req = make_request(project, owner)
    response = client.post(approve_url(req), {"comment": ""})
    assert response.status_code == 403, "anonymous"
    for who, user in outsiders.items():
        client.logout()
        response = login(client, user).post(approve_url(req), {"comment": "ok"})
        assert response.status_code == 404, who
        assert (
            login(client, user).get(reverse("review:request_detail", args=[req.pk])).status_code
            == 404
        ), who
    client.logout()
    response = login(client, owner).post(approve_url(req), {"comment": "mine"})
    assert response.status_code == 403, "the requester"
    assert b"another reviewer" in response.content
    req.refresh_from_db()
    assert req.status == "pending"
    assert LedgerEntry.objects.count() == 0


def test_owner_without_reviewer_role_gets_403(client, project, owner):
    second_owner = UserFactory(username="sam-second-owner")
    MembershipFactory(project=project, user=second_owner, role="owner")
    req = make_request(project, owner)
    assert login(client, second_owner).post(approve_url(req)).status_code == 403
    assert LedgerEntry.objects.count() == 0


def test_reviewer_approves_through_the_page(client, project, owner, reviewer):
    req = make_request(project, owner, epsilon="0.3")
    login(client, reviewer)
    page = client.get(reverse("review:request_detail", args=[req.pk]))
    assert page.status_code == 200
    assert b"Approve and reserve" in page.content
    assert b"Age histogram" in page.content
    assert b"0.7" in page.content  # remaining after approval
    response = client.post(approve_url(req), {"comment": "Looks proportionate."}, follow=True)
    assert response.status_code == 200
    assert b"approved; its cost is reserved" in response.content
    req.refresh_from_db()
    assert req.status == "approved" and req.comment == "Looks proportionate."
    assert list(LedgerEntry.objects.values_list("kind", "epsilon")) == [("reserve", Decimal("0.3"))]


def test_reject_needs_a_comment(client, project, owner, reviewer):
    req = make_request(project, owner)
    login(client, reviewer)
    url = reverse("review:request_reject", args=[req.pk])
    response = client.post(url, {"comment": ""})
    assert response.status_code == 400
    assert b"give a reason" in response.content
    response = client.post(url, {"comment": "Too many cells."})
    assert response.status_code == 302
    req.refresh_from_db()
    assert req.status == "rejected"
    assert LedgerEntry.objects.count() == 0


TEN_TO_MINUS_5 = "1\u00a0×\u00a010⁻⁵"  # a delta as people read it (dpportal.formatting)


@pytest.mark.parametrize(
    ("setup", "data", "status", "message"),
    [
        (
            "exhausted",
            {"comment": ""},
            409,
            f"only epsilon 0.05, delta {TEN_TO_MINUS_5} remain".encode(),
        ),
        ("none", {"comment": "x" * 2001}, 400, b"at most 2000 characters"),
        ("rejected", {"comment": ""}, 409, b"This request is rejected"),
        ("withdrawn", {"comment": ""}, 409, b"This request is withdrawn"),
        ("approved", {"comment": ""}, 409, b"This request is approved"),
    ],
)
def test_bad_approvals_change_nothing(
    client, project, owner, reviewer, setup, data, status, message
):
    from budgets.services import budget_request_reject, budget_request_withdraw

    req = make_request(project, owner, epsilon="0.1")
    if setup == "exhausted":
        filler = make_request(project, owner, epsilon="0.95", title="Big one")
        budget_request_approve(budget_request_id=filler.pk, reviewer=reviewer)
    elif setup == "rejected":
        budget_request_reject(budget_request_id=req.pk, reviewer=reviewer, comment="no")
    elif setup == "withdrawn":
        budget_request_withdraw(budget_request_id=req.pk, actor=owner)
    elif setup == "approved":
        budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    before = LedgerEntry.objects.count()
    status_before = BudgetRequest.objects.get(pk=req.pk).status
    response = login(client, reviewer).post(approve_url(req), data)
    assert response.status_code == status
    assert message in response.content
    assert LedgerEntry.objects.count() == before
    assert BudgetRequest.objects.get(pk=req.pk).status == status_before


def test_approve_with_a_release_moves_the_release_too(client, project, owner, reviewer):
    from datasets.models import Dataset
    from releases.models import Release

    req = make_request(project, owner)
    dataset = Dataset.objects.create(project=project, name="survey.csv", uploaded_by=owner)
    release = Release.objects.create(
        project=project, dataset=dataset, title=req.title, created_by=owner,
        status="submitted", epsilon=req.epsilon, delta=req.delta, budget_request=req,
    )  # fmt: skip
    response = login(client, reviewer).post(approve_url(req), {"comment": "fine"})
    assert response.status_code == 302
    release.refresh_from_db()
    assert release.status == "queued"
    assert LedgerEntry.objects.filter(request=req, kind="reserve").count() == 1


# --- inbox and home ------------------------------------------------------------------------


def test_inbox_lists_pending_requests_with_remaining_before_and_after(
    client, project, owner, reviewer
):
    MembershipFactory(project=project, user=reviewer, role="owner")
    mine = make_request(project, reviewer, title="My own request")
    theirs = make_request(project, owner, epsilon="0.25", title="Their request")
    done = make_request(project, owner, epsilon="0.5", title="Decided already")
    second = UserFactory(username="second-reviewer")
    MembershipFactory(project=project, user=second, role="reviewer")
    budget_request_approve(budget_request_id=done.pk, reviewer=second)
    login(client, reviewer)
    page = client.get(reverse("budgets:inbox"))
    assert page.status_code == 200
    text = page.content.decode()
    assert theirs.title in text and mine.title not in text and done.title not in text
    assert "0.5" in text and "0.25" in text  # remaining now 0.5, after 0.25
    home = client.get(reverse("accounts:home"))
    assert b"Reviewer inbox (1 pending)" in home.content
    assert reverse("budgets:project_detail", args=[project.slug]).encode() in home.content


def test_inbox_needs_login(client):
    response = client.get(reverse("budgets:inbox"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- projects --------------------------------------------------------------------------------

VALID = {
    "name": "Household survey 2026",
    "slug": "",
    "description": "Official statistics on households.",
    "privacy_unit_description": "One household.",
    "epsilon_cap": "2.5",
    "delta_cap": "0.000001",
}


def test_any_logged_in_user_creates_a_project_and_owns_it(client):
    user = UserFactory(username="paula")
    response = login(client, user).post(reverse("budgets:project_create"), VALID)
    project = Project.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/projects/{project.slug}/"
    assert project.slug == "household-survey-2026"
    assert project.epsilon_cap == Decimal("2.5") and project.delta_cap == Decimal("0.000001")
    assert Membership.objects.filter(project=project, user=user, role="owner").exists()
    assert client.get(response["Location"]).status_code == 200


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("epsilon_cap", "0", b"epsilon cap must be greater than 0"),
        ("epsilon_cap", "-1", b"epsilon cap must be greater than 0"),
        ("epsilon_cap", "NaN", b"epsilon cap must be a finite number"),
        ("epsilon_cap", "inf", b"epsilon cap must be a finite number"),
        ("epsilon_cap", "lots", b"epsilon cap must be a number"),
        ("delta_cap", "1", b"delta cap must be at least 0 and below 1"),
        ("delta_cap", "-0.1", b"delta cap must be at least 0 and below 1"),
        ("name", "", b"This field is required"),
        ("slug", "new", b"reserved"),
    ],
)
def test_project_creation_refuses_bad_input(client, field, value, message):
    user = UserFactory(username="paula")
    response = login(client, user).post(reverse("budgets:project_create"), {**VALID, field: value})
    assert response.status_code == 400
    assert message in response.content
    assert Project.objects.count() == 0


def test_project_pages_are_for_members(client, project, owner, outsiders):
    url = reverse("budgets:project_detail", args=[project.slug])
    assert client.get(url).status_code == 302
    assert login(client, outsiders["non-member"]).get(url).status_code == 404
    assert client.get(reverse("budgets:project_budget", args=[project.slug])).status_code == 404
    client.logout()
    page = login(client, owner).get(url)
    assert page.status_code == 200
    assert b"New release" in page.content and b"/releases/new/" in page.content
    assert b"ravi-reviewer" in page.content


def test_owner_adds_members_by_username(client, project, owner, reviewer):
    UserFactory(username="newcomer")
    url = reverse("budgets:member_add", args=[project.slug])
    response = login(client, owner).post(url, {"username": "newcomer", "role": "reviewer"})
    assert response.status_code == 302
    assert Membership.objects.filter(project=project, user__username="newcomer").exists()
    page = client.post(url, {"username": "ghost", "role": "reviewer"}, follow=True)
    assert b"There is no user named" in page.content
    client.logout()
    response = login(client, reviewer).post(url, {"username": "newcomer", "role": "owner"})
    assert response.status_code == 403
    assert not Membership.objects.filter(user__username="newcomer", role="owner").exists()


# --- caps ---------------------------------------------------------------------------


def test_caps_lowered_by_owner_not_below_committed_raised_by_staff(
    client, project, owner, reviewer
):
    req = make_request(project, owner, epsilon="0.4")
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    url = reverse("budgets:project_budget", args=[project.slug])
    login(client, owner)
    page = client.get(url)
    assert page.status_code == 200 and b"Ledger" in page.content and b"Reserve" in page.content
    response = client.post(url, {"epsilon_cap": "0.3", "delta_cap": "0.00001"})
    assert response.status_code == 400
    assert b"cannot go below the 0.4 already committed" in response.content
    response = client.post(url, {"epsilon_cap": "2", "delta_cap": "0.00001"})
    assert response.status_code == 403
    assert CapChange.objects.count() == 0
    response = client.post(url, {"epsilon_cap": "0.5", "delta_cap": "0.00001", "note": "tighter"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.epsilon_cap == Decimal("0.5")
    client.logout()
    staff = UserFactory(username="stella-staff", is_staff=True)
    response = login(client, staff).post(url, {"epsilon_cap": "3", "delta_cap": "0.0001"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.epsilon_cap == Decimal("3") and project.delta_cap == Decimal("0.0001")
    changes = list(
        CapChange.objects.order_by("id").values_list("actor__username", "new_epsilon_cap")
    )
    assert changes == [("olivia-owner", Decimal("0.5")), ("stella-staff", Decimal("3"))]


def test_ledger_is_read_only_in_the_admin(admin_client, project, owner, reviewer):
    req = make_request(project, owner)
    budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    entry = LedgerEntry.objects.get()
    change = reverse("admin:budgets_ledgerentry_change", args=[entry.pk])
    assert admin_client.post(change, {"epsilon": "0", "note": "x"}).status_code == 403
    delete = reverse("admin:budgets_ledgerentry_delete", args=[entry.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert admin_client.get(reverse("admin:budgets_ledgerentry_add")).status_code == 403
    assert LedgerEntry.objects.get().epsilon == Decimal("0.1")
