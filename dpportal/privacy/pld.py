"""Tight accounting: the project's epsilon at its delta by privacy loss distributions (PLD),
with Renyi DP (dpportal.privacy.rdp) as a second tight bound for Gaussian vectors.

Why each step is sound:

1. One mechanism -> its PLD. The privacy loss of a pair (P, Q) is
   L = ln P(Y)/Q(Y), Y ~ P; its law (the PLD) determines every (eps, delta)
   guarantee: delta(eps) = E[(1 - e**(eps - L))_+] (Sommer, Meiser, Mohammadi
   2019; Koskela, Jalko, Honkela 2020). dpportal.privacy.privacy_profiles gives
   delta(eps) of each recorded mechanism's dominating pair exactly; here it is
   turned into a PLD on the grid eps_i = i * DISCRETISATION by the pessimistic
   connect-the-dots construction (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi,
   "Connect the dots", PoPETs 2022, Alg. 1 and Thm 4.3): the discrete PLD's
   delta(eps) is >= the mechanism's at every eps (exact at the grid points),
   losses below the grid's lowest point are moved up to it and the mass above
   the highest point (below 1e-29) is put at +infinity, both pessimistic.
   dp_accounting (Google) implements the construction and everything after it.
2. Composition. The PLD of an adaptive sequence of mechanisms on the same data
   is dominated by the convolution of their PLDs (Koskela et al. 2020, Thm 5;
   Zhu, Dong, Wang, AISTATS 2022, Thm 10: dominating pairs compose). Equal
   mechanisms (same kind and exact parameters) are merged and composed by
   self-composition (one FFT power), so the cost grows with the number of
   DISTINCT mechanisms; distinct ones are composed in a balanced tree. Each
   convolution drops at most 1e-15 of tail mass, the left tail onto the
   lowest loss and the right tail to +infinity (pessimistic, dp_accounting).
3. Reading the guarantee. eps(delta) = the smallest eps with delta(eps) <=
   delta on the composed pessimistic PLD: an upper bound on the true eps.
4. Two bounds, keep the smaller. Basic composition (Dwork & Roth 2014, Thm 3.16:
   (sum eps_i, sum delta_i)) and the PLD bound are both valid statements
   "the project is (eps, delta)-DP" about the same mechanisms; a mechanism that
   satisfies two guarantees satisfies each, so the project is within its cap
   when EITHER bound is within it, and the spend reported at the cap's delta
   is the smaller epsilon. (Basic composition can be the smaller one: a single
   pure-DP release, or when the PLD grid rounding exceeds the gain.)
4b. A third bound: Renyi DP (dpportal.privacy.rdp). A multivariate discrete
   Gaussian vector (`zcdp_gaussian` record) has a proven zCDP guarantee but no
   exact privacy profile, so in the PLD it is its generic (eps, delta)
   stand-in; the RDP bound composes it tightly (the rhos add) with every other
   record's RDP curve. It too is a valid statement about the same mechanisms,
   so the project is within its cap when ANY of the three bounds is, and its
   stated loss is the smallest epsilon. `Spend.tight_epsilon` is the smaller of
   PLD and RDP; `CapCheck.within_tight` is "PLD or RDP within".
5. Group privacy. All bounds are per privacy unit (a person with at most L
   rows, already in every sensitivity). A group of g units is protected by
   g eps and g e**((g-1) eps) delta applied to the composed (eps, delta)
   (dpportal.privacy.accounting.group_privacy*); composing first and
   converting once is valid because group privacy holds for every (eps, delta)-DP
   mechanism, the composed one included.

Decisions:
- DISCRETISATION = 1e-3 nats. With connect-the-dots the error is second order:
  300 distinct discrete Gaussians compose to 9.70207 at 1e-3 against 9.70199
  at 1e-4 (delta 1e-5), while building and composing is ~10x faster.
- Report Noisy Max (Laplace noise on monotone counts, Dwork & Roth 2014, Claim
  3.9) is accounted as a generic pure eps-DP mechanism, i.e. by randomized
  response, the dominating pair of every eps-DP mechanism (Kairouz, Oh,
  Viswanath 2015). The tighter "bounded range" analysis (Dong, Durfee, Rogers
  2020) is proven for the exponential mechanism (Gumbel noise), not for
  Laplace noise, so it is not used.
- Permute-and-flip (one record per quantile) is pure eps-DP and, like Report
  Noisy Max, accounted by randomized response. A `zcdp_gaussian` record enters
  the PLD as its generic charged (eps, delta) (valid, loose); its tight
  composition is the RDP bound (point 4b).
- A mechanism whose loss range needs more than MAX_GRID_POINTS grid points
  (eps above ~100) is accounted as generic (eps, delta): valid, and such a
  mechanism gains nothing from tight accounting anyway.
- How many more releases fit (`CapCheck.fit`) is a bounded search whose cost
  never depends on the cap's size (dpportal.privacy.fit); past a bound the
  count is the largest m checked to fit and `fit_at_least` is set. The count
  is information only; the verdict `within` never depends on it.
- Comparisons with a cap leave a margin far below display precision and far
  above float error: the PLD is read at delta_cap (1 - 1e-6) and its epsilon
  must be <= epsilon_cap - 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib import metadata

import numpy as np
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

from dpportal.privacy import fit
from dpportal.privacy.accounting import Cost, compose_sequential
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.fit import MAX_FIT, MAX_FIT_GRID, MAX_PLD_FIT
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import check_epsilon, to_fraction
from dpportal.privacy.pld_pmfs import (
    DISCRETISATION,
    TAIL_TRUNCATION,
    compose_records,
    mechanism_pld,
)
from dpportal.privacy.rdp import compose_rdp, rdp_epsilon, rdp_within

__all__ = [
    "ACCOUNTANT",
    "DISCRETISATION",
    "Spend",
    "CapCheck",
    "ComposedHistory",
    "compose_all",
    "tight_epsilon",
    "mechanism_pld",
    "compose_records",
    "pld_epsilon",
    "basic_cost",
    "project_spend",
    "within_cap",
    "within_cap_composed",
    "releases_that_fit",
    "MAX_FIT",
    "MAX_PLD_FIT",
    "MAX_FIT_GRID",
]

DELTA_MARGIN = 1e-6
EPSILON_MARGIN = 1e-9
ACCOUNTANT = {
    "name": "privacy loss distributions, pessimistic connect-the-dots (dp_accounting)",
    "library": "dp-accounting",
    "version": metadata.version("dp-accounting"),
    "discretisation": DISCRETISATION,
}


def _check_delta_cap(delta: object) -> Fraction:
    dlt = to_fraction(delta, "delta")
    if not 0 <= dlt < 1:
        raise PrivacyParameterError(
            gettext_noop("delta must be in [0, 1), got %(delta)s"), delta=repr(delta)
        )
    return dlt


def _epsilon_of(pld: PrivacyLossDistribution | None, delta: Fraction) -> float:
    if pld is None:
        return 0.0
    return float(pld.get_epsilon_for_delta(float(delta) * (1 - DELTA_MARGIN)))


def pld_epsilon(records: Iterable[MechanismRecord], delta: object) -> float:
    """The composed epsilon at `delta` by PLD (math.inf when no finite epsilon reaches it)."""
    return _epsilon_of(compose_records(records), _check_delta_cap(delta))


def tight_epsilon(records: Iterable[MechanismRecord], delta: object) -> float:
    """The smaller of the PLD and the RDP epsilon at `delta` (both valid; docstring 4b)."""
    records = list(records)
    dlt = _check_delta_cap(delta)
    return min(pld_epsilon(records, dlt), rdp_epsilon(compose_rdp(records), dlt))


def basic_cost(records: Iterable[MechanismRecord]) -> Cost:
    """Basic composition, exact: (sum count * eps, sum count * delta) (Dwork & Roth, Thm 3.16)."""
    return compose_sequential(Cost(r.epsilon * r.count, r.delta * r.count) for r in records)


@dataclass(frozen=True)
class Spend:
    """A project's privacy loss both ways, at the delta of its cap."""

    delta: Fraction
    pld_epsilon: float
    basic: Cost
    rdp_epsilon: float = math.inf

    @property
    def tight_epsilon(self) -> float:
        """The smaller of the two tight bounds at `delta`: PLD and RDP (docstring 4b)."""
        return min(self.pld_epsilon, self.rdp_epsilon)

    @property
    def epsilon(self) -> float:
        """The tightest epsilon at `delta`: PLD, RDP, or the basic sum when its delta is within."""
        if self.basic.delta <= self.delta:
            return min(self.tight_epsilon, float(self.basic.epsilon))
        return self.tight_epsilon


