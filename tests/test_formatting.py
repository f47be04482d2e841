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
        (Decimal("1E-7"), "1\u00a0×\u00a010⁻⁷"),
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
    assert f.scale(1347.7123) == "1,350"
    assert f.halfwidth(7144.035614013672) == "7,100"
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


def test_every_quantity_has_its_digits_decided_once():
    assert set(f.QUANTITIES) == set(f.Quantity)
    hw = 108.43
    cases = {
        f.Quantity.EPSILON: (Fraction(1, 6), "0.1667"),
        f.Quantity.DELTA: (Fraction(1, 70_000_000), "1.429\u00a0×\u00a010⁻⁸"),
        f.Quantity.VALUE: (Decimal("4861.3"), "4,860"),  # ± 110: tens
        f.Quantity.HALFWIDTH: (hw, "110"),
        f.Quantity.SCALE: (2083.3, "2,080"),
        f.Quantity.COUNT: (3643, "3,643"),
        f.Quantity.RANK: (996.2, "997"),
        f.Quantity.SHARE: (Decimal("0.95"), "95 %"),
        f.Quantity.BOUND: (250000, "250,000"),
    }
    for quantity, (value, text) in cases.items():
        assert f.text(value, quantity, halfwidth_value=hw) == text, quantity
    # the old functions are the same writers
    assert f.budget(Fraction(1, 6)) == f.epsilon(Fraction(1, 6)) == "0.1667"
    assert f.halfwidth(hw) == f.text(hw, f.Quantity.HALFWIDTH) == "110"


def test_one_quantity_has_the_same_digits_whatever_its_stored_form():
    # an epsilon stored as 0.16666666667 and one computed as 1/6 read the same
    shown = {f.epsilon(v) for v in (Decimal("0.16666666667"), Decimal("0.166666666666"),
                                    Fraction(1, 6), 1 / 6)}  # fmt: skip
    assert shown == {"0.1667"}


@pytest.mark.parametrize(
    ("value", "people", "machine"),
    [
        (Fraction(1, 70_000_000), "1.429\u00a0×\u00a010⁻⁸", "0.00000001429"),
        (Decimal("0.000000014285714285714285"), "1.429\u00a0×\u00a010⁻⁸", "0.00000001429"),
        (Decimal("0.000001"), "1\u00a0×\u00a010⁻⁶", "0.000001"),
        (Decimal("0.00001"), "1\u00a0×\u00a010⁻⁵", "0.00001"),
        (Decimal("0.0002968"), "2.968\u00a0×\u00a010⁻⁴", "0.0002968"),
        (Decimal("0.001"), "0.001", "0.001"),
        (Decimal("0.05"), "0.05", "0.05"),
        (Decimal("0"), "0", "0"),
        (Decimal("1"), "1", "1"),
    ],
)
def test_delta_is_readable_for_people_and_plain_for_programs(value, people, machine):
    assert f.delta(value) == people
    assert f.delta(value, group=False) == machine
    assert "e" not in f.delta(value).lower()


def test_every_whole_part_of_a_thousand_or_more_is_grouped():
    assert f.integer(999) == "999"
    assert f.integer(8000) == "8,000"
    assert f.integer(3643) == "3,643"
    assert f.integer(12357) == "12,357"
    assert f.noisy(Decimal("9398.2"), 78) == "9,398"
    assert f.noisy(-6400, 6200) == "-6,400"
    assert f.halfwidth(6213.7) == "6,200"
    assert f.exact(250000, group=True) == "250,000"
    # machine text (CSV) is never grouped
    assert f.integer(8000, group=False) == "8000"
    assert f.halfwidth(6213.7, group=False) == "6200"
    assert f.exact(250000) == "250000"


def test_a_rank_error_is_whole_records_rounded_up():
    assert f.rank(996.01) == "997"
    assert f.rank(997) == "997"
    assert f.rank(1234.5) == "1,235"
    assert f.rank(1234.5, group=False) == "1235"


def test_scientific_keeps_the_sign_and_the_digits():
    assert f.scientific(Decimal("-0.00012345"), 3) == "-1.23\u00a0×\u00a010⁻⁴"
    assert f.scientific(0, 3) == "0"


def test_template_filters_write_each_quantity():
    from django.template import Context, Template
    from django.utils import translation

    page = Template(
        "{% load dpformat %}{{ d|delta }}|{{ e|epsilon }}|{{ r|rank }}|{{ edges|exact_list }}|"
        "{{ b|exact }}|{{ n|integer }}"
    )
    values = {
        "d": "0.000000014285714285714285",
        "e": "0.166666666666",
        "r": 996.2,
        "edges": ["0", "20000", "250000"],
        "b": "250000",
        "n": 3643,
    }
    with translation.override("en"):
        shown = page.render(Context(values))
    assert shown == "1.429\u00a0×\u00a010⁻⁸|0.1667|997|0; 20,000; 250,000|250,000|3,643"
