"""The upper bound extrapolated under a log-normal tail model (dpportal.privacy.tail_bounds).

The extrapolation's arithmetic against exact log-normal quantiles, the cases where the
model cannot be applied, the ledger records, where the bound lands on log-normal data,
and a black-box audit (conftest.audit_index_lower_bound: `LB <= eps` fails spuriously
with probability <= 1e-6) on neighbouring datasets.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.search_grid import SearchGrid
from dpportal.privacy.tail_bounds import (
    epsilon_parts,
    estimate_tail_upper,
    extrapolate,
    tail_records,
)


def _cells(values, grid: SearchGrid) -> np.ndarray:
    edges = np.array(grid.edges())
    return np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)


def test_the_extrapolation_recovers_a_lognormal_quantile_from_two_others():
    mu, sigma, n = 10.5, 0.8, 10_000
    z = NormalDist().inv_cdf
    q = lambda above: math.exp(mu + sigma * z(1 - above / n))  # noqa: E731
    got = extrapolate(
        upper_anchor=q(500), median_anchor=q(5000), noisy_count=n, upper_above=500,
        median_above=5000, beyond=3,
    )  # fmt: skip
    assert got == pytest.approx(q(3), rel=1e-9)


@pytest.mark.parametrize(
    "upper, median",
    [(10.0, 0.0), (10.0, -5.0), (10.0, 10.0), (5.0, 10.0)],
)
def test_anchors_that_fit_no_lognormal_give_no_bound(upper, median):
    assert (
        extrapolate(
            upper_anchor=upper,
            median_anchor=median,
            noisy_count=1000,
            upper_above=50,
            median_above=500,
            beyond=2,
        )  # fmt: skip
        is None
    )


GRID = SearchGrid.of(centre=0, unit=1, ratio=Fraction(101, 100), limit=10**9)


def test_on_lognormal_data_the_bound_lands_near_the_quantile_the_model_aims_at(seeded):
    """20 seeded runs at epsilon 0.1 on n = 10,000 log-normal values: every bound within
    a factor 1.6 of the log-normal quantile above which 5 values lie in expectation
    (observed over these seeds: 0.75 to 1.25; under fresh seeds a run outside the factor
    was not seen in 2,000 runs of bench/discovery.py)."""
    values = np.random.default_rng(5).lognormal(10.5, 0.8, 10_000)
    aim = math.exp(10.5 + 0.8 * NormalDist().inv_cdf(1 - 5 / 10_000))
    cells = _cells(values, GRID)
    source = seeded(11)
    for _ in range(20):
        est = estimate_tail_upper(
            cells, grid=GRID, beyond=5, epsilon=Fraction(1, 10), contribution_bound=1, rng=source
        )
        assert est.reason == "fitted"
        assert aim / 1.6 <= est.upper <= aim * 1.6
        explanation = est.explanation()
        assert explanation["upper"]["value"] == repr(est.upper)
        assert [a["above"] for a in explanation["anchors"]] == [
            round(Fraction(est.noisy_count, 20)),
            round(Fraction(est.noisy_count, 2)),
        ]
        # the bound is a grid point: the first at or above the extrapolated value
        assert float(explanation["extrapolated"]) <= est.upper


def test_where_the_model_cannot_be_applied_there_is_no_bound(seeded):
    few = estimate_tail_upper(
        _cells(np.arange(1, 20), GRID), grid=GRID, beyond=2, epsilon=10**6,
        contribution_bound=1, rng=seeded(1),
    )  # fmt: skip
    assert few.upper is None and few.reason == "too_few_values"
    negative = SearchGrid.of(centre=-1000, unit=1, ratio=2, limit=10**5)
    below = estimate_tail_upper(
        _cells(np.full(1000, -500.0), negative), grid=negative, beyond=2, epsilon=10**6,
        contribution_bound=1, rng=seeded(2),
    )  # fmt: skip
    assert below.upper is None and below.reason == "not_lognormal"
    small = SearchGrid.of(centre=0, unit=1, ratio=2, limit=100)
    past = estimate_tail_upper(
        _cells(np.full(1000, 5000.0), small), grid=small, beyond=2, epsilon=10**6,
        contribution_bound=1, rng=seeded(3),
    )  # fmt: skip
    assert past.upper is None and past.reason == "search_limit"


def test_bad_parameters_are_refused(seeded):
    cells = _cells(np.arange(100), GRID)
    with pytest.raises(PrivacyParameterError):
        estimate_tail_upper(cells, grid=GRID, beyond=0, epsilon=1, contribution_bound=1)
    with pytest.raises(PrivacyParameterError):
        estimate_tail_upper(cells, grid=GRID, beyond=2, epsilon=1, contribution_bound=0)
    with pytest.raises(ValueError):
        estimate_tail_upper(cells[:-1], grid=GRID, beyond=2, epsilon=1, contribution_bound=1)


def test_the_records_spend_exactly_the_epsilon():
    count_eps, search_eps = epsilon_parts(Fraction(1, 10))
    assert count_eps == Fraction(1, 100) and search_eps == Fraction(9, 200)
    records = tail_records(epsilon=Fraction(1, 10), contribution_bound=3)
    assert sum(r.epsilon * r.count for r in records) == Fraction(1, 10)
    noisy_count = records[0]
    assert noisy_count.kind == "discrete_laplace"
    assert noisy_count.sensitivity == 3 and noisy_count.scale == Fraction(300)


# ------------------------------------------------------------------ audit

AUDIT_GRID = SearchGrid.of(centre=0, unit=1, ratio=2, limit=1000)  # 0, 1, 3, ..., 511
R = 20_000
#: 120 values over the grid's cells; the neighbour adds one person's value in a cell
#: both anchors' searches pass
D = np.repeat([2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 400.0], 15)
D_PRIME = np.append(D, 60.0)


def _outcomes(values, seeded, seed: int) -> np.ndarray:
    """The searches' outputs as one index: (anchor a, anchor b)."""
    cells = _cells(values, AUDIT_GRID)
    source = seeded(seed)
    size = AUDIT_GRID.steps() + 2  # every grid index, and "none"
    out = np.empty(R, dtype=np.int64)
    points = list(AUDIT_GRID.upward())
    for r in range(R):
        est = estimate_tail_upper(
            cells, grid=AUDIT_GRID, beyond=2, epsilon=1, contribution_bound=1, rng=source
        )
        found = [v for _, v in est.anchors] or [None, None]  # too few values: no search
        a, b = (points.index(v) if v is not None else size - 1 for v in found)
        out[r] = a * size + b
    return out


def test_the_tail_estimate_audit_passes(stat, seeded):
    """LB <= eps (1 in all) over the events {(anchor a, anchor b) = (i, j)}: the upper
    bound is a function of these and of the noisy count (false failure <= 1e-6). That
    the audit catches a search without query noise is shown on the search alone
    (test_privacy_discovery.test_the_bounds_audit_catches_unnoised_queries)."""
    size = AUDIT_GRID.steps() + 2
    a, b = _outcomes(D, seeded, 1), _outcomes(D_PRIME, seeded, 2)
    assert stat.audit_index_lower_bound(a, b, size * size) <= 1
