"""Epsilon and Delta: parsed once into typed values, never validated again."""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest

from dpportal.privacy import params
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.params import Delta, Epsilon, check_delta, check_epsilon


@pytest.mark.parametrize("bad", [0, -1, "0", "-0.5", float("nan"), float("inf"), "x", True])
def test_an_epsilon_is_validated_when_it_is_made(bad):
    with pytest.raises(PrivacyParameterError):
        Epsilon(bad)


@pytest.mark.parametrize("bad", [-1, 1, "1.5", float("nan"), "x"])
def test_a_delta_is_validated_when_it_is_made(bad):
    with pytest.raises(PrivacyParameterError):
        Delta(bad)


def test_a_typed_value_is_returned_as_it_is_without_a_second_conversion(monkeypatch):
    eps, delta = Epsilon("0.1"), Delta("1e-6")
    assert eps == Fraction(1, 10) and delta == Fraction(1, 10**6)
    calls = []
    monkeypatch.setattr(params, "to_fraction", lambda v, n: calls.append(n) or Fraction(v))
    assert check_epsilon(eps) is eps
    assert check_delta(delta, mechanism="gaussian") is delta
    assert calls == []
    # a plain value is converted (once) and comes back typed
    assert type(check_epsilon("0.2")) is Epsilon and calls == ["epsilon"]


def test_the_mechanism_rule_on_delta_holds_for_a_typed_delta_too():
    with pytest.raises(PrivacyParameterError, match="Gaussian"):
        check_delta(Delta(0), mechanism="gaussian")
    with pytest.raises(PrivacyParameterError, match="Laplace"):
        check_delta(Delta("1e-6"), mechanism="laplace")


def test_typed_values_copy_and_pickle_as_themselves():
    eps = Epsilon("1/3")
    assert copy.copy(eps) is eps and copy.deepcopy(eps) is eps
    back = pickle.loads(pickle.dumps(eps))
    assert type(back) is Epsilon and back == Fraction(1, 3)
    assert type(eps / 2) is Fraction  # a share is a new value, checked where it is used
