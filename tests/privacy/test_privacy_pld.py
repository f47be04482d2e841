"""The tight accountant (dpportal.privacy.pld) against dp_accounting itself and closed forms.

No statistical assertion here: every number is deterministic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as lib
from dp_accounting.pld.common import DifferentialPrivacyParameters

from dpportal.privacy import noise, pld, pld_pmfs
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import (
    MechanismRecord,
    merge_records,
    records_from_explanation,
)

D = pld.DISCRETISATION
GAUSS_1 = MechanismRecord.discrete_gaussian(
    sensitivity=1, sigma=Fraction("4.231"), epsilon=1, delta=Fraction("1e-6")
)


def _library_pld(record: MechanismRecord):
    """The same mechanism built by dp_accounting's own factories (connect-the-dots)."""
    if record.kind == "discrete_laplace":
        return lib.from_discrete_laplace_mechanism(
            1 / float(record.scale), int(record.sensitivity),
            value_discretization_interval=D, use_connect_dots=True,
        )  # fmt: skip
    if record.kind == "discrete_gaussian":
        return lib.from_discrete_gaussian_mechanism(
            float(record.sigma), int(record.sensitivity),
            value_discretization_interval=D, use_connect_dots=True,
        )  # fmt: skip
    return lib.from_privacy_parameters(
        DifferentialPrivacyParameters(float(record.epsilon), float(record.delta)),
        value_discretization_interval=D,
    )


def _library_epsilon(records: list[MechanismRecord], delta: float) -> float:
    total = None
    for record in records:
        one = _library_pld(record)
        one = one.self_compose(record.count) if record.count > 1 else one
        total = one if total is None else total.compose(one)
    return total.get_epsilon_for_delta(delta)


LAP = MechanismRecord.discrete_laplace(sensitivity=1, scale=Fraction(10, 3))
LAP3 = MechanismRecord.discrete_laplace(sensitivity=3, scale=Fraction(5))
GAUSS_L3 = MechanismRecord.discrete_gaussian(
    sensitivity=3, sigma=Fraction("12.9"), epsilon=1, delta=Fraction("1e-6")
)
RNM = MechanismRecord.report_noisy_max(epsilon=Fraction(1, 2))


@pytest.mark.parametrize(
    "records",
    [
        [LAP],
        [GAUSS_1],
        [RNM],
        [LAP.times(500)],
        [GAUSS_1.times(500)],
        [RNM.times(100)],
        [LAP.times(20), GAUSS_1.times(30), RNM.times(5)],
        [LAP3.times(7), GAUSS_L3.times(40), GAUSS_1, RNM.times(50), LAP.times(3)],
        [GAUSS_1.times(250), LAP.times(250)],
    ],
)
@pytest.mark.parametrize("delta", ["1e-5", "1e-8"])
def test_matches_dp_accounting_directly(records, delta):
    """Same PLD composition through dp_accounting's factories: equal to 1e-4 (float, rounding)."""
    ours = pld.pld_epsilon(records, Fraction(delta))
    reference = _library_epsilon(records, float(delta) * (1 - pld.DELTA_MARGIN))
    assert ours == pytest.approx(reference, rel=1e-4, abs=1e-4)


@pytest.mark.parametrize("epsilon", [Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(3)])
@pytest.mark.parametrize("k", [1, 2, 10, 100])
def test_k_pure_releases_never_exceed_k_epsilon(epsilon, k):
    records = [
        MechanismRecord.discrete_laplace(sensitivity=1, scale=1 / epsilon, count=k),
        MechanismRecord.report_noisy_max(epsilon=epsilon, count=k),
    ]
    for record in records:
        assert pld.pld_epsilon([record], Fraction(1, 10**6)) <= float(k * epsilon) + 1e-9
        spend = pld.project_spend([record], Fraction(1, 10**6))
        assert spend.epsilon <= float(k * epsilon)


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity"),
    [("1", "1e-6", 1), ("0.3", "1e-5", 1), ("2", "1e-8", 3), ("0.5", "1e-6", 1048576)],
)
def test_one_gaussian_release_reproduces_its_calibration(epsilon, delta, sensitivity):
    spec = noise.count_noise(mechanism="gaussian", epsilon=epsilon, delta=delta)
    if sensitivity != 1:
        spec = noise._build(
            statistic="sum", mechanism="gaussian", epsilon=epsilon, delta=delta,
            l1=sensitivity, l2=sensitivity, bound=1, cells=1,
        )  # fmt: skip
    (record,) = records_from_explanation(spec.describe())
    got = pld.pld_epsilon([record], Fraction(delta))
    # sigma is rounded up to 4 digits and meets delta with a margin: eps slightly below
    assert float(epsilon) - 0.01 <= got <= float(epsilon) + D


def test_issue_example_ten_gaussian_releases():
    """Issue 13: ten (1, 1e-6) Gaussian releases (sigma 4.231) are about (3.13, 1e-5)-DP."""
    assert pld.pld_epsilon([GAUSS_1.times(10)], Fraction("1e-5")) == pytest.approx(3.13, abs=0.01)
    assert pld.pld_epsilon([GAUSS_1] * 70, Fraction("1e-5")) == pytest.approx(9.86, abs=0.01)


