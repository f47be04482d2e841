"""Direction controls (U+202A-U+202E, U+2066-U+2069) are refused where published text
enters: a column's declared categories and the release builder's title and labels.
The message names the character; the implicit marks right-to-left text needs pass.
"""

from __future__ import annotations

import pytest

from datasets.models import Column
from datasets.services.declaration_columns import declare_column
from dpportal.bidi import BIDI_CONTROLS, bidi_controls_in, shown
from dpportal.errors import ValidationFailed
from releases.services.plan_fields import _text

CONTROLS = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
#: marks, Arabic and Hebrew letters: legitimate right-to-left text
RTL_TEXT = [
    "\u0627\u0644\u0634\u0645\u0627\u0644",
    "\u05e6\u05e4\u05d5\u05df\u200f",
    "a\u200eb\u061c",
]


def test_the_set_is_the_nine_explicit_controls():
    assert set(CONTROLS) == BIDI_CONTROLS and len(BIDI_CONTROLS) == 9


@pytest.mark.parametrize("control", CONTROLS)
def test_a_category_with_a_control_is_refused_naming_it(control):
    column = Column(name="region", suggested_type=Column.Type.STRING)
    spec = {"kind": "categorical", "categories": f"north\nreport{control}slx.exe"}
    errors = declare_column(column, spec)
    code = f"U+{ord(control):04X}"
    assert len(errors) == 1 and code in errors[0], errors
    assert control not in errors[0]  # the message itself shows the code, not the control
    assert f"report<{code}>slx.exe" in errors[0]


def test_right_to_left_categories_are_accepted():
    column = Column(name="region", suggested_type=Column.Type.STRING)
    assert declare_column(column, {"kind": "categorical", "categories": "\n".join(RTL_TEXT)}) == []
    assert column.categories == RTL_TEXT


@pytest.mark.parametrize("control", CONTROLS)
def test_a_release_title_or_label_with_a_control_is_refused(control):
    with pytest.raises(ValidationFailed) as refused:
        _text(f"Income{control} by region", field="label", max_length=200)
    assert f"U+{ord(control):04X}" in str(refused.value.message)
    assert "label" in str(refused.value.message)


def test_right_to_left_titles_pass_and_the_helpers_name_what_they_find():
    for text in RTL_TEXT:
        assert _text(text, field="title", max_length=200) == text
    assert bidi_controls_in("a\u202eb\u2066c\u202e") == [
        "U+202E RIGHT-TO-LEFT OVERRIDE",
        "U+2066 LEFT-TO-RIGHT ISOLATE",
    ]
    assert shown("x\u202ey") == "x<U+202E>y"
