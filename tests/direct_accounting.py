"""An independent recomputation of a project's PLD and RDP epsilons with dp_accounting alone.

Used by the tight-accounting tests to check our accountants (dpportal.privacy.pld,
dpportal.privacy.rdp) from the outside: it reads mechanism records as published
(MechanismRecord.to_dict, exact strings) and builds every PLD with dp_accounting's
own factories (connect-the-dots, pessimistic), and every RDP curve from
dp_accounting's DpEvents (RdpAccountant), never through our modules:

- PLD: zcdp_gaussian records enter as their charged (epsilon, delta), pure
  records (report_noisy_max, permute_and_flip, generic with delta 0) as pure eps.
- RDP: zcdp_gaussian as ZCDpEvent(rho) with rho = sensitivity**2 / (2 sigma**2)
  recomputed from the published sensitivity and sigma; discrete_gaussian as
  GaussianDpEvent(sigma / sensitivity) (the same alpha rho); every pure record
  (discrete_laplace at eps = sensitivity / scale) as binary randomized response
  with ratio e**eps (RandomizedResponseDpEvent, p = 2 / (1 + e**eps), 2 buckets,
  read with the REPLACE_ONE relation, whose formula is the divergence between the
  two binary laws); generic with delta > 0 as NonPrivateDpEvent (infinite).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as lib
from dp_accounting.pld.common import DifferentialPrivacyParameters
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

DISCRETISATION = 1e-3
# dp_accounting's discrete factories enumerate the noise over the sensitivity's
# lattice points: a sum's sensitivity in grid units (millions) would take minutes.
# Beyond this many points the continuous Laplace/Gaussian factories are used: the
# discrete mechanism's loss at each lattice point equals the continuous one's
# there, and its law differs from the continuous law by O(1/scale) (scale and sigma
# are then themselves >= ~1e4 units), far below the tests' 1e-3 tolerance.
LATTICE_LIMIT = 10_000


def _num(text: str) -> float:
    """An exact published number ("0.25" or "10/3") as a float."""
    return float(Fraction(text))


def record_pld(record: Mapping[str, str], discretisation: float = DISCRETISATION):
    """One record's PLD, `count` times, from dp_accounting's factories."""
    kind = record["kind"]
    large = int(Fraction(record.get("sensitivity", "0"))) > LATTICE_LIMIT
    if kind == "discrete_laplace" and large:
        one = lib.from_laplace_mechanism(
            _num(record["scale"]),
            _num(record["sensitivity"]),
            value_discretization_interval=discretisation,
            use_connect_dots=True,
        )
    elif kind == "discrete_gaussian" and large:
        one = lib.from_gaussian_mechanism(
            _num(record["sigma"]),
            _num(record["sensitivity"]),
            value_discretization_interval=discretisation,
            use_connect_dots=True,
        )
    elif kind == "discrete_laplace":
        one = lib.from_discrete_laplace_mechanism(
            1 / _num(record["scale"]),
            int(Fraction(record["sensitivity"])),
            value_discretization_interval=discretisation,
            use_connect_dots=True,
        )
    elif kind == "discrete_gaussian":
        one = lib.from_discrete_gaussian_mechanism(
            _num(record["sigma"]),
            int(Fraction(record["sensitivity"])),
            value_discretization_interval=discretisation,
            use_connect_dots=True,
        )
    else:  # report_noisy_max, permute_and_flip, zcdp_gaussian, generic_eps_delta: (eps, delta)
        one = lib.from_privacy_parameters(
            DifferentialPrivacyParameters(_num(record["epsilon"]), _num(record["delta"])),
            value_discretization_interval=discretisation,
        )
    count = int(record.get("count", 1))
    return one.self_compose(count) if count > 1 else one


def rounding_allowance(
    records: Iterable[Mapping[str, str]], discretisation: float = DISCRETISATION
) -> float:
    """How far `epsilon_at` may sit above a connect-the-dots accountant: d per use of a
    record built by from_privacy_parameters, which rounds each loss value UP to the grid
    (pessimistic, so both are valid; our pld builds those records by connect-the-dots,
    exact at the grid points)."""
    rounded = ("report_noisy_max", "permute_and_flip", "zcdp_gaussian", "generic_eps_delta")
    return discretisation * sum(int(r.get("count", 1)) for r in records if r["kind"] in rounded)


def epsilon_at(
    records: Iterable[Mapping[str, str]], delta: float, discretisation: float = DISCRETISATION
) -> float:
    """The composed epsilon at `delta` of every record (0 when there are none)."""
    total = None
    for record in records:
        one = record_pld(record, discretisation)
        total = one if total is None else total.compose(one)
    return 0.0 if total is None else float(total.get_epsilon_for_delta(delta))


def record_event(record: Mapping[str, str]) -> dp_event.DpEvent:
    """One record's DpEvent for dp_accounting's RDP accountant, `count` times."""
    kind = record["kind"]
    if kind in ("zcdp_gaussian", "discrete_gaussian"):
        sensitivity, sigma = Fraction(record["sensitivity"]), Fraction(record["sigma"])
        if kind == "zcdp_gaussian":
            one = dp_event.ZCDpEvent(float(sensitivity**2 / (2 * sigma**2)))
        else:
            one = dp_event.GaussianDpEvent(float(sigma / sensitivity))
    elif kind == "generic_eps_delta" and Fraction(record["delta"]) > 0:
        one = dp_event.NonPrivateDpEvent()
    else:
        if kind == "discrete_laplace":
            eps = float(Fraction(record["sensitivity"]) / Fraction(record["scale"]))
        else:
            eps = _num(record["epsilon"])
        one = dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(eps)), 2)
    count = int(record.get("count", 1))
    return dp_event.SelfComposedDpEvent(one, count) if count > 1 else one


def rdp_epsilon_at(records: Iterable[Mapping[str, str]], delta: float) -> float:
    """The composed RDP epsilon at `delta` (dp_accounting's default orders and conversion)."""
    accountant = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    for record in records:
        accountant.compose(record_event(record))
    return float(accountant.get_epsilon(delta))
