"""The preview and the computed release agree: same noise, same half-widths, per kind.

The preview goes through dpportal.privacy.planning; the release's explanation
comes from the mechanisms. For every kind the preview's half-width must equal
the one accuracy.result_halfwidth reads off the stored explanation (for a mean,
the pivot half-width of the stored parts' laws), for both mechanisms and with
a contribution bound L > 1.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpportal.privacy import accuracy, mean_pivot
from releases import compute, lifecycle, services
from releases.models import ReleaseResult
from tests.releases_support import full_statistics, make_dataset, submitted

pytestmark = pytest.mark.django_db

CASES = [
    pytest.param({"mechanism": "laplace"}, 1, id="laplace"),
    pytest.param({"mechanism": "gaussian", "delta": "0.000007"}, 1, id="gaussian"),
    pytest.param({"mechanism": "laplace", "confidence": "0.90"}, 3, id="laplace-L3"),
    pytest.param({"mechanism": "gaussian", "delta": "0.000007"}, 2, id="gaussian-L2"),
]


def mean_halfwidth(explanation: dict, *, confidence: Fraction, n: int) -> float:
    """planning's mean half-width, from the stored parts' own noise laws and grid."""
    return float(
        mean_pivot.mean_pivot_halfwidth(
            n=Fraction(n),
            sum_law=mean_pivot.NoiseLaw.of_explanation(explanation["sum"]),
            count_law=mean_pivot.NoiseLaw.of_explanation(explanation["count"]),
            granularity=Fraction(explanation["sum"]["granularity"]),
            lower=Fraction(explanation["lower"]),
            upper=Fraction(explanation["upper"]),
            confidence=confidence,
        )
    )


@pytest.mark.parametrize(("extra", "bound"), CASES)
def test_preview_halfwidths_equal_the_computed_release(project, owner, reviewer, extra, bound):
    dataset = make_dataset(
        project=project, owner=owner, rows=3000, id_column="person" if bound > 1 else "",
        bound=bound, people=1000,
    )  # fmt: skip
    release = submitted(project=project, owner=owner, dataset=dataset, **extra)
    preview = services.release_preview(
        project=project, data=services.release_form_data(release=release)
    )
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    payload = ReleaseResult.objects.get(release=release).payload
    confidence = Fraction(payload["confidence"])
    kinds = []
    for shown, stored in zip(preview["statistics"], payload["statistics"], strict=True):
        explanation = stored["explanation"]
        kinds.append(shown["kind"])
        if shown["kind"] == "mean":
            expected = mean_halfwidth(explanation, confidence=confidence, n=shown["n_guess"])
            assert shown["halfwidth"] == pytest.approx(expected, rel=1e-12)
            assert Fraction(explanation["sum_share"]) == Fraction(1, 2)
            continue
        assert explanation["cells"] == shown["cells"]
        assert explanation["contribution_bound"] == bound
        assert shown["halfwidth"] == accuracy.result_halfwidth(explanation, confidence=confidence)
        if shown["kind"] == "histogram":
            assert shown["halfwidth_simultaneous"] == accuracy.result_halfwidth(
                explanation, confidence=confidence, simultaneous=True
            )
            assert shown["halfwidth_simultaneous"] > shown["halfwidth"]
    assert kinds == [s["kind"] for s in full_statistics()]


@pytest.mark.parametrize("kind", ["count", "histogram", "sum", "mean"])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_target_halfwidth_is_met_by_the_smallest_epsilon(project, owner, kind, mechanism):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    stat = {"kind": kind, "target_halfwidth": "40"}
    if kind == "histogram":
        stat["column"] = "region"
    if kind in ("sum", "mean"):
        stat.update(column="age", n_guess=4000)
    data = {
        "title": "t", "dataset": dataset.pk, "mechanism": mechanism, "confidence": "0.95",
        "epsilon": "1", "delta": "0.000005", "statistics": [stat],
    }  # fmt: skip
    plan = services.release_plan_parse(project=project, data=data)
    (solved,) = plan.statistics
    shown = services.plan_preview(plan=plan)["statistics"][0]
    assert shown["halfwidth"] <= 40
    # one step of the third significant digit less misses the target
    digits = solved.epsilon.adjusted() - 2
    smaller = solved.epsilon - type(solved.epsilon)(1).scaleb(digits)
    solved.epsilon = smaller
    from releases import dp

    assert dp.statistic_accuracy(plan=plan, stat=solved)["halfwidth"] > 40


def test_unreachable_target_is_refused_with_a_message(project, owner):
    from dpportal.errors import ValidationFailed

    dataset = make_dataset(project=project, owner=owner, rows=200)
    data = {
        "title": "t", "dataset": dataset.pk, "mechanism": "laplace", "confidence": "0.95",
        "epsilon": "1",
        "statistics": [{"kind": "sum", "column": "income", "target_halfwidth": "1e-9"}],
    }  # fmt: skip
    with pytest.raises(ValidationFailed, match="would need an epsilon above 1000"):
        services.release_plan_parse(project=project, data=data)
