"""A Gaussian release of selections only (most common category, quantiles) is pure
epsilon-DP: it is allocated no delta, and it can still be submitted and approved."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dpportal.errors import ValidationFailed
from releases import lifecycle
from tests.releases_support import draft, make_dataset

pytestmark = pytest.mark.django_db

SELECTIONS = [
    {"kind": "argmax", "column": "region"},
    {"kind": "quantiles", "column": "age", "quantiles": "0.5", "step": "5"},
]


@pytest.mark.parametrize("delta", ["0.00001", None])
def test_a_gaussian_release_of_selections_is_submitted_with_delta_zero(
    project, owner, reviewer, delta
):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    extra = {"mechanism": "gaussian", "statistics": SELECTIONS}
    if delta is not None:
        extra["delta"] = delta
    release = draft(project=project, owner=owner, dataset=dataset, **extra)
    assert release.delta == Decimal(0)
    release = lifecycle.release_submit(release=release, actor=owner)
    assert release.status == "submitted"
    assert release.budget_request.delta == Decimal(0)


def test_a_gaussian_release_with_a_noised_statistic_still_needs_delta(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=500)
    with pytest.raises(ValidationFailed, match="needs a delta above 0"):
        draft(
            project=project, owner=owner, dataset=dataset, mechanism="gaussian", delta="0",
            statistics=[*SELECTIONS, {"kind": "count"}],
        )  # fmt: skip
