"""Grouped count / sum / mean: sensitivity by brute force, privacy audit, interval coverage.

False-failure rates:
- audits (M2): LB <= eps fails with probability <= 1e-6 (conftest.audit_lower_bound);
- coverage (C1, at the mechanism level): >= 300 seeded runs per case, coverage >=
  nominal - 3 SE (SE = sqrt(c (1 - c) / R)). For an interval whose true coverage is
  exactly nominal this fails with probability ~1.35e-3 per check (normal
  approximation); ours are conservative (discrete tails rounded outward, union
  bounds), which lowers it, and the seeds are fixed, so the outcome is reproducible.
  The per-cell count/sum checks also bound coverage from above (<= exact + 4.75 SE,
  1e-6): the intervals are not vacuous.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy import grouped as grouped_module
from dpportal.privacy.accuracy import mean_interval_from_parts, result_halfwidth, spec_halfwidth
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.grouped import (
    GroupedAggregator,
    group_sensitivity,
    grouped_count_noise,
    grouped_mean_noise,
    grouped_sum_noise,
)
from dpportal.privacy.grouped_release import (
    cell_confidence,
    grouped_mean_cells,
    grouped_mean_intervals,
    release_grouped_counts,
    release_grouped_means,
    release_grouped_sums,
)
from dpportal.privacy.mean_pivot import NoiseLaw, pivot_reaches
from dpportal.privacy.mechanisms import release_mean
from dpportal.privacy.noise import sum_noise
from dpportal.privacy.sensitivity import MAX_ROWS, rounding_gap, sum_granularity
from dpportal.privacy.tails import dgauss_two_sided_tail, dlap_tail

EPS = Fraction(1)
CONFIDENCES = ("0.9", "0.95", "0.99")

# ------------------------------------------------------------------ sensitivity (brute force)

VALUES = (-5.0, 0.0, 3.0, 7.0)  # clipped to [-2, 3] on the unit grid: M_u = 3
BASES = ([], [(0, 7.0), (1, -2.0), (2, 1.0)])


def _aggregate(rows, groups):
    agg = GroupedAggregator(groups, lower=-2, upper=3, granularity=1)
    if rows:
        idx, vals = zip(*rows, strict=True)
        agg.add(np.array(idx), np.array(vals))
    return np.array(agg.counts), np.array(agg.sum_units)


def _people(groups, bound, per_group):
    """Every person: 1..L rows of (group, value), at most per_group rows in one group."""
    cells = list(itertools.product(range(groups), VALUES))
    for rows in range(1, bound + 1):
        for person in itertools.combinations_with_replacement(cells, rows):
            if max(np.bincount([g for g, _ in person], minlength=groups)) <= per_group:
                yield list(person)


@pytest.mark.parametrize(
    ("groups", "bound", "per_group"),
    [(1, 1, None), (3, 1, None), (1, 3, None), (3, 2, None), (3, 3, None), (3, 3, 1), (2, 4, 3)],
)
def test_grouped_sensitivities_by_brute_force(groups, bound, per_group):
    """Over small datasets D and every person with <= L rows (<= L_g per group), the
    count and sum vectors of D + person move by at most the stated l1 and l2, and
    the maxima are attained (so the derivation is tight)."""
    sens = group_sensitivity(contribution_bound=bound, groups=groups, group_bound=per_group)
    seen = {"c1": 0, "c2": 0, "s1": 0, "s2": 0}
    for base in BASES:
        base = [(g % groups, v) for g, v in base]
        counts, sums = _aggregate(base, groups)
        for person in _people(groups, bound, per_group or bound):
            c2, s2 = _aggregate(base + person, groups)
            dc, ds = c2 - counts, s2 - sums
            seen["c1"] = max(seen["c1"], int(np.abs(dc).sum()))
            seen["c2"] = max(seen["c2"], int((dc**2).sum()))
            seen["s1"] = max(seen["s1"], int(np.abs(ds).sum()))
            seen["s2"] = max(seen["s2"], int((ds**2).sum()))
    assert seen == {
        "c1": sens.l1,
        "c2": sens.l2_squared,
        "s1": sens.l1 * 3,
        "s2": sens.l2_squared * 9,
    }
    count_spec = grouped_count_noise(
        mechanism="gaussian",
        epsilon=1,
        delta="1e-6",
        contribution_bound=bound,
        groups=groups,
        group_bound=per_group,
    )
    sum_spec = grouped_sum_noise(
        lower=-2,
        upper=3,
        granularity=1,
        mechanism="laplace",
        epsilon="0.5",
        contribution_bound=bound,
        groups=groups,
        group_bound=per_group,
    )
    assert count_spec.l2_sensitivity**2 >= seen["c2"]
    assert count_spec.l2_sensitivity**2 <= seen["c2"] * (1 + Fraction(1, 10**4))
    assert sum_spec.scale == Fraction(seen["s1"]) / Fraction(1, 2)
    assert count_spec.calibration == ("zcdp_cor13" if groups > 1 and sens.l1 > 1 else "cks_thm7")


def test_group_bound_never_exceeds_L_and_shrinks_only_l2():
    with pytest.raises(PrivacyParameterError):
        group_sensitivity(contribution_bound=2, groups=3, group_bound=3)
    plain = group_sensitivity(contribution_bound=9, groups=10)
    bounded = group_sensitivity(contribution_bound=9, groups=10, group_bound=2)
    assert (plain.l1, plain.l2_squared) == (9, 81)
    assert (bounded.l1, bounded.l2_squared) == (9, 4 * 4 + 1)
    few_groups = group_sensitivity(contribution_bound=9, groups=2, group_bound=2)
    assert (few_groups.l1, few_groups.l2_squared) == (4, 8)


def test_aggregator_matches_numpy_and_streams():
    rng = np.random.default_rng(3)  # data, not noise
    idx = rng.integers(0, 7, 30_001)
    values = rng.normal(40, 30, idx.size)
    gamma = sum_granularity(0, 100, epsilon="0.5")
    agg = GroupedAggregator(7, lower=0, upper=100, granularity=gamma)
    for a, b in zip(np.array_split(idx, 5), np.array_split(values, 5), strict=True):
        agg.add(a, b)
    units = np.rint(np.clip(values / float(gamma), 0, 100 / float(gamma))).astype(np.int64)
    assert agg.counts == np.bincount(idx, minlength=7).tolist()
    assert agg.sum_units == [int(units[idx == g].sum()) for g in range(7)]
    with pytest.raises(ValueError):
        agg.add(np.array([7]), np.array([1.0]))


def test_aggregator_sums_exactly_on_the_finest_grid():
    """On a grid where one row is ~2**51 units, sums of many rows (either sign) stay exact."""
    gamma = sum_granularity(-100, 100, epsilon=10, rows_bound=MAX_ROWS)
    assert 100 / gamma >= 2**51
    rows = (100.0, -12.3, 99.99, -1e-9, -100.0)
    idx = np.array([0, 1, 0, 2, 2] * 40_000)
    agg = GroupedAggregator(3, lower=-100, upper=100, granularity=gamma)
    for part in np.array_split(np.arange(idx.size), 3):
        agg.add(idx[part], np.array(rows * 40_000)[part])
    exact = [round(Fraction(v) / gamma) for v in rows]
    assert agg.sum_units == [
        40_000 * (exact[0] + exact[2]),
        40_000 * exact[1],
        40_000 * (exact[3] + exact[4]),
    ]


def test_grouped_sums_on_the_released_sum_grid_carry_the_rounding_bound():
    """The released-sum grid records MAX_ROWS * rounding_gap (the single sum's rule), a
    small share of the noise; a coarser grid records none."""
    fine = sum_granularity(-5, 10, epsilon=EPS, contribution_bound=2, rows_bound=MAX_ROWS)
    kw = dict(lower=-5, upper=10, mechanism="laplace", epsilon=EPS, contribution_bound=2)
    spec = grouped_sum_noise(granularity=fine, groups=3, **kw)
    single = sum_noise(granularity=fine, **kw)
    assert spec.rounding_bound == single.rounding_bound == MAX_ROWS * rounding_gap(-5, 10, fine)
    assert spec.rounding_bound <= spec.scale * fine / 2**10
    h = result_halfwidth(spec.describe(), confidence="0.95")
    assert h == float(spec_halfwidth(spec, "0.95") * fine + spec.rounding_bound)
    coarse = sum_granularity(-5, 10, epsilon=EPS, contribution_bound=2)
    assert grouped_sum_noise(granularity=coarse, groups=3, **kw).rounding_bound is None


# ------------------------------------------------------------------ privacy audit (M2)

R = 100_000


def _sum_lb(stat, seeded, *, spread: bool, mechanism: str = "laplace", group_bound=None):
    bound, lower, upper = 2, Fraction(-5), Fraction(10)
    gamma = sum_granularity(lower, upper, epsilon=EPS, contribution_bound=bound)
    if mechanism == "gaussian":  # a coarser grid: same calibration in units, faster sampling
        gamma = Fraction(1)
    spec = grouped_sum_noise(
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=EPS,
        delta=0 if mechanism == "laplace" else "1e-5",
        contribution_bound=bound,
        groups=3,
        group_bound=group_bound,
    )
    top = int(upper / gamma)
    truth = np.array([1000, 2000, 3000]) * top
    person = np.array([top, top, 0]) if spread else np.array([2 * top, 0, 0])
    cells = 2  # cells are iid: draw only the two the person can touch
    d = truth[:cells] + spec.sample((R, cells), seeded(81))
    d_prime = (truth + person)[:cells] + spec.sample((R, cells), seeded(82))
    if spread:  # the person's rows are in cells 0 and 1: audit their total
        a, b = d[:, 0] + d[:, 1], d_prime[:, 0] + d_prime[:, 1]
        centre = int(truth[0] + truth[1])
    else:
        a, b, centre = d[:, 0], d_prime[:, 0], int(truth[0])
    width = float(spec.scale if mechanism == "laplace" else spec.sigma) * (2 if spread else 1)
    shift = int(person.sum())
    points = [centre + width * u for u in np.linspace(-3, 4, 24)]
    points += [centre + shift * j / 2 for j in range(7)]
    thresholds = sorted({float(np.ceil(p)) for p in points})
    delta = 0.0 if mechanism == "laplace" else 1e-5
    return stat.audit_lower_bound(a, b, thresholds, delta=delta)


@pytest.mark.parametrize("spread", [False, True], ids=["one_group", "two_groups"])
def test_grouped_sum_audit_passes(spread, stat, seeded):
    """LB <= eps for grouped sums, L = 2 rows at the upper bound in one or two groups."""
    assert _sum_lb(stat, seeded, spread=spread) <= EPS


def test_grouped_sum_gaussian_with_group_bound_audit_passes(stat, seeded):
    """(eps, delta) audit of the Gaussian with L_g = 1 (l2 = sqrt(2) M): LB <= eps."""
    assert _sum_lb(stat, seeded, spread=True, mechanism="gaussian", group_bound=1) <= EPS


def test_grouped_sum_audit_catches_an_ignored_contribution_bound(monkeypatch, stat, seeded):
    """Power: noise for L = 1 while a person has 2 rows in one group: the true loss is
    2 eps; observed LB 1.93 (the correct variants: 0.95 one group, 0.68 two groups,
    0.37 for the Gaussian, whose (eps, delta) audit is looser at this sample size)."""
    real = grouped_module.group_sensitivity
    monkeypatch.setattr(
        grouped_module,
        "group_sensitivity",
        lambda *, contribution_bound, groups, group_bound: real(
            contribution_bound=1, groups=groups
        ),
    )
    assert _sum_lb(stat, seeded, spread=False) > EPS


def test_releases_use_the_audited_specs(seeded):
    gamma = sum_granularity(-5, 10, epsilon=EPS, contribution_bound=2)
    kw = dict(lower=-5, upper=10, granularity=gamma, mechanism="laplace", epsilon=EPS)
    result = release_grouped_sums([5, 6, 7], contribution_bound=2, rng=seeded(90), **kw)
    spec = grouped_sum_noise(contribution_bound=2, groups=3, **kw)
    assert result.spec == spec
    assert list(result.values) == (np.array([5, 6, 7]) + spec.sample(3, seeded(90))).tolist()
    mean = release_grouped_means(
        [5, 6], [1, 2], contribution_bound=2, confidence="0.9", rng=seeded(91), **kw
    )
    assert (mean.sums.spec, mean.counts.spec) == grouped_mean_noise(
        contribution_bound=2, groups=2, **kw
    )
    assert sum(s.epsilon for s in (mean.sums.spec, mean.counts.spec)) == EPS


# ------------------------------------------------------------------ coverage (C1)


def _coverage_floor(nominal: float, runs: int) -> float:
    return nominal - 3 * math.sqrt(nominal * (1 - nominal) / runs)


def _exact_cell_miss(spec, units: int) -> float:
    if spec.mechanism == "laplace":
        return float(dlap_tail(spec.scale, units))
    return dgauss_two_sided_tail(spec.sigma, units)


VECTOR_CASES = [
    ("count", "laplace", 0, None),
    ("count", "gaussian", "1e-6", 1),
    ("sum", "laplace", 0, None),
    ("sum", "gaussian", "1e-6", None),
]


@pytest.mark.parametrize(("kind", "mechanism", "delta", "group_bound"), VECTOR_CASES)
def test_grouped_count_and_sum_coverage(kind, mechanism, delta, group_bound, seeded):
    """R = 2,000 releases of G = 6 cells, L = 3: per cell (12,000 cell-draws) and all
    cells at once, at 90/95/99 %: coverage >= nominal - 3 SE; per cell also <= the
    exact coverage + 4.75 SE (not vacuous)."""
    runs, groups = 2000, 6
    truth = np.arange(groups) * 50 + 7
    kw = dict(mechanism=mechanism, epsilon="0.7", delta=delta, contribution_bound=3)
    if kind == "count":
        release = release_grouped_counts(truth, group_bound=group_bound, rng=seeded(100), **kw)
    else:
        gamma = sum_granularity(0, 20, epsilon="0.7", contribution_bound=3)
        release = release_grouped_sums(
            truth,
            lower=0,
            upper=20,
            granularity=gamma,
            group_bound=group_bound,
            rng=seeded(100),
            **kw,
        )
    spec, explanation = release.spec, release.to_dict()
    gamma = float(spec.granularity)
    noise = np.abs(spec.sample((runs, groups), seeded(101))).astype(np.float64) * gamma
    for conf in CONFIDENCES:
        nominal = float(Fraction(conf))
        per_cell = result_halfwidth(explanation, confidence=conf)
        together = result_halfwidth(explanation, confidence=conf, simultaneous=True)
        covered = noise <= per_cell
        rate = covered.mean()
        assert rate >= _coverage_floor(nominal, runs * groups), (conf, rate)
        exact = 1 - _exact_cell_miss(spec, round(per_cell / gamma))
        assert rate <= exact + 4.75 * math.sqrt(exact * (1 - exact) / (runs * groups))
        assert (noise <= together).all(axis=1).mean() >= _coverage_floor(nominal, runs)


@pytest.mark.parametrize(("mechanism", "delta"), [("laplace", 0), ("gaussian", "1e-6")])
@pytest.mark.parametrize("n", [40, 3000], ids=["small_n", "large_n"])
def test_grouped_mean_coverage(mechanism, delta, n, seeded):
    """R = 400 runs of a 4-group mean (L = 2), per cell and simultaneous, at 90/95/99 %:
    coverage >= nominal - 3 SE (per cell over 1,600 cell-runs). Each run is a release's
    noisy parts (the specs of a real release, checked below) read through the same
    function grouped_mean_intervals uses (each cell's pivot, from the explanation's laws)."""
    runs, groups, lower, upper = 400, 4, Fraction(0), Fraction(100)
    gamma = sum_granularity(lower, upper, epsilon=Fraction(1, 2), contribution_bound=2)
    counts = [n, n // 2, n * 2, max(n // 4, 1)]
    means = [Fraction(30), Fraction(55), Fraction(80), Fraction(97)]
    sums = [int(m * c / gamma) for m, c in zip(means, counts, strict=True)]
    truth = [s * gamma / c for s, c in zip(sums, counts, strict=True)]
    kw = dict(
        lower=lower,
        upper=upper,
        granularity=gamma,
        mechanism=mechanism,
        epsilon=1,
        delta=delta,
        contribution_bound=2,
    )
    release = release_grouped_means(sums, counts, confidence="0.9", rng=seeded(110), **kw)
    explanation = release.to_dict()
    sum_spec, count_spec = grouped_mean_noise(groups=groups, **kw)
    assert (release.sums.spec, release.counts.spec) == (sum_spec, count_spec)
    for simultaneous, key in ((False, "intervals"), (True, "simultaneous_intervals")):
        assert [
            list(c[1:])
            for c in grouped_mean_intervals(
                explanation, confidence="0.9", simultaneous=simultaneous
            )
        ] == explanation[key]
    laws = dict(sum_law=NoiseLaw.of_spec(sum_spec), count_law=NoiseLaw.of_spec(count_spec))
    noisy_sums = np.array(sums) + sum_spec.sample((runs, groups), seeded(111))
    noisy_counts = np.array(counts) + count_spec.sample((runs, groups), seeded(112))
    for conf in CONFIDENCES:
        nominal = Fraction(conf)
        for simultaneous in (False, True):
            level = cell_confidence(nominal, groups if simultaneous else 1)
            inside = np.array(
                [
                    [
                        lo <= t <= hi
                        for t, (_, lo, hi, _) in zip(
                            truth,
                            grouped_mean_cells(
                                s,
                                c,
                                granularity=gamma,
                                lower=lower,
                                upper=upper,
                                confidence=level,
                                **laws,
                            ),  # fmt: skip
                            strict=True,
                        )
                    ]
                    for s, c in zip(noisy_sums.tolist(), noisy_counts.tolist(), strict=True)
                ]
            )
            if simultaneous:
                assert inside.all(axis=1).mean() >= _coverage_floor(float(nominal), runs), conf
            else:
                assert inside.mean() >= _coverage_floor(float(nominal), runs * groups), conf


def test_grouped_mean_cells_past_the_pivot_use_interval_arithmetic():
    """At a confidence the pivot cannot certify (all of 100,000 cells at once at 99 %:
    beta 1e-7 per cell) the cells still get a valid interval: each part at 1 - beta/2."""
    lower, upper = Fraction(0), Fraction(100)
    gamma = sum_granularity(lower, upper, epsilon=Fraction(1, 2))
    kw = dict(lower=lower, upper=upper, granularity=gamma, mechanism="laplace", epsilon=1)
    sum_spec, count_spec = grouped_mean_noise(groups=100_000, **kw)
    laws = dict(sum_law=NoiseLaw.of_spec(sum_spec), count_law=NoiseLaw.of_spec(count_spec))
    level = cell_confidence(Fraction(99, 100), 100_000)
    assert not pivot_reaches(beta=1 - level, **laws)
    assert pivot_reaches(beta=Fraction(1, 10**4), **laws)
    sums, counts = [int(40 * 500 / gamma), 0], [500, 3]
    cells = grouped_mean_cells(
        sums, counts, granularity=gamma, lower=lower, upper=upper, confidence=level, **laws
    )
    part = 1 - (1 - level) / 2
    hs = spec_halfwidth(sum_spec, part)
    hc = spec_halfwidth(count_spec, part)
    assert cells == [
        mean_interval_from_parts(
            noisy_sum_units=s,
            sum_halfwidth_units=hs,
            noisy_count=c,
            count_halfwidth=hc,
            granularity=gamma,
            lower=lower,
            upper=upper,
        )  # fmt: skip
        for s, c in zip(sums, counts, strict=True)
    ]
    assert cells[0][1] < 40 < cells[0][2]


def test_grouped_mean_cell_is_the_single_mean_pivot(seeded):
    """A cell's interval is exactly the single mean's (mechanisms.release_mean) on the same
    noisy parts: with L = 1 the laws, the grid and the pivot are the same."""
    lower, upper = Fraction(0), Fraction(100)
    gamma = sum_granularity(lower, upper, epsilon=Fraction(1, 2))
    kw = dict(lower=lower, upper=upper, granularity=gamma, mechanism="laplace", epsilon=1)
    single = release_mean(int(40 * 50 / gamma), 50, confidence="0.95", rng=seeded(5), **kw)
    sum_spec, count_spec = grouped_mean_noise(groups=3, **kw)
    assert (single.sum.spec.scale, single.count.spec.scale) == (sum_spec.scale, count_spec.scale)
    (cell,) = grouped_mean_cells(
        single.sum.values, single.count.values, sum_law=NoiseLaw.of_spec(sum_spec),
        count_law=NoiseLaw.of_spec(count_spec), granularity=gamma, lower=lower, upper=upper,
        confidence=Fraction(95, 100),
    )  # fmt: skip
    assert (cell[1], cell[2]) == single.interval
