"""The builder's tight spend, fit count and accuracy-versus-epsilon chart (issue 13.4).

Expected numbers are computed here independently: with dpportal.privacy.pld on
hand-built mechanism records, and once with dp_accounting directly.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from django.urls import reverse
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from budgets.selectors import project_cap_check
from budgets.services import budget_request_approve, budget_request_create
from dpportal.errors import BudgetExceeded
from dpportal.privacy.headroom import compose_history, largest_fitting_epsilon
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import exact_str
from dpportal.privacy.pld import within_cap
from releases import dp, lifecycle, services
from releases.services.tradeoff import CHART_POINTS, plan_at_epsilon, plan_records
from tests.factories import PASSWORD
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

STATS = [
    {"kind": "count"},
    {"kind": "histogram", "column": "region"},
    {"kind": "sum", "column": "income", "lower": "0", "upper": "100000"},
    {"kind": "mean", "column": "age", "n_guess": 2000},
    {"kind": "argmax", "column": "region"},
]
# history: three earlier releases with known mechanisms (discrete Laplace, b = 4)
LAPLACE = MechanismRecord.discrete_laplace(sensitivity=1, scale=4)


@pytest.fixture
def dataset(project, owner):
    project.epsilon_cap, project.delta_cap = Decimal("3"), Decimal("0.00001")
    project.save(update_fields=["epsilon_cap", "delta_cap"])
    return make_dataset(project=project, owner=owner, rows=200)


def _approved(project, owner, reviewer, records: list[MechanismRecord], title: str):
    request = budget_request_create(
        project=project, title=title, epsilon=exact_str(sum(r.epsilon * r.count for r in records)),
        delta=exact_str(sum(r.delta * r.count for r in records)), summary={}, spec_hash="f" * 64,
        requested_by=owner, mechanisms=[r.to_dict() for r in records],
    )  # fmt: skip
    budget_request_approve(budget_request_id=request.pk, reviewer=reviewer)
    return request


def _history(project, owner, reviewer, n: int = 3) -> list[MechanismRecord]:
    for i in range(n):
        _approved(project, owner, reviewer, [LAPLACE], f"Earlier {i}")
    return [LAPLACE] * n


def _plan(project, dataset, **kwargs):
    data = builder_data(dataset, statistics=STATS, epsilon="0.5", **kwargs)
    return services.release_plan_parse(project=project, data=data)


def test_the_preview_shows_the_tight_spend_both_ways_and_the_fit(project, owner, reviewer, dataset):
    history = _history(project, owner, reviewer)
    preview = services.release_preview(
        project=project, data=builder_data(dataset, statistics=STATS, epsilon="0.5")
    )
    candidate = [MechanismRecord.from_dict(d) for d in dp.release_mechanisms(
        plan=_plan(project, dataset))]  # fmt: skip
    expected = within_cap(history, candidate, epsilon_cap=3, delta_cap=Fraction(1, 10**5))
    spend = preview["spend"]
    assert spend["delta"] == "0.00001" and spend["epsilon_cap"] == "3"
    # equal up to float summation order (the composition's order of distinct mechanisms)
    assert float(spend["before"]["pld_epsilon"]) == pytest.approx(expected.before.pld_epsilon)
    assert float(spend["after"]["pld_epsilon"]) == pytest.approx(expected.after.pld_epsilon)
    assert float(spend["after"]["epsilon"]) == pytest.approx(expected.after.epsilon, rel=1e-9)
    assert Fraction(spend["before"]["basic_epsilon"]) == Fraction(3, 4)  # 3 x 1/4, exactly
    assert Fraction(spend["after"]["basic_epsilon"]) == Fraction(3, 4) + Fraction("0.5")
    assert spend["fit"] == expected.fit and spend["fit"] >= 4  # 4 fit by basic sums alone
    assert spend["within"] is True and spend["after"]["epsilon_text"]
    # three discrete Laplace (b = 4) by dp_accounting itself: its own discrete Laplace PLD
    direct = dp_pld.from_discrete_laplace_mechanism(
        parameter=1 / 4, sensitivity=1, value_discretization_interval=1e-4
    ).self_compose(3)
    assert float(spend["before"]["pld_epsilon"]) == pytest.approx(
        direct.get_epsilon_for_delta(1e-5), abs=2e-3
    )
    assert float(spend["before"]["epsilon"]) <= 0.75  # never above the basic sum
    assert "tradeoff" not in preview  # the chart is asked for separately


def test_chart_half_widths_fall_as_epsilon_grows(project, owner, reviewer, dataset):
    _history(project, owner, reviewer)
    for mechanism in ("laplace", "gaussian"):
        extra = {"mechanism": mechanism, "delta": "0.000001"} if mechanism == "gaussian" else {}
        data = builder_data(dataset, statistics=STATS, epsilon="0.5", **extra)
        chart = services.release_preview(project=project, data=data, chart=True)["tradeoff"]
        epsilons = [Decimal(e) for e in chart["epsilons"]]
        assert CHART_POINTS - 2 <= len(epsilons) <= CHART_POINTS
        assert epsilons == sorted(set(epsilons))
        assert epsilons[0] <= Decimal("0.5") / 10 and epsilons[-1] >= Decimal("0.5") * 2
        ratios = [b / a for a, b in zip(epsilons, epsilons[1:], strict=False)]
        assert max(ratios) / min(ratios) < Decimal("1.05")  # evenly spaced on a log scale
        assert [s["kind"] for s in chart["series"]] == [s["kind"] for s in STATS]
        for series in chart["series"]:
            widths = series["halfwidth"]
            assert len(widths) == len(epsilons) and None not in widths, series["label"]
            assert all(b <= a for a, b in zip(widths, widths[1:], strict=False)), series["label"]
            assert widths[0] > widths[-1], series["label"]
            assert all(isinstance(t, str) and t for t in series["halfwidth_text"])
        # the point at this release's own total is the preview's own half-width
        plan = _plan(project, dataset, **extra)
        same = plan_at_epsilon(plan=plan, epsilon=Decimal("0.5"))
        for stat, series in zip(same.statistics, chart["series"], strict=True):
            at = dp.statistic_accuracy(plan=same, stat=stat)["halfwidth"]
            shown = dp.statistic_accuracy(plan=plan, stat=plan.statistics[stat.position])
            assert at == pytest.approx(shown["halfwidth"], rel=1e-9)
        assert chart["current"] == "0.5"


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_the_remaining_budget_marker_fits_and_just_above_does_not(
    project, owner, reviewer, dataset, mechanism
):
    _history(project, owner, reviewer)
    extra = {"mechanism": mechanism, "delta": "0.000001"} if mechanism == "gaussian" else {}
    data = builder_data(dataset, statistics=STATS, epsilon="0.5", **extra)
    chart = services.release_preview(project=project, data=data, chart=True)["tradeoff"]
    marker = Decimal(chart["remaining"])
    assert not chart["remaining_at_limit"]
    plan = _plan(project, dataset, **extra)

    def verdict(total: Decimal):
        scaled = plan_at_epsilon(plan=plan, epsilon=total)
        return project_cap_check(project=project, candidate=plan_records(plan=scaled),
                                 count_fit=False)  # fmt: skip

    assert verdict(marker).within
    # the marker is shown rounded down to 4 digits; the search is 1e-3 precise
    assert not verdict(marker * Decimal("1.003")).within
    # tight accounting buys more than the basic sum's 3 - 0.75 for this release
    assert marker > Decimal("2.25")
    if mechanism == "gaussian":
        assert verdict(marker).within_pld and not verdict(marker).within_basic


def test_no_room_left_means_no_marker(project, owner, reviewer, dataset):
    _approved(project, owner, reviewer, [MechanismRecord.generic(epsilon=3)], "Everything")
    data = builder_data(dataset, statistics=STATS, epsilon="0.5")
    preview = services.release_preview(project=project, data=data, chart=True)
    assert preview["tradeoff"]["remaining"] is None
    assert preview["spend"]["within"] is False and preview["spend"]["fit"] == 0
    assert preview["tradeoff"]["series"][0]["halfwidth"][0] > 0  # the chart still shows


def test_headroom_search_agrees_with_within_cap():
    """The bisection's verdict is within_cap's (a synthetic release of one Laplace count)."""
    history = [LAPLACE] * 5

    def candidate_at(t: float):
        return [MechanismRecord.discrete_laplace(sensitivity=1, scale=Fraction(1) / Fraction(t))]

    found = largest_fitting_epsilon(
        compose_history(history), candidate_at, epsilon_cap=2, delta_cap=Fraction(1, 10**5),
        low=0.01, limit=10.0,
    )  # fmt: skip
    assert found.epsilon is not None and found.probes < 25

    def within(t: float) -> bool:
        check = within_cap(history, candidate_at(t), epsilon_cap=2,
                           delta_cap=Fraction(1, 10**5), count_fit=False)  # fmt: skip
        return check.within

    assert within(found.epsilon) and not within(found.epsilon * 1.001)
    # pure Laplace: basic sums leave 2 - 5/4 and the PLD adds little; bisection's precision
    assert found.epsilon >= (2 - 5 / 4) * (1 - 1e-3)
    assert math.isclose(found.epsilon, 2 - 5 / 4, rel_tol=0.2)


def test_preview_endpoints_carry_spend_and_chart(client, project, owner, reviewer, dataset):
    _history(project, owner, reviewer)
    client.login(username=owner.username, password=PASSWORD)
    data = builder_data(dataset, statistics=STATS, epsilon="0.5")
    url = reverse("releases:preview", args=[project.slug])
    body = client.post(url, data, content_type="application/json").json()
    assert body["ok"] and "tradeoff" not in body["preview"]
    assert body["preview"]["spend"]["fit"] >= 4
    body = client.post(url + "?chart=1", data, content_type="application/json").json()
    assert Decimal(body["preview"]["tradeoff"]["remaining"]) > Decimal("2.25")
    api = f"/api/v1/projects/{project.slug}/releases/preview/"
    answer = client.post(api + "?chart=1", data, content_type="application/json")
    assert answer.status_code == 200
    payload = answer.json()
    assert payload["spend"]["after"]["basic_epsilon"] == "1.25"
    assert payload["tradeoff"]["remaining"] == body["preview"]["tradeoff"]["remaining"]
    assert payload["tradeoff"]["series"][0]["halfwidth_text"][0]


def test_the_frozen_summary_keeps_no_live_budget(project, owner, dataset):
    release = services.release_save_draft(
        project=project, actor=owner, data=builder_data(dataset, statistics=STATS, epsilon="0.5")
    )
    release = lifecycle.release_submit(release=release, actor=owner)
    summary = release.budget_request.summary
    assert not {"budget", "spend", "tradeoff"} & set(summary)
    assert summary["statistics"][0]["halfwidth_text"]


def test_the_basic_room_is_found_exactly(project, dataset):
    """No history, pure Laplace: the basic sum reaches the cap (3) at a total of 3 exactly."""
    data = builder_data(dataset, statistics=STATS, epsilon="0.5")
    chart = services.release_preview(project=project, data=data, chart=True)["tradeoff"]
    assert chart["remaining"] == "3" and chart["remaining_text"] == "3"


# ten of these compose to (3.13, 1e-5) by PLD, not (10, 1e-5) (issue 13's figures)
GAUSS = MechanismRecord.discrete_gaussian(
    sensitivity=1, sigma="4.231", epsilon=1, delta=Fraction(1, 10**6)
)


def test_a_release_only_tight_accounting_admits_can_be_saved_and_submitted(
    project, owner, reviewer, dataset
):
    for i in range(3):
        _approved(project, owner, reviewer, [GAUSS], f"Gaussian {i}")  # basic: (3, 3e-6)
    data = builder_data(
        dataset, statistics=[{"kind": "count"}], epsilon="0.5", mechanism="gaussian",
        delta="0.000001",
    )  # fmt: skip
    preview = services.release_preview(project=project, data=data)
    budget = preview["budget"]
    assert budget["basic"]["epsilon_remaining"] == "0"  # nothing left by basic sums
    # the stated remainder is the tight one: cap 3 minus the loss at the cap's delta
    assert Decimal(budget["epsilon_remaining"]) == 3 - Decimal(
        preview["spend"]["before"]["epsilon"]
    )
    after = Decimal(budget["epsilon_remaining_after"])
    assert (
        0
        <= after
        == 3 - Decimal(preview["spend"]["after"]["epsilon"])
        < Decimal(budget["epsilon_remaining"])
    )
    assert Decimal(budget["basic"]["epsilon_remaining_after"]) == Decimal("-0.5")
    assert preview["spend"]["within_pld"] and not preview["spend"]["within_basic"]
    assert preview["fits"] is True and preview["spend"]["fit"] >= 2
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    assert release.status == "submitted"
    # one more epsilon 3 release is beyond the cap both ways: refused with the reason
    data["epsilon"] = "3"
    assert services.release_preview(project=project, data=data)["fits"] is False
    with pytest.raises(BudgetExceeded, match="Counted tightly"):
        services.release_save_draft(project=project, actor=owner, data=data)
