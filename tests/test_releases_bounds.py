"""Private bounds end to end through the services: plan validation, the frozen spec, the
real compute (DuckDB), the declare action (owner only, refusals leave nothing changed)
and the provenance every later statistic's frozen spec and review document carry."""

from __future__ import annotations

from decimal import Decimal

import pytest

from datasets.models import Column
from dpportal.errors import ApplicationError, ValidationFailed
from releases import compute, lifecycle, services
from releases.review.selectors import review_document_get
from releases.services.bounds_declare import bounds_declare
from tests.releases_support import builder_data, make_dataset

BOUNDS = {"kind": "bounds", "column": "income", "epsilon": "1", "hold": True}


def computed(project, owner, reviewer, dataset, statistics, epsilon="1"):
    data = builder_data(dataset, statistics=statistics, epsilon=epsilon)
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    compute.release_compute(release_id=release.pk)
    release.refresh_from_db()
    return release


@pytest.mark.django_db
def test_the_plan_needs_no_declared_bounds_and_refuses_bad_search(project, owner):
    dataset = make_dataset(project=project, owner=owner)
    Column.objects.filter(dataset=dataset, name="income").update(lower=None, upper=None)
    data = builder_data(dataset, statistics=[BOUNDS], epsilon="1")
    release = services.release_save_draft(project=project, actor=owner, data=data)
    stat = release.statistics.get()
    assert stat.search == {"ends": "both", "outside": 5, "centre": "0", "unit": "1",
                           "limit": "1000000000000", "ratio": "101/100"}  # fmt: skip
    for bad, words in [
        ({"ends": "sideways"}, "Search both bounds"),
        ({"outside": "-1"}, "whole number from 0"),
        ({"unit": "0"}, "search grid is not valid"),
        ({"limit": "1e30"}, "largest distance"),
        ({"limit": "2e14", "centre": "9e14"}, "search grid is not valid"),
        ({"column": "region"}, "numeric column"),
    ]:
        data = builder_data(dataset, statistics=[{**BOUNDS, **bad}], epsilon="1")
        with pytest.raises(ValidationFailed, match=words):
            services.release_save_draft(project=project, actor=owner, data=data)


@pytest.mark.django_db
def test_declare_sets_the_bounds_with_provenance_for_later_releases(
    project, owner, reviewer, django_user_model
):
    project.epsilon_cap = 10
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner)
    Column.objects.filter(dataset=dataset, name="income").update(lower=None, upper=None)
    release = computed(project, owner, reviewer, dataset, [BOUNDS])
    assert release.status == "computed"
    (entry,) = release.result.payload["statistics"]
    assert set(entry["bounds"]) == {"lower", "upper"} and entry["values"] == []
    assert entry["explanation"]["mechanism"] == "above_threshold"
    stranger = django_user_model.objects.create_user("stranger", password="x")
    before = Column.objects.get(dataset=dataset, name="income")
    with pytest.raises(ApplicationError):
        bounds_declare(release=release, position=0, actor=stranger)
    with pytest.raises(ValidationFailed):
        bounds_declare(release=release, position=7, actor=owner)
    after = Column.objects.get(dataset=dataset, name="income")
    assert (after.lower, after.upper, after.bounds_estimate) == (before.lower, before.upper, {})
    if None in entry["bounds"].values():
        pytest.skip("a search reached its limit (the noise decides; rare at epsilon 1)")
    column = bounds_declare(release=release, position=0, actor=owner)
    assert column.bounds_estimate["release"] == release.pk
    # rounded outward to the column's 10 decimal places (the stored bounds are exact texts)
    lower, upper = (Decimal(entry["bounds"][end]) for end in ("lower", "upper"))
    assert column.lower <= lower <= upper <= column.upper
    mean = {"kind": "mean", "column": "income", "n_guess": 3000, "epsilon": "1", "hold": True}
    later = computed(project, owner, reviewer, dataset, [mean])
    (frozen,) = later.spec["statistics"]
    assert frozen["columns"][0]["bounds_estimate"]["release"] == release.pk
    review = review_document_get(budget_request=later.budget_request)
    text = review.statistics[0].columns[0].domain_text
    assert "Bounds estimated privately at ε = 1" in text
    # every public surface of the mean says so, linking the estimate once it is published
    from django.test import Client
    from django.urls import reverse

    lifecycle.release_publish(release=release, actor=owner)
    lifecycle.release_publish(release=later, actor=owner)
    anonymous = Client()
    slug = project.slug
    html = anonymous.get(reverse("public:release", args=[slug, later.pk])).content.decode()
    assert "bounds of income estimated privately at ε = 1" in html
    assert f'href="{reverse("public:release", args=[slug, release.pk])}"' in html
    data = anonymous.get(reverse("public:release-json", args=[slug, later.pk])).json()
    (stat,) = data["statistics"]
    assert [b["release"] for b in stat["bounds_estimated"]] == [release.pk]
    response = anonymous.get(reverse("public:release-csv", args=[slug, later.pk]))
    csv = b"".join(response.streaming_content).decode()
    assert "estimated privately" in csv
    bounds_html = anonymous.get(reverse("public:release", args=[slug, release.pk]))
    assert "Estimated bounds of income" in bounds_html.content.decode()
    # the registry lists the estimate's spend like any release's
    registry = anonymous.get(reverse("registry:project", args=[slug])).content.decode()
    assert release.title in registry


