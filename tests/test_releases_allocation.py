"""The epsilon and delta split adds up EXACTLY to the total the owner typed.

Property tests (hypothesis) run `allocate` on plans of 1..20 statistics with
random weights, holds and targets; the database tests follow one typed total
through the draft, the preview, the frozen specification and the budget request.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpportal.errors import ValidationFailed
from releases import dp, lifecycle, services
from releases.services import DELTA_QUANTUM, EPS_QUANTUM, ReleasePlan, StatisticPlan, allocate
from releases.services.allocation import split_exactly
from tests.releases_support import draft, make_dataset

QUANTUM_UNITS = 10**12  # EPS_QUANTUM = 1e-12

weights = st.decimals(min_value=Decimal("0.01"), max_value=Decimal(1000), places=2)
totals = st.integers(min_value=1, max_value=50 * QUANTUM_UNITS).map(
    lambda units: Decimal(units) * EPS_QUANTUM
)


def _plan(*, epsilon: Decimal, stats: list[StatisticPlan], mechanism="laplace", delta=0):
    return ReleasePlan(
        project=None,
        dataset=SimpleNamespace(contribution_bound=1),
        title="t",
        description="",
        mechanism=mechanism,
        confidence=Decimal("0.95"),
        epsilon=epsilon,
        delta=Decimal(delta),
        statistics=stats,
    )


@st.composite
def plans(draw, mechanism="laplace"):
    n = draw(st.integers(min_value=1, max_value=20))
    total = draw(totals)
    stats = []
    for i in range(n):
        stat = StatisticPlan(position=i, kind="count", label=f"s{i}", weight=draw(weights))
        roll = draw(st.integers(0, 9))
        if roll == 0:  # a hold of a small part of the total
            stat.hold = True
            units = draw(st.integers(1, max(1, int(total / EPS_QUANTUM) // (4 * n))))
            stat.epsilon_given = units * EPS_QUANTUM
        elif roll == 1 and mechanism == "laplace":  # a target half-width (count, L = 1)
            stat.target_halfwidth = float(draw(st.integers(50, 5000)))
        stats.append(stat)
    delta = Decimal(0)
    if mechanism == "gaussian":
        delta = Decimal(draw(st.integers(n, 10**10))) * DELTA_QUANTUM
    return _plan(epsilon=total, stats=stats, mechanism=mechanism, delta=delta)


def _check_split(amounts: list[Decimal], weights_: list[Decimal], total: Decimal, quantum):
    assert sum(amounts, Decimal(0)) == total  # exactly
    whole = sum((Fraction(w) for w in weights_), Fraction(0))
    exacts = [Fraction(total) * Fraction(w) / whole for w in weights_]
    floors = [Fraction(int(e / Fraction(quantum))) * Fraction(quantum) for e in exacts]
    remainder = Fraction(total) - sum(floors)
    assert 0 <= remainder < len(amounts) * Fraction(quantum)
    for amount, exact in zip(amounts, exacts, strict=True):
        assert amount > 0
        assert amount == amount.quantize(quantum)  # the ledger can hold it
        assert Fraction(amount) > exact - Fraction(quantum)  # never more than a quantum short
        assert Fraction(amount) - exact <= remainder  # and never over by more than the remainder
    # the remainder went to ONE statistic
    assert sum(1 for a, f in zip(amounts, floors, strict=True) if Fraction(a) != f) <= 1


def _assert_legitimate_refusal(exc, *, plan, typed, fixed, rest) -> None:
    """A refusal only when the fixed part used the total, or a share would be 0."""
    assert rest
    remaining = Fraction(typed) - sum(Fraction(s.epsilon) for s in fixed)
    if "already use epsilon" in exc.message:
        assert remaining <= 0
        return
    assert "too small to share" in exc.message
    whole = sum(Fraction(s.weight) for s in rest)
    smallest = min(remaining * Fraction(s.weight) / whole for s in rest)
    assert smallest < Fraction(EPS_QUANTUM)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans())
def test_epsilon_shares_add_up_exactly_to_the_typed_total(plan):
    typed = plan.epsilon
    given_holds = {s.position: s.epsilon_given for s in plan.statistics if s.hold}
    fixed = [s for s in plan.statistics if s.hold or s.target_halfwidth is not None]
    rest = [s for s in plan.statistics if s not in fixed]
    try:
        allocate(plan)
    except ValidationFailed as exc:
        _assert_legitimate_refusal(exc, plan=plan, typed=typed, fixed=fixed, rest=rest)
        return
    for s in plan.statistics:
        if s.hold:
            assert s.epsilon == given_holds[s.position]  # a hold keeps its value
        elif s.target_halfwidth is not None:
            solved = dp.epsilon_for_target(plan=plan, stat=s)
            assert Fraction(s.epsilon) >= solved  # rounded UP: the target is still met
            assert Fraction(s.epsilon) - solved < Fraction(EPS_QUANTUM)
    if rest:
        assert plan.epsilon == typed
        assert plan.cost_epsilon == typed  # EXACTLY the total the owner typed
        remaining = typed - sum((s.epsilon for s in fixed), Decimal(0))
        _check_split([s.epsilon for s in rest], [s.weight for s in rest], remaining, EPS_QUANTUM)
    else:
        assert plan.epsilon == plan.cost_epsilon == sum((s.epsilon for s in fixed), Decimal(0))
    assert plan.delta == 0


@settings(max_examples=200, deadline=None)
@given(plan=plans(mechanism="gaussian"))
def test_delta_shares_add_up_exactly_to_the_typed_total(plan):
    typed_delta = plan.delta
    stats = list(plan.statistics)
    try:
        allocate(plan)
    except ValidationFailed as exc:
        if "Delta" in exc.message:
            whole = sum(Fraction(s.weight) for s in stats)
            smallest = min(Fraction(s.weight) for s in stats) / whole
            assert Fraction(typed_delta) * smallest < Fraction(DELTA_QUANTUM)
            return
        fixed = [s for s in stats if s.hold]
        rest = [s for s in stats if not s.hold]
        _assert_legitimate_refusal(exc, plan=plan, typed=plan.epsilon, fixed=fixed, rest=rest)
        return
    assert plan.cost_delta == typed_delta == plan.delta
    _check_split(
        [s.delta for s in plan.statistics],
        [s.weight for s in plan.statistics],
        typed_delta,
        DELTA_QUANTUM,
    )


def test_one_over_three_is_one_not_point_nine_recurring():
    stats = [StatisticPlan(position=i, kind="count", label=str(i)) for i in range(3)]
    plan = _plan(epsilon=Decimal(1), stats=stats)
    allocate(plan)
    assert [s.epsilon for s in stats] == [
        Decimal("0.333333333334"),
        Decimal("0.333333333333"),
        Decimal("0.333333333333"),
    ]
    assert plan.cost_epsilon == Decimal(1)


def test_the_remainder_goes_to_the_largest_share():
    one, two = Decimal(1), Decimal(2)
    shares = split_exactly(Decimal(1), [one, two, two, one], EPS_QUANTUM)
    assert shares == [
        Decimal("0.166666666666"),
        Decimal("0.333333333335"),  # 0.333333333333 + the remainder of two quanta
        Decimal("0.333333333333"),
        Decimal("0.166666666666"),
    ]
    assert sum(shares) == 1


def test_a_total_finer_than_the_ledger_is_refused_with_a_message():
    stats = [StatisticPlan(position=0, kind="count", label="a")]
    with pytest.raises(ValidationFailed, match="at most 12 decimal places"):
        allocate(_plan(epsilon=Decimal("0.1234567890123"), stats=stats))
    held = [
        StatisticPlan(position=0, kind="count", label="a", hold=True,
                      epsilon_given=Decimal("0.0000000000001")),
        StatisticPlan(position=1, kind="count", label="b"),
    ]  # fmt: skip
    with pytest.raises(ValidationFailed, match="held by statistic 1 may have at most 12"):
        allocate(_plan(epsilon=Decimal(1), stats=held))


# --- one typed total through the whole path --------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"mechanism": "laplace"}, id="laplace"),
        pytest.param({"mechanism": "gaussian", "delta": "0.000001"}, id="gaussian"),
    ],
)
def test_draft_preview_freeze_and_request_carry_the_typed_total(project, owner, extra):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    release = draft(project=project, owner=owner, dataset=dataset, epsilon="1", **extra)
    typed_delta = Decimal(extra.get("delta", "0"))
    assert release.epsilon == Decimal(1) and release.delta == typed_delta
    stored = list(release.statistics.all())
    assert len(stored) == 7 and sum(s.epsilon for s in stored) == Decimal(1)
    # re-editing the draft keeps the total (it used to lose a quantum per save)
    form = services.release_form_data(release=release)
    assert Decimal(form["epsilon"]) == Decimal(1)
    again = services.release_save_draft(project=project, actor=owner, data=form, release=release)
    assert again.epsilon == Decimal(1)
    preview = services.release_preview(project=project, data=form)
    assert preview["cost"]["epsilon"] == preview["epsilon"] == "1"
    assert Decimal(preview["cost"]["delta"]) == typed_delta
    submitted = lifecycle.release_submit(release=again, actor=owner)
    assert submitted.epsilon == Decimal(1)
    assert submitted.spec["epsilon"] == "1"
    assert sum(Decimal(s["epsilon"]) for s in submitted.spec["statistics"]) == Decimal(1)
    request = submitted.budget_request
    assert request.epsilon == Decimal(1) and request.delta == typed_delta
    assert request.summary["cost"]["epsilon"] == "1"
