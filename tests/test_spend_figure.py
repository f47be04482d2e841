"""One spend figure: the registry, the public pages, the builder and the API state the same.

A project whose tight and basic bounds differ widely: one published Laplace release
and three computed Gaussian releases whose mechanisms compose (by privacy loss
distributions) far below the plain sum of their epsilons, which is past the cap.
Every surface must state the tight loss at the cap's delta as the headline, with the
basic sum beside it, and a release that fits never has a negative remainder.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from budgets import services as budget_services
from budgets.selectors import project_spend_figure, remaining_after
from budgets.services import budget_charge, budget_request_approve, budget_request_create
from dpportal import formatting
from dpportal.privacy.accounting import Cost
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import exact_str
from dpportal.privacy.pld import Spend
from tests.public_builders import build_release
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

CAP_EPSILON, CAP_DELTA = Decimal("3"), Decimal("0.00001")
# three of these compose to about 1.5 by PLD at delta 1e-5, not 3 (plain sums)
GAUSS = MechanismRecord.discrete_gaussian(
    sensitivity=1, sigma="4.231", epsilon=1, delta=Fraction(1, 10**6)
)
GAUSSIAN_RELEASE = {
    "mechanism": "gaussian",
    "epsilon": "0.5",
    "delta": "0.000001",
    "statistics": [{"kind": "count"}],
}


def _charged(project, owner, reviewer, title: str) -> None:
    request = budget_request_create(
        project=project, title=title, epsilon=exact_str(GAUSS.epsilon),
        delta=exact_str(GAUSS.delta), summary={}, spec_hash="f" * 64, requested_by=owner,
        mechanisms=[GAUSS.to_dict()],
    )  # fmt: skip
    budget_request_approve(budget_request_id=request.pk, reviewer=reviewer)
    budget_charge(budget_request=request)


def spend_project(project, owner, reviewer):
    """The project: published Laplace release (0.3) + three Gaussian ones (1 each), computed."""
    project.epsilon_cap, project.delta_cap = CAP_EPSILON, CAP_DELTA
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    build_release(project=project, owner=owner, reviewer=reviewer)  # 6 x 0.05, Laplace
    for i in range(3):
        _charged(project, owner, reviewer, f"Gaussian {i}")
    return make_dataset(project=project, owner=owner, rows=200)


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def amount(html: str, testid_or_id: str) -> str:
    """The text of the first amount inside the element with this data-testid, id or
    data-param."""
    match = re.search(
        rf'(?:data-testid|id|data-param)="{testid_or_id}"[^>]*>(?:[^<]*<(?!span)[^>]*>)*?[^<]*'
        r'<span class="amount" title="[^"]*">([^<]+)</span>',
        html,
    )
    assert match, f"no amount in {testid_or_id}"
    return match.group(1)


def test_every_surface_states_the_same_tight_spend(client, project, owner, reviewer):
    dataset = spend_project(project, owner, reviewer)
    figure = project_spend_figure(project=project)
    # the bounds differ widely: the plain sum is past the cap, the tight loss far below it
    assert figure.basic_spent_epsilon == Decimal("3.3")
    assert figure.spent_epsilon is not None and figure.spent_epsilon < Decimal("2.5")
    assert figure.committed_epsilon == figure.spent_epsilon  # nothing reserved but uncomputed
    spent = formatting.exact(figure.spent_epsilon)
    remaining = formatting.exact(figure.remaining_epsilon)
    assert figure.remaining_epsilon == CAP_EPSILON - figure.spent_epsilon > 0
    spent_text, remaining_text = formatting.budget(spent), formatting.budget(remaining)

    # registry JSON: the new block, equal to the accounting block; old fields the basic sums
    document = client.get(reverse("registry:project_json", kwargs={"slug": project.slug})).json()
    assert document["spend"]["spent_epsilon"] == spent
    assert document["tight_accounting"]["spent_epsilon"] == spent
    assert document["spend"]["remaining_epsilon"] == remaining
    assert document["spent"]["epsilon"] == document["spend"]["basic"]["spent_epsilon"] == "3.3"
    # registry page: table and paragraph say the same, the basic sum beside it
    html = client.get(reverse("registry:project", kwargs={"slug": project.slug})).content.decode()
    assert amount(html, "registry-epsilon-spent") == spent_text
    assert amount(html, "registry-epsilon-remaining") == remaining_text
    assert amount(html, "spend-figure") == spent_text  # the headline sentence
    assert amount(html, "registry-tight") == formatting.budget(CAP_DELTA)  # "at delta ..."
    assert re.search(rf"epsilon <strong><span[^>]*>{re.escape(spent_text)}</span></strong>", html)
    assert "Basic composition (the plain sums of every release" in html
    assert amount(html, "spend-basic") == "3.3"

    # public project page: "spent X of 3", remaining, and the basic sum explained
    html = client.get(reverse("public:project", args=[project.slug])).content.decode()
    assert re.search(
        rf'id="epsilon-spent"><span[^>]*>{re.escape(spent_text)}</span> of <span[^>]*>3</span><',
        html,
    )
    assert amount(html, "epsilon-remaining") == remaining_text
    assert amount(html, "spend-basic") == "3.3"

    # the builder's preview (the page's own endpoint): committed now and remaining
    client.force_login(owner)
    data = builder_data(dataset, **GAUSSIAN_RELEASE)
    preview = client.post(
        reverse("releases:preview", args=[project.slug]), data, content_type="application/json"
    ).json()["preview"]
    assert preview["spend"]["before"]["epsilon"] == spent
    assert preview["budget"]["epsilon_remaining"] == remaining
    assert preview["budget"]["epsilon_remaining_text"] == remaining_text
    assert preview["fits"] is True
    # the owner's budget page: the same figure, the ledger's sums beside it
    for name in ("budgets:project_detail", "budgets:project_budget"):
        html = client.get(reverse(name, args=[project.slug])).content.decode()
        assert amount(html, "tight-epsilon-spent") == spent_text
        assert amount(html, "tight-epsilon-remaining") == remaining_text
    assert amount(html, "spend-figure") == spent_text  # the budget page's headline

    # the API: the project's spend and the preview's remainder agree with fits
    api = api_client(owner)
    detail = api.get(f"/api/v1/projects/{project.slug}/").json()
    assert detail["spend"]["spent_epsilon"] == spent
    assert detail["spend"]["remaining_epsilon"] == remaining
    assert detail["spend"]["basic"]["spent_epsilon"] == detail["budget"]["epsilon_spent"] == "3.3"
    answer = api.post(
        f"/api/v1/projects/{project.slug}/releases/preview/",
        {k: v for k, v in data.items() if k != "dataset"} | {"dataset": dataset.pk},
        format="json",
    ).json()
    assert answer["fits"] is True
    budget = answer["budget"]
    assert budget["epsilon_remaining"] == remaining
    after = Decimal(budget["epsilon_remaining_after"])
    assert 0 <= after < Decimal(remaining)
    assert after == CAP_EPSILON - Decimal(answer["spend"]["after"]["epsilon"])
    # the plain sums are the explanation: past the cap, signed
    assert Decimal(budget["basic"]["epsilon_remaining_after"]) == Decimal("-0.8")
    assert Decimal(budget["delta_remaining_after"]) >= 0


def test_the_public_release_page_states_its_own_tight_loss(
    client, project, owner, reviewer, monkeypatch
):
    """Six Gaussian statistics of epsilon 1: the page leads with their tight loss."""
    project.epsilon_cap, project.delta_cap = Decimal("10"), CAP_DELTA
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    create = budget_services.budget_request_create

    def with_records(**kwargs):  # the worker's records: six discrete Gaussians
        return create(**kwargs, mechanisms=[GAUSS.times(6).to_dict()])

    monkeypatch.setattr(budget_services, "budget_request_create", with_records)
    release = build_release(
        project=project, owner=owner, reviewer=reviewer, mechanism="gaussian",
        epsilon_each="1", delta_each="0.000001",
    )  # fmt: skip
    html = client.get(reverse("public:release", args=[project.slug, release.pk])).content.decode()
    loss = re.search(r'data-testid="release-loss">(.*?)</dd>', html, re.S).group(1)
    tight = re.search(r"epsilon = <strong><span[^>]*>([^<]+)</span></strong>", loss).group(1)
    assert Decimal(tight) < 4  # far below the plain sum, 6
    assert "counted tightly" in loss and "basic composition would count" in loss
    assert re.search(r"would count epsilon = <span[^>]*>6</span>", loss)


def test_remaining_after_is_never_negative_when_the_release_fits():
    over = Spend(Fraction(1, 10**5), 3.2, Cost(Fraction(4), Fraction(4, 10**6)), 3.4)
    # a verdict of "fits" (margins, another bound) never comes with a negative remainder
    assert remaining_after(
        epsilon_cap=Decimal(3), after=over, fits=True, fallback=Decimal(-1)
    ) == Decimal(0)
    # a release that does not fit keeps its (negative) distance to the cap
    assert remaining_after(
        epsilon_cap=Decimal(3), after=over, fits=False, fallback=Decimal(-1)
    ) == Decimal("-0.2")
    under = Spend(Fraction(1, 10**5), 2.5, Cost(Fraction(4), Fraction(4, 10**6)), 2.75)
    assert remaining_after(
        epsilon_cap=Decimal(3), after=under, fits=True, fallback=Decimal(-1)
    ) == Decimal("0.5")
    # not accounted: the basic sums, at least zero when it fits
    assert remaining_after(epsilon_cap=Decimal(3), after=None, fits=True, fallback=Decimal(-1)) == 0


def test_review_and_inbox_state_the_tight_remainder(client, project, owner, reviewer):
    """A pending Gaussian request only the tight accountant admits: no negative remainder."""
    spend_project(project, owner, reviewer)
    remaining = project_spend_figure(project=project).remaining_epsilon
    pending = budget_request_create(
        project=project, title="Gaussian pending", epsilon="1", delta="0.000001", summary={},
        spec_hash="f" * 64, requested_by=owner, mechanisms=[GAUSS.to_dict()],
    )  # fmt: skip
    review = api_client(reviewer).get(f"/api/v1/budget-requests/{pending.pk}/").json()["review"]
    budget = review["budget"]
    assert budget["fits"] is True
    assert Decimal(budget["epsilon_after"]) == Decimal("-1.3")  # the plain sums, signed
    assert Decimal(budget["tight_epsilon_before"]) == remaining
    tight_after = Decimal(budget["tight_epsilon_after"])
    assert 0 <= tight_after < remaining
    assert tight_after == CAP_EPSILON - Decimal(review["spend"]["epsilon_after"])
    assert budget["text"].startswith("Tight accounting at delta 1\xa0×\xa010⁻⁵")

    client.force_login(reviewer)
    inbox = client.get(reverse("budgets:inbox")).content.decode()
    detail = client.get(reverse("review:request_detail", args=[pending.pk])).content.decode()
    for html in (inbox, detail):
        assert "epsilon (tight accounting)" in html and "epsilon (basic sum)" in html
        assert amount(html, "tight-remaining-before") == formatting.budget(remaining)
        assert amount(html, "tight-remaining-after") == formatting.budget(tight_after)
        assert "does not fit" not in html
