"""Publishing previews the exact public page and asks for confirmation; owners find their
public pages; a rejected or withdrawn release can be cloned into a new draft."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from budgets.models import BudgetRequest
from dpportal.errors import InvalidTransition, ValidationFailed
from releases import lifecycle, services
from releases.models import Release, ReleaseEvent, Statistic
from tests.factories import PASSWORD, UserFactory
from tests.public_builders import build_release
from tests.releases_support import draft, make_dataset, submitted

pytestmark = pytest.mark.django_db


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def computed(project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    # build_release files a placeholder summary ({"statistics": 6}); the detail page
    # reads a real one (a list of statistics)
    BudgetRequest.objects.filter(pk=release.budget_request_id).update(summary={"statistics": []})
    return Release.objects.get(pk=release.pk)


def sections(html: str) -> list[str]:
    """The statistics' sections of a public release page, as rendered."""
    return re.findall(r'<section class="statistic card".*?</section>', html, flags=re.S)


def chart_data(html: str) -> str:
    """The chart data handed to the page's script, without the publication time."""
    match = re.search(r'<script id="release-data" type="application/json">(.*?)</script>', html)
    assert match, "the page carries no chart data"
    return re.sub(r'"published_at(_display)?": "[^"]*"', "", match.group(1))


# --- the publish step: preview, then confirm -----------------------------------------------


def test_publish_page_previews_exactly_the_public_page(client, project, owner, computed):
    login(client, owner)
    url = reverse("releases:publish", args=[computed.pk])
    preview = client.get(url)
    assert preview.status_code == 200
    html = preview.content.decode()
    assert "Preview: not public yet" in html
    assert 'name="confirm" value="publish"' in html
    assert sections(html), "the preview shows no statistic"
    # never cached, anywhere: the page is private to the project's owners
    cache_control = preview["Cache-Control"]
    assert "no-cache" in cache_control and "private" in cache_control
    # nothing became public by looking
    public_url = reverse("public:release", args=[project.slug, computed.pk])
    assert client.get(public_url).status_code == 404
    computed.refresh_from_db()
    assert computed.status == "computed"

    lifecycle.release_publish(release=computed, actor=owner)
    public = client.get(public_url).content.decode()
    assert "Preview: not public yet" not in public
    assert sections(public) == sections(html)
    assert chart_data(public) == chart_data(html)
    # anonymous readers get the same statistics as the owner's preview showed
    client.logout()
    assert sections(client.get(public_url).content.decode()) == sections(html)


def test_publishing_needs_the_confirmation(client, owner, computed):
    login(client, owner)
    url = reverse("releases:publish", args=[computed.pk])
    for body in ({}, {"confirm": "yes"}, {"confirm": "\x00"}):
        response = client.post(url, body)
        assert response.status_code == 302 and response["Location"] == url
        computed.refresh_from_db()
        assert computed.status == "computed", body
    response = client.post(url, {"confirm": "publish"})
    assert response.status_code == 302
    assert response["Location"] == reverse("releases:detail", args=[computed.pk])
    computed.refresh_from_db()
    assert computed.status == "published" and computed.published_by == owner
    # once published, the step leads to the public page
    again = client.get(url)
    assert again["Location"] == reverse("public:release", args=[computed.project.slug, computed.pk])


def test_publish_step_is_for_owners_of_computed_releases_only(
    client, project, owner, reviewer, computed
):
    url = reverse("releases:publish", args=[computed.pk])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert "/accounts/login/" in client.get(url)["Location"]
    login(client, reviewer)
    assert client.get(url).status_code == 403
    assert client.post(url, {"confirm": "publish"}).status_code == 403
    client.logout()
    login(client, UserFactory(username="mallory"))
    assert client.get(url).status_code == 404
    computed.refresh_from_db()
    assert computed.status == "computed"
    # a release that is not computed has no publish step
    dataset = make_dataset(project=project, owner=owner, rows=200)
    a_draft = draft(project=project, owner=owner, dataset=dataset, epsilon="0.1")
    client.logout()
    login(client, owner)
    response = client.get(reverse("releases:publish", args=[a_draft.pk]), follow=True)
    assert b"Only a computed release can be published." in response.content
    response = client.post(reverse("releases:publish", args=[a_draft.pk]), {"confirm": "publish"})
    a_draft.refresh_from_db()
    assert a_draft.status == "draft"


def test_publish_preview_has_the_strict_style_policy_and_no_inline_script(client, owner, computed):
    login(client, owner)
    response = client.get(reverse("releases:publish", args=[computed.pk]))
    policy = dict(
        (part.split()[0], part.split()[1:])
        for part in response["Content-Security-Policy"].split(";")
    )
    assert policy["script-src"] == ["'self'"]
    # Plotly's rules are a static sheet: no inline <style> or style attribute is allowed
    assert policy["style-src-elem"] == ["'self'"]
    assert policy["style-src-attr"] == ["'none'"]
    html = response.content.decode()
    inline = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html)
    assert inline == []


def test_release_detail_links_to_the_publish_step_and_public_pages(
    client, project, owner, computed
):
    login(client, owner)
    detail = reverse("releases:detail", args=[computed.pk])
    html = client.get(detail).content.decode()
    assert f'href="{reverse("releases:publish", args=[computed.pk])}"' in html
    assert 'name="confirm"' not in html  # publishing happens on the preview, not here
    lifecycle.release_publish(release=computed, actor=owner)
    html = client.get(detail).content.decode()
    for url in (
        reverse("public:release", args=[project.slug, computed.pk]),
        reverse("public:project", args=[project.slug]),
        reverse("registry:project", args=[project.slug]),
    ):
        assert f'href="{url}"' in html
        assert client.get(url).status_code == 200
    project_page = client.get(reverse("budgets:project_detail", args=[project.slug]))
    page = project_page.content.decode()
    assert f'href="{reverse("public:release", args=[project.slug, computed.pk])}"' in page
    assert f'href="{reverse("public:project", args=[project.slug])}"' in page
    assert page.count("project's public dashboard") == 1


