"""The review document: every statistic's parameters in words and numbers, page and API.

The numbers are checked against what the worker itself records when it computes
the release (the stored explanation of the noise it drew), so "noise scale in the
data's units" and the half-widths are the release's, not a second opinion.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from django.urls import reverse
from dp_accounting.pld import common as dp_common
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from budgets.services import (
    budget_request_approve,
    budget_request_create,
    budget_request_reject,
    project_caps_update,
)
from datasets.models import Column
from dpportal.privacy import accuracy
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.pld import within_cap
from releases import compute, lifecycle
from releases.models import Release
from releases.review.selectors import review_document_get
from tests.factories import PASSWORD, UserFactory
from tests.review_support import (
    BOUND,
    KINDS,
    gaussian_release,
    laplace_release,
    person_dataset,
    review_project,
)

pytestmark = pytest.mark.django_db

REPRS = ("None", "{'", "Decimal(", "Fraction(", "True", "False", "[]")


@pytest.fixture
def releases(project, owner, reviewer):
    review_project(project)
    dataset = person_dataset(project=project, owner=owner)
    earlier = gaussian_release(project=project, owner=owner, reviewer=reviewer, dataset=dataset)
    pending = laplace_release(project=project, owner=owner, dataset=dataset)
    return earlier, pending


def _noise_in_data_units(explanation: dict) -> tuple[Fraction, Fraction]:
    gamma = Fraction(explanation["granularity"])
    key = "sigma" if explanation["noise"] == "discrete_gaussian" else "scale"
    return Fraction(explanation[key]) * gamma, Fraction(explanation["l1_sensitivity"]) * gamma


def assert_document_matches_the_worker(release: Release) -> None:
    document = review_document_get(budget_request=release.budget_request)
    payload = release.result.payload["statistics"]
    assert [s.kind for s in document.statistics] == KINDS == [e["kind"] for e in payload]
    for stat, entry in zip(document.statistics, payload, strict=True):
        explanation = entry["explanation"]
        parts = [explanation["sum"], explanation["count"]] if stat.kind == "mean" else [explanation]
        assert len(stat.noise) == len(parts)
        for noise, part in zip(stat.noise, parts, strict=True):
            scale, l1 = _noise_in_data_units(part)
            assert (noise.scale, noise.l1_sensitivity) == (scale, l1), stat.label
            assert noise.distribution.lower().replace(" ", "_") == part["noise"]
        assert stat.epsilon == Decimal(entry["epsilon"])
        if stat.kind == "mean":
            continue  # its half-width is planned at the owner's guess of n (checked below)
        assert stat.cells == explanation["cells"]
        per_cell = accuracy.result_halfwidth(explanation, confidence="0.95")
        together = accuracy.result_halfwidth(explanation, confidence="0.95", simultaneous=True)
        assert stat.halfwidth == pytest.approx(per_cell, rel=1e-12), stat.label
        assert stat.halfwidth_simultaneous == pytest.approx(together, rel=1e-12), stat.label


def test_every_kind_states_the_noise_the_worker_drew(releases, reviewer):
    earlier, pending = releases
    assert_document_matches_the_worker(earlier)  # Gaussian (argmax: Report Noisy Max)
    lifecycle.release_approve(release=pending, reviewer=reviewer)
    assert compute.release_compute(release_id=pending.pk) == "computed"
    assert_document_matches_the_worker(Release.objects.get(pk=pending.pk))


def test_every_kind_says_how_domains_clipping_and_missing_values_are_handled(releases):
    _, pending = releases
    # the owner filled the regions in from the profile and confirmed it (issue 12.3)
    Column.objects.filter(dataset=pending.dataset, name="region").update(
        derived_from_data=["categories"]
    )
    document = review_document_get(budget_request=pending.budget_request)
    by_label = {s.label: s for s in document.statistics}
    assert document.privacy_unit.contribution_bound == BOUND
    assert document.privacy_unit.id_column == "person"
    assert "at most 3 rows per person" in document.privacy_unit.text
    region = by_label["Rows by region"]
    assert region.columns[0].categories == ("north", "south", "east", "west")
    assert "“Other” cell" in region.out_of_range_text
    assert "“Missing” cell" in region.missing_text  # the column's policy is "category"
    assert region.columns[0].derived_from_data == ("categories",)
    assert "Data-derived: the categories were filled in from the data" in (
        region.columns[0].domain_text
    )
    ages = by_label["Rows by age band"]
    assert ages.columns[0].bin_edges == ("0", "18", "40", "65", "100")
    assert ages.columns[0].derived_from_data == ()
    assert "Data-derived" not in ages.columns[0].domain_text
    assert "clamped into the edge bins" in ages.out_of_range_text
    assert ages.missing_text == "Rows where age is missing are dropped."
    assert by_label["Region by age band"].cells == 6 * 4
    income = by_label["Total income"]
    assert (income.clip_lower, income.clip_upper) == (Decimal(0), Decimal(100000))
    assert income.clip_text.startswith("0 to 100,000 (narrower than the column's declared range")
    assert "left out of the sum" in income.missing_text
    assert income.noise[0].l1_sensitivity == BOUND * 100000  # L max(|lo|, |hi|), in income
    assert income.noise[0].scale == BOUND * 100000 / Fraction("0.1")
    assert income.noise[0].scale_text.endswith("scale b = 3,000,000 units of income")
    mean = by_label["Mean age"]
    assert [n.part for n in mean.noise] == ["sum", "count"]
    assert "both the sum and the count" in mean.missing_text
    assert "planning guess" in mean.halfwidth_text
    assert by_label["Most common region"].mechanism_text.startswith("Report Noisy Max")
    assert by_label["Rows in the south"].category == "south"
    assert document.budget.moment == "now"
    assert [r.title for r in document.earlier_releases] == ["Wave 1 (Gaussian)"]
    assert document.earlier_epsilon_spent == Decimal("1.6")


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_page_and_api_carry_the_document_without_reprs(client, releases, reviewer):
    _, pending = releases
    client.login(username=reviewer.username, password=PASSWORD)
    page = client.get(reverse("review:request_detail", args=[pending.budget_request_id]))
    assert page.status_code == 200
    html = page.content.decode()
    text = _text(html)
    for marker in REPRS:
        assert marker not in text, marker
    assert html.count('class="card statistic"') == len(KINDS)
    for param in ("kind", "columns", "clip", "out-of-range", "missing", "unit", "mechanism",
                  "epsilon", "delta", "sensitivity", "scale", "halfwidth",
                  "halfwidth-simultaneous"):  # fmt: skip
        assert html.count(f'data-param="{param}"') >= len(KINDS), param
    assert "bin edges 0, 18, 40, 65, 100" in text
    assert "scale b = 3,000,000 units of income" in text
    assert "Remaining after approval" in text and "Wave 1 (Gaussian)" in text

    response = client.get(f"/api/v1/budget-requests/{pending.budget_request_id}/")
    assert response.status_code == 200
    body = response.content.decode()
    for marker in ("None", "{'", "Decimal(", "Fraction("):
        assert marker not in body, marker
    review = json.loads(body)["review"]
    assert review["privacy_unit"]["contribution_bound"] == BOUND
    income = next(s for s in review["statistics"] if s["kind"] == "sum")
    assert income["noise"][0]["scale"] == "3000000" and income["clip_upper"] == "100000"
    # the released-sum grid: <= L M / eps / (2**10 MAX_ROWS), issue 13.6c
    assert income["noise"][0]["granularity"] == "0.00000000186264514923095703125"
    assert isinstance(income["halfwidth"], str) and Decimal(income["halfwidth"]) > 0
    assert review["budget"]["epsilon_before"] == "3.4"
    assert review["budget"]["epsilon_after"] == "2.6"
    assert [r["title"] for r in review["earlier_releases"]] == ["Wave 1 (Gaussian)"]
    assert '"summary"' not in body  # the raw preview record is not the representation

    # tight accounting: the earlier Gaussian release's records, then the pending one's
    earlier = Release.objects.get(title="Wave 1 (Gaussian)").budget_request
    records = [MechanismRecord.from_dict(m) for m in earlier.mechanisms]
    candidate = [MechanismRecord.from_dict(m) for m in pending.budget_request.mechanisms]
    assert {r.kind for r in records} >= {"discrete_gaussian", "report_noisy_max"}
    assert {r.kind for r in candidate} >= {"discrete_laplace", "report_noisy_max"}
    expected = within_cap(records, candidate, epsilon_cap=5, delta_cap=Fraction(1, 10**4))
    spend = review["spend"]
    assert spend["moment"] == "now" and spend["within"] is True
    # equal up to float summation order (the composition's order of distinct mechanisms)
    assert float(spend["pld_epsilon_before"]) == pytest.approx(
        expected.before.pld_epsilon, rel=1e-9
    )
    assert float(spend["epsilon_after"]) == pytest.approx(expected.after.epsilon, rel=1e-9)
    assert Fraction(spend["basic_epsilon_before"]) == Fraction("1.6")
    assert Fraction(spend["basic_epsilon_after"]) == Fraction("2.4")
    assert spend["fit"] == expected.fit
    assert expected.after.epsilon < 2.4  # tight accounting is tighter here
    assert "Tight accounting at delta 1\u00a0×\u00a010⁻⁴" in spend["text"]
    assert f"{expected.fit} releases like this one fit" in text
    assert "Committed now" in text and "After approval" in text


# --- the budget as it stood at the decision ------------------------------------------


def _request(project, owner, title, epsilon="1"):
    return budget_request_create(
        project=project, title=title, epsilon=epsilon, delta="0", summary={},
        spec_hash="d" * 64, requested_by=owner,
    )  # fmt: skip


def _budget_cells(client, budget_request) -> dict[str, str]:
    """The exact values (title attributes) of the page's budget table."""
    html = client.get(reverse("review:request_detail", args=[budget_request.pk])).content
    cells = re.findall(
        r'data-param="(epsilon-before|epsilon-after)"><span class="amount" title="([^"]*)"',
        html.decode(),
    )
    return dict(cells)


