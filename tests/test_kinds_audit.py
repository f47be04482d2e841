"""Every kind, both mechanisms: a black-box audit on worst-case neighbours (M2/M3).

D: 300 people with one row each, 100 in each of three groups, values 5 to 95; D' = D
plus one person with L = 2 rows in group "a" at the upper bound 100 (both rows in one
cell, at the largest |value|: the worst case of every kind here, and a near-tie of the
counts for the argmax; private bounds search the upper end only, at the whole epsilon,
and the audit looks at the index where the search stopped). Each is a real dataset with
a person ID column and L = 2, and one release per mechanism holds a statistic of every
kind (releases.services.KINDS), each held at epsilon 1 (Gaussian: the release's delta
1e-7 shared between them); the true aggregates of D and D' are computed once by the real
engine, then releases.dp.noisy_entry, the function the compute task calls, is run DRAWS
times per side with seeded test sources (tests.kinds_support memoizes two pure functions
of public parameters it recomputes on every draw).

The audit (PRIVACY-TESTING.md M2/M3, the helpers of tests/privacy/conftest.py):
events {y >= t} and {y < t} of one published number y of the entry (the cell the
person's rows fall in; a mean, standard deviation or variance estimate), or
{index = i} for a selection, both orders; one-sided Clopper-Pearson bounds with
Bonferroni over every event; LB = max ln((p_lo - delta) / q_hi). If the release is
(eps, delta)-DP then LB > eps has probability <= 1e-6: each assertion fails
spuriously with probability <= 1e-6. Thresholds come from a separate pilot draw
(PILOT per side, other seeds), so the events do not depend on the audited samples.
For the Gaussian the bound subtracts the statistic's charged delta: the audit's delta
is the charged one, so the epsilon the mechanism guarantees there is the charged
epsilon. That comparison is loose for the Gaussian (its epsilon at delta ~1e-8 is set
by tails that 1000 draws never reach; the same noise calibrated for L = 1 with 2 rows
added passes too): comparing at a larger audit delta with the epsilon implied by the
stated sigma there would be tighter.

Power at DRAWS = 1000 per side is coarse (the tight audits of the privacy core use
200,000 draws of the samplers): `test_audit_catches_an_ignored_contribution_bound`
shows it catches noise calibrated for L = 1 while a person contributes 2 rows
(true loss 2 eps). A 10 % under-noise would pass here: it is caught on the samplers'
specs by tests/privacy/test_privacy_audit.py, and the noise-law tests of every kind
(tests/test_kinds_noise_law.py) tie the drawn noise to the stated law.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from dpportal.privacy.rng import SeededTestRandom
from releases import kinds
from tests.kinds_support import (
    AUDIT_STATISTICS,
    DELTA,
    KINDS,
    MECHANISMS,
    Truth,
    as_float,
    kinds_under,
    memoize_public_math,
    raise_caps,
    skip_if_refused,
    statistic_for,
    truths_of,
    write_neighbours,
)
from tests.privacy.conftest import audit_index_lower_bound, audit_lower_bound

DRAWS = 1000
PILOT = 100
LEVELS = np.arange(1, 25) / 25  # pilot quantiles used as thresholds

_TRUTHS: dict[str, tuple[dict[str, Truth], dict[str, Truth]]] = {}


@pytest.fixture
def neighbours(project, owner, reviewer, monkeypatch):
    """mechanism -> ({kind: Truth on D}, {kind: Truth on D'}), built once per mechanism
    (plain data, kept for the module's tests)."""
    memoize_public_math(monkeypatch)

    def get(mechanism: str):
        if mechanism not in _TRUTHS:
            raise_caps(project)
            drawn = kinds_under(mechanism)
            statistics = [statistic_for(AUDIT_STATISTICS, kind) for kind in drawn]
            sides = []
            for name, with_person in (("d", False), ("d-prime", True)):
                dataset = write_neighbours(
                    project=project, owner=owner, name=f"{name}-{mechanism}",
                    with_person=with_person,
                )  # fmt: skip
                found = truths_of(
                    project=project, owner=owner, reviewer=reviewer, dataset=dataset,
                    statistics=statistics, mechanism=mechanism,
                )  # fmt: skip
                sides.append(dict(zip(drawn, found, strict=False)))
            _TRUTHS[mechanism] = (sides[0], sides[1])
        return _TRUTHS[mechanism]

    return get


SELECTIONS = ("argmax", "quantiles", "bounds")


def observe(kind: str, entry: dict) -> float:
    """The published number (or selected index) the audit's events look at."""
    if kind == "argmax":
        return entry["cells"].index(entry["argmax"]["label"])
    if kind == "quantiles":
        return entry["explanation"]["quantiles"][0]["index"]
    if kind == "bounds":  # the upper search's stop (past its last point: the limit)
        upper = entry["explanation"]["upper"]
        return upper["index"] + (1 if upper["reached_limit"] else 0)
    if kind == "rows_per_person":  # the added person's bucket: 2 rows
        return as_float(entry["values"][1])
    return as_float(entry["values"][0])  # the person's cell ("a", first) or the estimate


def outputs(kind: str, truth: Truth, runs: int, seed: int, bound: int | None = None):
    rng = SeededTestRandom(seed)
    return np.array(
        [observe(kind, truth.noisy(rng, contribution_bound=bound)) for _ in range(runs)]
    )


def lower_bound(kind: str, d: Truth, d_prime: Truth, seed: int, bound: int | None = None):
    """(LB, charged epsilon, charged delta) of the audit described in the module docstring."""
    entry = d.entry
    epsilon = Fraction(Decimal(entry["epsilon"]))
    delta = float(Decimal(entry["delta"]))
    a = outputs(kind, d, DRAWS, seed, bound)
    b = outputs(kind, d_prime, DRAWS, seed + 1, bound)
    if kind in SELECTIONS:
        cells = int(max(a.max(), b.max())) + 1
        if kind == "quantiles":  # the quantile's own share (<= the statistic's epsilon)
            cells = d.noisy(SeededTestRandom(0))["explanation"]["candidates"]
        return audit_index_lower_bound(a.astype(np.int64), b.astype(np.int64), cells), epsilon, 0
    pilot = np.concatenate(
        [outputs(kind, d, PILOT, seed + 2, bound), outputs(kind, d_prime, PILOT, seed + 3, bound)]
    )
    thresholds = sorted({float(t) for t in np.quantile(pilot, LEVELS)})
    return audit_lower_bound(a, b, thresholds, delta=delta), epsilon, delta


@pytest.mark.django_db
@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("kind", KINDS)
def test_audit_lower_bound_is_at_most_the_charged_epsilon(kind, mechanism, neighbours):
    """LB <= charged epsilon (false failure <= 1e-6)."""
    skip_if_refused(kind, mechanism)
    d, d_prime = neighbours(mechanism)
    assert d[kind].entry == d_prime[kind].entry  # same public parameters on both sides
    seed = 1000 * KINDS.index(kind) + 10 * MECHANISMS.index(mechanism)
    lb, epsilon, delta = lower_bound(kind, d[kind], d_prime[kind], seed=seed)
    if mechanism == "gaussian" and not kinds.get(kind).pure:  # pure kinds take no delta
        assert 0 < delta <= float(Decimal(DELTA))  # its share of the release's delta
    assert lb <= epsilon, f"{kind}/{mechanism}: empirical epsilon >= {lb:.3f} > {epsilon}"


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["count", "grouped_sum"])
def test_audit_catches_an_ignored_contribution_bound(kind, neighbours):
    """Power: Laplace noise drawn for L = 1 while the person adds 2 rows (noisy_entry
    called with contribution_bound=1, the rest unchanged: true loss 2 eps) gives
    LB > epsilon at these draws (deterministic at the fixed seeds)."""
    d, d_prime = neighbours("laplace")
    lb, epsilon, _ = lower_bound(kind, d[kind], d_prime[kind], seed=77, bound=1)
    assert lb > epsilon, lb
