"""dpportal.formatting: the one module that writes numbers for people."""

from decimal import Decimal
from fractions import Fraction

import pytest

from dpportal import formatting as f


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.999999999998"), "1"),
        (Decimal("2.000000000002"), "2"),
        (Decimal("1E+1"), "10"),
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("0.25"), "0.25"),
        (Decimal("0.333333333333"), "0.3333"),
        (Decimal("12345.678"), "12,350"),
        (Decimal("0"), "0"),
        (Fraction(1, 3), "0.3333"),
    ],
)
def test_budget(value, text):
    assert f.budget(value) == text


@pytest.mark.parametrize(
    ("value", "hw", "text"),
    [
        (Decimal("52801.822967529296875"), 7144.035614013672, "52,800"),
        (Decimal("119968.000"), 2.99, "119,968"),
        (119968, 2.99, "119,968"),
        (Decimal("0.000040171073846375336"), 0.0000123, "0.000040"),
        (Decimal("37.51234"), 0.42, "37.51"),
        (Decimal("-3.7"), 1.5, "-3.7"),
        (Decimal("12.5"), None, "12.5"),
        (7, None, "7"),
    ],
)
def test_noisy_rounds_to_the_precision_of_the_halfwidth(value, hw, text):
    assert f.noisy(value, hw) == text


def test_scale_and_halfwidth_use_few_significant_digits():
    assert f.scale(44161725.0674) == "44,200,000"
    assert f.scale(1347.7123) == "1350"
    assert f.halfwidth(7144.035614013672) == "7100"
    assert f.halfwidth(0.0123456) == "0.012"


def test_exact_keeps_every_digit_without_exponent():
    assert f.exact(Decimal("0.999999999998")) == "0.999999999998"
    assert f.exact(Decimal("1E-7")) == "0.0000001"
    assert f.exact(Decimal("1E+1")) == "10"
    assert f.exact(Decimal("1.500")) == "1.5"


def test_percent_and_integer():
    assert f.percent(Decimal("0.95")) == "95 %"
    assert f.integer(Decimal("119968.000")) == "119,968"
    assert f.integer(999, group=False) == "999"


def test_no_exponent_or_repr_ever():
    for value in [1e-12, 1e21, Decimal("1E+30"), Decimal("-1E-30"), Fraction(2, 7)]:
        for text in (f.budget(value), f.scale(value), f.noisy(value, 1e-3), f.exact(value)):
            assert "E" not in text and "e" not in text and "(" not in text, text


def test_non_numbers_are_refused():
    with pytest.raises(TypeError):
        f.budget(True)
    with pytest.raises(ValueError):
        f.budget("nan")
    with pytest.raises(ValueError):
        f.budget(float("inf"))
