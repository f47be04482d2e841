"""The builder's preview writes its amounts for people as dpportal.formatting does.

The exact strings stay for programs (cost, epsilon, delta); beside them, each amount a
person reads in the builder's table and cost line is a *_text with its quantity's digits.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from dpportal import formatting
from releases.services.preview import release_preview
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

SPLIT = [{"kind": "count"}, {"kind": "histogram", "column": "region"}, {"kind": "count"}]


def test_the_preview_writes_each_amount_as_its_quantity(project, owner):
    project.epsilon_cap = Decimal("5")
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner, rows=200)
    preview = release_preview(
        project=project,
        data=builder_data(dataset, statistics=SPLIT, epsilon="0.5", mechanism="gaussian",
                          delta="0.00000003"),
    )  # fmt: skip
    for stat in preview["statistics"]:
        # a third of 0.5 and of 3e-8: exact for programs, readable for people
        assert stat["epsilon"].startswith("0.16666")
        assert stat["epsilon_text"] == "0.1667"
        assert stat["delta"].startswith("0.0000000099") or stat["delta"].startswith("0.00000001")
        assert stat["delta_text"] == formatting.delta(Decimal(stat["delta"]))
        assert "10⁻⁸" in stat["delta_text"] and "0.000" not in stat["delta_text"]
        assert stat["cells_text"] == formatting.integer(stat["cells"])
    assert preview["cost"]["epsilon_text"] == "0.5"
    assert preview["cost"]["delta_text"] == "3\u00a0×\u00a010⁻⁸"
    assert preview["budget"]["delta_remaining_text"] == "1\u00a0×\u00a010⁻⁵"  # the cap: 0.00001
    assert preview["budget"]["epsilon_remaining_text"] == "5"
