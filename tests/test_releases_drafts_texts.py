"""The draft service keeps the owner's texts in both languages, and refuses bad ones."""

from __future__ import annotations

import pytest

from budgets.selectors import project_has_reviewer
from dpportal.errors import ValidationFailed
from releases import services
from releases.models import Release
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.releases_support import builder_data, make_dataset

STATISTICS = [
    {
        "kind": "histogram",
        "column": "region",
        "label": "People by region",
        "label_zh": "各地区人数",
        "description": "Every respondent.",
        "description_zh": "所有受访者。",
    },
    {"kind": "count"},
]


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=200)


@pytest.mark.django_db
def test_texts_in_both_languages_are_saved_and_given_back(project, owner, dataset):
    data = builder_data(
        dataset,
        statistics=STATISTICS,
        title_zh="二〇二六年调查",
        description="Wave 1.",
        description_zh="第一轮。",
    )
    release = services.release_save_draft(project=project, actor=owner, data=data)
    assert (release.title, release.title_zh) == ("Survey 2026", "二〇二六年调查")
    assert (release.description, release.description_zh) == ("Wave 1.", "第一轮。")
    first, second = release.statistics.order_by("position")
    assert (first.label_zh, first.description, first.description_zh) == (
        "各地区人数",
        "Every respondent.",
        "所有受访者。",
    )
    assert (second.label_zh, second.description, second.description_zh) == ("", "", "")
    form = services.release_form_data(release=release)
    assert form["title_zh"] == "二〇二六年调查" and form["description_zh"] == "第一轮。"
    assert form["statistics"][0]["label_zh"] == "各地区人数"
    assert form["statistics"][0]["description"] == "Every respondent."
    # saved again from its own form data (edit, clone), nothing is lost
    again = services.release_save_draft(project=project, actor=owner, data=form, release=release)
    assert again.statistics.order_by("position").first().description_zh == "所有受访者。"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change",
    [
        {"title_zh": "长" * 201},
        {"statistics": [{**STATISTICS[0], "label_zh": "长" * 201}]},
        {"statistics": [{**STATISTICS[0], "description": "x" * 5001}]},
        {"description_zh": "right\u202eto left"},
    ],
)
def test_bad_texts_are_refused_with_a_message_and_write_nothing(project, owner, dataset, change):
    data = builder_data(dataset, **{"statistics": STATISTICS, **change})
    with pytest.raises(ValidationFailed) as refused:
        services.release_save_draft(project=project, actor=owner, data=data)
    assert refused.value.message
    assert not Release.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_reviewer_is_someone_else(owner, reviewer):
    project = ProjectFactory(created_by=owner)
    MembershipFactory(project=project, user=owner, role="owner")
    assert not project_has_reviewer(project=project)
    MembershipFactory(project=project, user=owner, role="reviewer")
    assert project_has_reviewer(project=project)
    assert not project_has_reviewer(project=project, other_than=owner)
    gone = UserFactory(username="gone", is_active=False)
    MembershipFactory(project=project, user=gone, role="reviewer")
    assert not project_has_reviewer(project=project, other_than=owner)
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    assert project_has_reviewer(project=project, other_than=owner)