def project_spend(records: Sequence[MechanismRecord], delta_cap: object) -> Spend:
    """Spend of the committed records at the cap's delta: PLD, RDP and the basic sum."""
    delta = _check_delta_cap(delta_cap)
    rdp = rdp_epsilon(compose_rdp(records), delta)
    return Spend(delta, pld_epsilon(records, delta), basic_cost(records), rdp)


@dataclass(frozen=True)
class ComposedHistory:
    """Committed records composed all three ways: PLD (None if empty), basic sums, RDP curve."""

    pld: PrivacyLossDistribution | None
    basic: Cost
    rdp: np.ndarray


def compose_all(records: Sequence[MechanismRecord]) -> ComposedHistory:
    """The history's PLD, basic sums and RDP curve (each valid; module docstring)."""
    rdp = compose_rdp(records)
    rdp.flags.writeable = False  # histories are cached and shared (headroom)
    return ComposedHistory(compose_records(records), basic_cost(records), rdp)


@dataclass(frozen=True)
class CapCheck:
    """The verdict on adding a candidate release to a project's committed records.

    before/after: the spend without and with the candidate. within_pld: the PLD
    epsilon after is within epsilon_cap at delta_cap; within_rdp: the RDP
    epsilon is; within_basic: both basic sums after are within the caps; within:
    any. fit: how many releases like the candidate (the candidate included) fit
    under the cap, by any bound; fit_at_least: fit is a lower bound (a search
    reached its bound with more possibly fitting; module docstring, Decisions).
    """

    before: Spend
    after: Spend
    within_pld: bool
    within_basic: bool
    fit: int | None
    within_rdp: bool = False
    fit_at_least: bool = False

    @property
    def within_tight(self) -> bool:
        """Within the cap by a tight bound: PLD or RDP."""
        return self.within_pld or self.within_rdp

    @property
    def within(self) -> bool:
        """Within the cap when any valid bound shows it."""
        return self.within_tight or self.within_basic


