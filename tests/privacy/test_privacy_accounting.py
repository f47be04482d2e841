"""A1: costs and composition against an independent Fraction computation (hypothesis).

Hypothesis runs derandomized so CI is deterministic.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpportal.privacy.accounting import (
    ZERO,
    Cost,
    compose_sequential,
    compose_zcdp,
    group_privacy,
    group_privacy_delta,
    mean_budget_split,
    release_cost,
    statistic_cost,
)
from dpportal.privacy.errors import PrivacyParameterError

SETTINGS = settings(derandomize=True, deadline=None, max_examples=150)

epsilons = st.fractions(min_value=Fraction(1, 1000), max_value=10, max_denominator=10**4)
deltas = st.fractions(
    min_value=Fraction(1, 10**9), max_value=Fraction(1, 100), max_denominator=10**9
)
kinds = st.sampled_from(["count", "histogram", "sum", "mean", "argmax"])


@st.composite
def statistic_specs(draw):
    kind = draw(kinds)
    mechanism = "laplace" if kind == "argmax" else draw(st.sampled_from(["laplace", "gaussian"]))
    eps = draw(epsilons)
    delta = draw(deltas) if mechanism == "gaussian" else Fraction(0)
    cells = draw(st.integers(1, 1000)) if kind in ("histogram", "argmax") else 1
    return dict(kind=kind, mechanism=mechanism, epsilon=eps, delta=delta, cells=cells)


@SETTINGS
@given(st.lists(statistic_specs(), min_size=1, max_size=8))
def test_release_cost_equals_independent_sum(specs):
    """Statistics compose sequentially, histogram cells in parallel, mean = its two parts."""
    expected_eps = sum((s["epsilon"] for s in specs), Fraction(0))
    expected_delta = sum((s["delta"] for s in specs), Fraction(0))
    costs = [statistic_cost(**s) for s in specs]
    total = release_cost(costs)
    assert total == Cost(expected_eps, expected_delta)
    assert isinstance(total.epsilon, Fraction) and isinstance(total.delta, Fraction)


@SETTINGS
@given(statistic_specs(), st.integers(1, 10**6))
def test_histogram_cost_does_not_depend_on_cells(spec, cells):
    spec = {**spec, "cells": cells}
    assert statistic_cost(**spec) == Cost(spec["epsilon"], spec["delta"])


@SETTINGS
@given(epsilons, deltas, st.fractions(min_value=Fraction(1, 100), max_value=Fraction(99, 100)))
def test_mean_split_parts_add_up(eps, delta, share):
    sum_part, count_part = mean_budget_split(epsilon=eps, delta=delta, sum_share=share)
    assert sum_part.epsilon == eps * share and count_part.epsilon == eps * (1 - share)
    assert sum_part + count_part == Cost(eps, delta)


@SETTINGS
@given(st.lists(st.lists(statistic_specs(), min_size=1, max_size=4), min_size=0, max_size=6))
def test_sequential_composition_across_releases_is_associative(releases):
    per_release = [release_cost(statistic_cost(**s) for s in r) for r in releases]
    flat = [statistic_cost(**s) for r in releases for s in r]
    assert compose_sequential(per_release) == compose_sequential(flat)
    assert compose_sequential([]) == ZERO


@SETTINGS
@given(epsilons, st.integers(1, 1000))
def test_group_privacy_is_linear(eps, g):
    assert group_privacy(eps, g) == g * eps
    assert group_privacy(eps, 1) == eps


def test_group_privacy_delta_and_zcdp():
    assert group_privacy_delta(Cost(Fraction(1, 10), Fraction(1, 10**6)), 3) == pytest.approx(
        3 * 2.718281828459045**0.2 * 1e-6
    )
    assert group_privacy_delta(Cost(1), 5) == 0.0
    assert compose_zcdp(["0.1", Fraction(1, 5), Decimal("0.3")]) == Fraction(3, 5)


def test_exact_types_are_accepted_and_serialised():
    cost = Cost(Decimal("0.1"), "1e-6")
    assert cost.epsilon == Fraction(1, 10) and cost.delta == Fraction(1, 10**6)
    assert cost.to_dict() == {"epsilon": "0.1", "delta": "0.000001"}
    assert (Cost("1/3") + Cost("1/6")).to_dict() == {"epsilon": "0.5", "delta": "0"}
    assert Cost("1/3").to_dict()["epsilon"] == "1/3"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kind="count", mechanism="laplace", epsilon=0),
        dict(kind="count", mechanism="gaussian", epsilon=1, delta=0),
        dict(kind="count", mechanism="laplace", epsilon=1, delta="0.1"),
        dict(kind="histogram", mechanism="laplace", epsilon=1, cells=0),
        dict(kind="argmax", mechanism="gaussian", epsilon=1, delta="1e-6"),
        dict(kind="median", mechanism="laplace", epsilon=1),
        dict(kind="count", mechanism="gaussian", epsilon=1, delta=1),
    ],
)
def test_bad_costs(kwargs):
    with pytest.raises(PrivacyParameterError):
        statistic_cost(**kwargs)


def test_bad_group_and_cost():
    with pytest.raises(PrivacyParameterError):
        group_privacy(1, 0)
    with pytest.raises(PrivacyParameterError):
        Cost(-1)