def test_cap_admits_five_times_more_gaussian_releases_than_basic():
    cap = dict(epsilon_cap=Fraction(10), delta_cap=Fraction("1e-5"))
    fit = pld.releases_that_fit([], [GAUSS_1], **cap)
    assert fit >= 5 * 10  # basic composition: 10 releases
    last_in = pld.within_cap([GAUSS_1.times(fit - 1)], [GAUSS_1], **cap)
    assert last_in.within and last_in.within_pld and not last_in.within_basic
    assert last_in.fit == 1
    first_out = pld.within_cap([GAUSS_1.times(fit)], [GAUSS_1], **cap)
    assert not first_out.within and first_out.fit == 0
    assert first_out.after.pld_epsilon > 10 > last_in.after.pld_epsilon


def test_basic_bound_wins_when_it_is_tighter():
    """One pure release: both bounds hold; the spend is the smaller one, within either way."""
    check = pld.within_cap(
        [], [MechanismRecord.report_noisy_max(epsilon=Fraction(1, 3))],
        epsilon_cap=Fraction(1, 3), delta_cap=0,
    )  # fmt: skip
    assert check.within_basic and check.within
    assert check.after.epsilon <= float(Fraction(1, 3))
    assert check.fit == 1


def test_basic_fit_is_exact_and_history_counts():
    generic = MechanismRecord.generic(epsilon=Fraction(1, 10), delta=Fraction(1, 10**7))
    check = pld.within_cap(
        [generic.times(30)], [generic], epsilon_cap=Fraction(5), delta_cap=Fraction(1, 10**5)
    )
    assert check.before.basic.epsilon == 3 and check.after.basic.epsilon == Fraction(31, 10)
    assert check.within_basic and check.fit >= 20  # (5 - 3) / 0.1 by basic composition


def test_connect_dots_pmf_equals_the_library_construction():
    deltas = np.array([0.9, 0.5, 0.3, 0.1, 0.01, 1e-5, 0.0])
    ours = pld_pmfs.connect_dots_pmf(-3, deltas)
    ref = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(D, -3, 3, deltas).to_dense_pmf()
    assert ours._lower_loss == ref._lower_loss
    np.testing.assert_allclose(ours._probs, ref._probs, rtol=1e-12, atol=1e-15)
    assert ours._infinity_mass == ref._infinity_mass


def test_composition_equals_the_library_composition():
    a = pld_pmfs.mechanism_pld(GAUSS_L3)._pmf_remove
    b = pld_pmfs.mechanism_pld(LAP3.times(1))._pmf_remove.self_compose(40, pld_pmfs.TAIL_TRUNCATION)
    ours = pld_pmfs._compose_pmfs(a, b)
    ref = a.compose(b, tail_mass_truncation=pld_pmfs.TAIL_TRUNCATION)
    assert ours._lower_loss == ref._lower_loss
    np.testing.assert_allclose(ours._probs, ref._probs, rtol=1e-9, atol=1e-15)
    assert ours._infinity_mass == pytest.approx(ref._infinity_mass, rel=1e-9, abs=1e-18)


def test_records_from_explanations_of_every_statistic():
    count = noise.count_noise(mechanism="laplace", epsilon="0.5", contribution_bound=2)
    (rec,) = records_from_explanation(count.describe())
    assert (rec.kind, rec.sensitivity, rec.scale, rec.epsilon) == (
        "discrete_laplace", 2, 4, Fraction(1, 2)
    )  # fmt: skip
    hist = noise.count_noise(
        mechanism="gaussian", epsilon=1, delta="1e-6", contribution_bound=3, cells=5,
        statistic="histogram",
    )  # fmt: skip
    (rec,) = records_from_explanation(hist.describe())
    assert rec.kind == "discrete_gaussian" and rec.sensitivity == 3 and rec.sigma == hist.sigma
    argmax = noise.argmax_noise(epsilon="0.2", cells=4)
    assert records_from_explanation(argmax.describe())[0].kind == "report_noisy_max"
    mean = {"statistic": "mean", "sum": count.describe(), "count": count.describe()}
    assert len(merge_records(records_from_explanation(mean))) == 1
    assert merge_records(records_from_explanation(mean))[0].count == 2
    other = records_from_explanation({"statistic": "quantile", "epsilon": "0.3", "delta": "0"})
    assert other[0].kind == "generic_eps_delta" and other[0].epsilon == Fraction(3, 10)
    assert MechanismRecord.from_dict(rec.to_dict()) == rec


def test_bad_records_are_refused():
    with pytest.raises(PrivacyParameterError):
        MechanismRecord.discrete_laplace(sensitivity=Fraction(1, 2), scale=1)
    with pytest.raises(PrivacyParameterError):
        MechanismRecord.discrete_gaussian(sensitivity=1, sigma=2, epsilon=1, delta=0)
    with pytest.raises(PrivacyParameterError):
        MechanismRecord("discrete_laplace", epsilon=Fraction(1, 10), sensitivity=1, scale=1)
    with pytest.raises(PrivacyParameterError):
        MechanismRecord.generic(epsilon=1, count=0)
    with pytest.raises(PrivacyParameterError):
        pld.pld_epsilon([LAP], 1)


def test_very_large_epsilon_falls_back_to_generic_and_stays_valid():
    big = MechanismRecord.discrete_laplace(sensitivity=1, scale=Fraction(1, 500))
    assert pld.pld_epsilon([big.times(2)], Fraction(1, 10**6)) <= 1000 + 2 * D
    assert math.isfinite(pld.pld_epsilon([big], Fraction(1, 10**6)))