def _pld_within(
    pld: PrivacyLossDistribution | None, epsilon_cap: Fraction, delta_cap: Fraction
) -> bool:
    """delta(epsilon_cap) <= delta_cap on the PLD, i.e. eps(delta_cap) <= epsilon_cap (margins)."""
    if pld is None:
        return True
    delta = pld.get_delta_for_epsilon(float(epsilon_cap) - EPSILON_MARGIN)
    return float(delta) <= float(delta_cap) * (1 - DELTA_MARGIN)


def _basic_within(cost: Cost, epsilon_cap: Fraction, delta_cap: Fraction) -> bool:
    return cost.epsilon <= epsilon_cap and cost.delta <= delta_cap


def _compose_pair(
    a: PrivacyLossDistribution | None, b: PrivacyLossDistribution | None
) -> PrivacyLossDistribution | None:
    if a is None or b is None:
        return a if b is None else b
    return a.compose(b, tail_mass_truncation=TAIL_TRUNCATION)


def _fit(
    history: ComposedHistory,
    candidate: Sequence[MechanismRecord],
    candidate_pld: PrivacyLossDistribution | None,
    candidate_rdp: np.ndarray,
    epsilon_cap: Fraction,
    delta_cap: Fraction,
    *,
    within_pld: bool,
    within_rdp: bool,
) -> fit.Fit:
    """How many like the candidate fit by each bound (dpportal.privacy.fit), the largest."""
    by_basic = fit.basic_fit(history.basic, basic_cost(candidate), epsilon_cap, delta_cap)
    by_pld: tuple[int, bool] = (0, True)
    if within_pld and candidate_pld is not None:

        def pld_fits(composed: PrivacyLossDistribution) -> bool:
            return _pld_within(_compose_pair(history.pld, composed), epsilon_cap, delta_cap)

        by_pld = fit.pld_fit(pld_fits, candidate_pld, max(by_basic[0], 1))
    by_rdp = (0, True)
    if within_rdp:
        by_rdp = fit.rdp_fit(history.rdp, candidate_rdp, epsilon_cap, delta_cap)
    return fit.Fit.of(by_basic, by_pld, by_rdp)