@pytest.mark.django_db
def test_the_declare_button_posts_with_csrf_for_owners_only(project, owner, reviewer):
    from django.test import Client
    from django.urls import reverse

    project.epsilon_cap = 10
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner)
    Column.objects.filter(dataset=dataset, name="income").update(lower=None, upper=None)
    release = computed(project, owner, reviewer, dataset, [BOUNDS])
    (entry,) = release.result.payload["statistics"]
    url = reverse("releases:declare_bounds", args=[release.pk])
    page = Client()
    page.force_login(owner)
    html = page.get(reverse("releases:detail", args=[release.pk])).content.decode()
    assert "Estimated bounds of income" in html
    found = None not in entry["bounds"].values()
    assert ('data-action="declare-bounds"' in html) == found
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(url, {"position": "0"}).status_code == 403  # no CSRF token
    assert page.get(url).status_code == 405
    other = Client()
    other.force_login(reviewer)  # a reviewer, not an owner: refused, nothing changes
    other.post(url, {"position": "0"})
    page.post(url, {"position": "x"}, follow=True)  # bad input: a message, nothing changes
    column = Column.objects.get(dataset=dataset, name="income")
    assert (column.lower, column.upper, column.bounds_estimate) == (None, None, {})
    response = page.post(url, {"position": "0"}, follow=True)
    column.refresh_from_db()
    if found:
        assert column.bounds_estimate["release"] == release.pk
        assert "Declared" in response.content.decode()
    else:
        assert column.bounds_estimate == {}


def test_typed_bounds_other_than_the_estimate_forget_it():
    from datasets.services.declaration_columns import declare_column

    estimate = {"release": 3, "title": "t", "epsilon": "0.1", "lower": "0", "upper": "412000.5"}
    column = Column(name="income", kind="numeric", bounds_estimate=dict(estimate))
    assert declare_column(column, {"kind": "numeric", "lower": "0", "upper": "412000.50"}) == []
    assert column.bounds_estimate == estimate  # the same bounds: still the estimate's
    assert declare_column(column, {"kind": "numeric", "lower": "0", "upper": "500000"}) == []
    assert column.bounds_estimate == {}  # typed: the owner's knowledge


@pytest.mark.django_db
def test_a_target_of_values_beyond_each_bound_solves_the_epsilon(project, owner):
    from releases import dp
    from releases.kinds.bounds import outside_bound, search_grid_of
    from releases.services.plan import release_plan_parse

    dataset = make_dataset(project=project, owner=owner)
    target = {"kind": "bounds", "column": "income", "target_halfwidth": "60"}
    plan = release_plan_parse(project=project, data=builder_data(dataset, statistics=[target]))
    (stat,) = plan.statistics
    accuracy = dp.statistic_accuracy(plan=plan, stat=stat)
    assert accuracy["outside_at_most"] <= 60
    assert "at most" in accuracy["accuracy_text"]
    # 10 % less epsilon misses the target: the solved epsilon is (near) the smallest
    smaller = outside_bound(
        epsilon=stat.epsilon * 9 / 10, ends="both", outside=5,
        steps=search_grid_of(stat.search).steps(),
        contribution_bound=plan.dataset.contribution_bound, confidence=plan.confidence,
    )  # fmt: skip
    assert smaller > 60