def _api_spend(client, budget_request) -> dict:
    return client.get(f"/api/v1/budget-requests/{budget_request.pk}/").json()["review"]["spend"]


def _expected_spend(history: int, *, add: bool, cap: int = 3) -> tuple[float, float, int]:
    """(tight before, tight after, fit) for `history` earlier generic (1, 0) releases."""
    one = MechanismRecord.generic(epsilon=1)
    check = within_cap([one] * history, [one], epsilon_cap=cap, delta_cap=Fraction(1, 10**5))
    after = check.after if add else check.before
    return check.before.epsilon, after.epsilon, check.fit


def _shown_spend(spend: dict) -> tuple[float, float, int]:
    return float(spend["epsilon_before"]), float(spend["epsilon_after"]), spend["fit"]


def _api_budget(client, budget_request) -> tuple[str, str, str]:
    body = client.get(f"/api/v1/budget-requests/{budget_request.pk}/").json()["review"]["budget"]
    return body["moment"], body["epsilon_before"], body["epsilon_after"]


def test_a_decided_request_shows_the_budget_as_at_its_decision(client, project, owner, reviewer):
    project.epsilon_cap = Decimal("3")
    project.save(update_fields=["epsilon_cap"])
    first = _request(project, owner, "First")
    budget_request_approve(budget_request_id=first.pk, reviewer=reviewer)
    client.login(username=reviewer.username, password=PASSWORD)
    assert _budget_cells(client, first) == {"epsilon-before": "3", "epsilon-after": "2"}
    assert _api_budget(client, first) == ("approval", "3", "2")

    second = _request(project, owner, "Second")
    assert _budget_cells(client, second) == {"epsilon-before": "2", "epsilon-after": "1"}
    budget_request_approve(budget_request_id=second.pk, reviewer=reviewer)
    # the first request's page still shows its own moment, the second its own
    assert _budget_cells(client, first) == {"epsilon-before": "3", "epsilon-after": "2"}
    assert _budget_cells(client, second) == {"epsilon-before": "2", "epsilon-after": "1"}

    third = _request(project, owner, "Third", epsilon="0.5")
    budget_request_reject(budget_request_id=third.pk, reviewer=reviewer, comment="not now")
    assert _api_budget(client, third) == ("rejection", "1", "1")  # nothing reserved

    # the tight spend mirrors it: before excludes the request, after includes it (once)
    assert _shown_spend(_api_spend(client, first)) == _expected_spend(0, add=True)
    assert _shown_spend(_api_spend(client, second)) == _expected_spend(1, add=True)
    spend = _api_spend(client, third)
    assert spend["moment"] == "rejection"
    assert float(spend["epsilon_before"]) == float(spend["epsilon_after"])  # nothing added
    assert Fraction(spend["basic_epsilon_before"]) == 2 == Fraction(spend["basic_epsilon_after"])
    # two pure epsilon-1 releases by dp_accounting directly (its own (eps, delta) PLD)
    direct = dp_pld.from_privacy_parameters(dp_common.DifferentialPrivacyParameters(1.0, 0.0))
    assert float(spend["pld_epsilon_before"]) == pytest.approx(
        direct.self_compose(2).get_epsilon_for_delta(1e-5), abs=2e-3
    )
    assert float(_api_spend(client, second)["pld_epsilon_after"]) == pytest.approx(
        float(spend["pld_epsilon_before"]), abs=1e-12
    )
    first_spend = _api_spend(client, first)

    staff = UserFactory(username="stella-staff", is_staff=True)
    project_caps_update(project=project, actor=staff, epsilon_cap="10", delta_cap="0.00001")
    # a later cap change does not rewrite what the decisions saw
    assert _budget_cells(client, first) == {"epsilon-before": "3", "epsilon-after": "2"}
    page = client.get(reverse("review:request_detail", args=[first.pk])).content.decode()
    assert "Remaining before the approval" in page and "not subtracted again" in page
    assert _api_spend(client, first) == first_spend  # its own moment and caps
    assert first_spend["epsilon_cap"] == "3" and first_spend["moment"] == "approval"
    assert "Before the approval" in page and 'data-param="tight-after"' in page