def releases_that_fit(
    records: Sequence[MechanismRecord],
    candidate: Sequence[MechanismRecord],
    *,
    epsilon_cap: object,
    delta_cap: object,
) -> int:
    """How many releases like `candidate` fit under the cap after `records` (any bound).

    A lower bound when a search reached its bound (`CapCheck.fit_at_least`).
    """
    if not candidate:
        raise PrivacyParameterError(gettext_noop("the candidate release has no statistics"))
    check = within_cap(records, candidate, epsilon_cap=epsilon_cap, delta_cap=delta_cap)
    return check.fit if check.fit is not None else 0


def within_cap(
    records: Sequence[MechanismRecord],
    candidate: Sequence[MechanismRecord],
    *,
    epsilon_cap: object,
    delta_cap: object,
    count_fit: bool = True,
) -> CapCheck:
    """Would the project stay within (epsilon_cap, delta_cap) after the candidate release?

    records: the project's committed mechanisms (charges and open reservations);
    candidate: the records of the release to approve. Returns both bounds before
    and after, each verdict, and (count_fit) how many releases like the
    candidate fit. Within when EITHER bound is within the cap (see the module
    docstring, point 4).
    """
    return within_cap_composed(
        compose_all(records),
        candidate,
        epsilon_cap=epsilon_cap,
        delta_cap=delta_cap,
        count_fit=count_fit,
    )


def within_cap_composed(
    history: ComposedHistory,
    candidate: Sequence[MechanismRecord],
    *,
    epsilon_cap: object,
    delta_cap: object,
    count_fit: bool = True,
) -> CapCheck:
    """`within_cap` with the committed records already composed (`compose_all`).

    For callers that check several candidates against one history (the builder's
    headroom search): the history's PLD, the expensive part, is composed once.
    """
    eps_cap, dlt_cap = check_epsilon(epsilon_cap, "epsilon_cap"), _check_delta_cap(delta_cap)
    candidate_pld = compose_records(candidate)
    candidate_rdp = compose_rdp(candidate)
    after_pld = _compose_pair(history.pld, candidate_pld)
    after_rdp = history.rdp + candidate_rdp
    before = Spend(
        dlt_cap,
        _epsilon_of(history.pld, dlt_cap),
        history.basic,
        rdp_epsilon(history.rdp, dlt_cap),
    )
    after = Spend(
        dlt_cap,
        _epsilon_of(after_pld, dlt_cap),
        before.basic + basic_cost(candidate),
        rdp_epsilon(after_rdp, dlt_cap),
    )
    within_pld = _pld_within(after_pld, eps_cap, dlt_cap)
    within_rdp = rdp_within(after_rdp, eps_cap, dlt_cap)
    within_basic = _basic_within(after.basic, eps_cap, dlt_cap)
    fit = None
    if count_fit and candidate:
        fit = _fit(
            history,
            candidate,
            candidate_pld,
            candidate_rdp,
            eps_cap,
            dlt_cap,
            within_pld=within_pld,
            within_rdp=within_rdp,
        )
    return CapCheck(
        before,
        after,
        within_pld,
        within_basic,
        fit.count if fit else None,
        within_rdp,
        fit_at_least=fit.at_least if fit else False,
    )