def test_project_page_has_no_dashboard_link_before_a_publication(client, project, owner, computed):
    login(client, owner)
    page = client.get(reverse("budgets:project_detail", args=[project.slug])).content.decode()
    assert reverse("public:project", args=[project.slug]) + '"' not in page


# --- cloning ---------------------------------------------------------------------------


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=300)


STAT_FIELDS = (
    "position", "kind", "label", "column_id", "column2_id", "category", "lower", "upper",
    "weight", "hold", "target_halfwidth", "n_guess", "epsilon", "delta",
)  # fmt: skip


def stats_of(release) -> list[tuple]:
    return list(release.statistics.order_by("position").values_list(*STAT_FIELDS))


def rejected(*, project, owner, reviewer, dataset) -> Release:
    release = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.3")
    return lifecycle.release_reject(release=release, reviewer=reviewer, comment="no")


def test_clone_of_a_rejected_release_is_a_fresh_draft_with_the_same_statistics(
    project, owner, reviewer, dataset
):
    original = rejected(project=project, owner=owner, reviewer=reviewer, dataset=dataset)
    clone = services.release_clone(release=original, actor=owner)
    assert clone.pk != original.pk and clone.status == "draft"
    assert clone.title == f"{original.title} (copy)"
    assert clone.budget_request_id is None and not clone.spec_hash
    assert (clone.dataset_id, clone.mechanism, clone.confidence, clone.epsilon, clone.delta) == (
        original.dataset_id, original.mechanism, original.confidence, original.epsilon,
        original.delta,
    )  # fmt: skip
    assert stats_of(clone) == stats_of(original) and len(stats_of(clone)) == 7
    (event,) = clone.events.all()
    assert event.to_status == "draft" and f"release {original.pk}" in event.comment
    original.refresh_from_db()
    assert original.status == "rejected"
    # the clone is an ordinary draft: it can be submitted
    lifecycle.release_submit(release=clone, actor=owner)


def test_clone_of_a_withdrawn_release(project, owner, dataset):
    original = draft(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    lifecycle.release_withdraw(release=original, actor=owner)
    original.refresh_from_db()
    clone = services.release_clone(release=original, actor=owner)
    assert clone.status == "draft" and stats_of(clone) == stats_of(original)


def test_only_rejected_or_withdrawn_releases_are_cloned(project, owner, reviewer, dataset):
    candidates = [
        draft(project=project, owner=owner, dataset=dataset, epsilon="0.1"),
        submitted(project=project, owner=owner, dataset=dataset, epsilon="0.1"),
        build_release(project=project, owner=owner, reviewer=reviewer, publish=False),
    ]
    before = (Release.objects.count(), Statistic.objects.count(), ReleaseEvent.objects.count())
    for release in candidates:
        with pytest.raises(InvalidTransition, match="only rejected or withdrawn"):
            services.release_clone(release=release, actor=owner)
    after = (Release.objects.count(), Statistic.objects.count(), ReleaseEvent.objects.count())
    assert after == before


def test_clone_rechecks_that_the_dataset_is_still_usable(project, owner, reviewer, dataset):
    original = rejected(project=project, owner=owner, reviewer=reviewer, dataset=dataset)
    count = Release.objects.count()
    dataset.declared = False
    dataset.save(update_fields=["declared"])
    with pytest.raises(ValidationFailed, match="cannot be used yet: declare every column"):
        services.release_clone(release=original, actor=owner)
    dataset.declared = True
    dataset.save(update_fields=["declared"])
    dataset.columns.filter(name="income").update(kind="undeclared")  # a statistic needs it
    with pytest.raises(ValidationFailed, match="income"):
        services.release_clone(release=original, actor=owner)
    assert Release.objects.count() == count


def test_clone_button_and_page(client, project, owner, reviewer, dataset):
    original = rejected(project=project, owner=owner, reviewer=reviewer, dataset=dataset)
    login(client, owner)
    clone_url = reverse("releases:clone", args=[original.pk])
    html = client.get(reverse("releases:detail", args=[original.pk])).content.decode()
    assert f'action="{clone_url}"' in html
    response = client.post(clone_url)
    clone = Release.objects.exclude(pk=original.pk).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("releases:edit", args=[clone.pk])
    # no clone button on a draft, and cloning it by hand is refused with a message
    html = client.get(reverse("releases:detail", args=[clone.pk])).content.decode()
    assert reverse("releases:clone", args=[clone.pk]) not in html
    refused = client.post(reverse("releases:clone", args=[clone.pk]), follow=True)
    assert b"only rejected or withdrawn releases can" in refused.content
    assert Release.objects.count() == 2
    client.logout()
    login(client, reviewer)
    assert client.post(clone_url).status_code == 403
    assert Release.objects.count() == 2


def test_clone_api(project, owner, reviewer, dataset):
    original = rejected(project=project, owner=owner, reviewer=reviewer, dataset=dataset)

    def api(user):
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    url = f"/api/v1/releases/{original.pk}/clone/"
    assert APIClient().post(url).status_code == 401
    assert api(reviewer).post(url).status_code == 403
    assert api(UserFactory(username="mallory")).post(url).status_code == 404
    response = api(owner).post(url)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "draft" and body["id"] != original.pk
    assert len(body["statistics"]) == 7
    conflict = api(owner).post(f"/api/v1/releases/{body['id']}/clone/")
    assert conflict.status_code == 409
    assert "only rejected or withdrawn" in conflict.json()["error"]["message"]
    assert Release.objects.count() == 2