TAIL = {**BOUNDS, "ends": "upper", "tail": "lognormal", "outside": "3"}


@pytest.mark.django_db
def test_an_upper_bound_extrapolated_under_a_tail_model(project, owner, reviewer):
    """Parsed, frozen, reviewed, computed, stated and declarable like a searched bound;
    what it promises is the model's, said on every surface."""
    from releases.kinds import bounds as bounds_kind

    project.epsilon_cap = 10
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner)
    Column.objects.filter(dataset=dataset, name="income").update(lower=0, upper=None)
    for bad, words in [
        ({"ends": "both"}, "extrapolates the upper bound only"),
        ({"tail": "pareto"}, "from the list"),
        ({"outside": "0"}, "at least 1 value"),
    ]:
        data = builder_data(dataset, statistics=[{**TAIL, **bad}], epsilon="1")
        with pytest.raises(ValidationFailed, match=words):
            services.release_save_draft(project=project, actor=owner, data=data)
    release = computed(project, owner, reviewer, dataset, [TAIL])
    assert release.status == "computed"
    (frozen,) = release.spec["statistics"]
    assert frozen["tail"] == "lognormal" and frozen["ends"] == "upper"
    review = review_document_get(budget_request=release.budget_request)
    details = dict((key, text) for _, text, key in review.statistics[0].details)
    assert "log-normal" in details["method"]
    assert "no guarantee otherwise" in details["outside-at-most"]
    assert "for the count" in details["epsilon-per-end"]
    # the ledger holds the noisy count's exact record and the two searches
    kinds_charged = sorted(m["kind"] for m in release.budget_request.mechanisms)
    assert kinds_charged == ["discrete_laplace", "generic_eps_delta"]
    (entry,) = release.result.payload["statistics"]
    assert set(entry["bounds"]) == {"upper"} and entry["tail"] == "lognormal"
    explanation = entry["explanation"]
    assert explanation["tail"] == "lognormal" and explanation["beyond"] == 3
    statement = bounds_kind.bounds_statement(entry)
    if entry["bounds"]["upper"] is None:
        assert "could not be extrapolated" in statement
        return
    assert "Extrapolated upper bound of income" in statement
    assert "if its upper tail is log-normal" in statement
    column = bounds_declare(release=release, position=0, actor=owner)
    assert column.lower == 0 and column.upper >= Decimal(entry["bounds"]["upper"]) - 1
    assert column.bounds_estimate["model"] == "lognormal"
    assert column.bounds_estimate["lower"] is None  # the owner's, not estimated
    from releases.review.text import estimated_text

    assert "extrapolated under a log-normal tail model" in estimated_text(column)
    mean = {"kind": "mean", "column": "income", "n_guess": 3000, "epsilon": "1", "hold": True}
    later = computed(project, owner, reviewer, dataset, [mean])
    (frozen,) = later.spec["statistics"]
    assert frozen["columns"][0]["bounds_estimate"]["model"] == "lognormal"
    from releases.public.notes import english, estimated_bounds_notes

    texts = [english(n) for n in estimated_bounds_notes(frozen)]
    assert len(texts) == 2 and "log-normal tail model" in texts[1]


@pytest.mark.django_db
def test_a_target_does_not_apply_to_an_extrapolated_bound(project, owner):
    dataset = make_dataset(project=project, owner=owner)
    stat = {k: v for k, v in TAIL.items() if k not in ("epsilon", "hold")}
    data = builder_data(dataset, statistics=[{**stat, "target_halfwidth": "5"}])
    with pytest.raises(ValidationFailed, match="no accuracy statement to aim at"):
        services.release_save_draft(project=project, actor=owner, data=data)
