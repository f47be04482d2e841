"""An independent recomputation of a project's PLD epsilon with dp_accounting alone.

Used by the tight-accounting tests to check our accountant (dpportal.privacy.pld)
from the outside: it reads mechanism records as published (MechanismRecord.to_dict,
exact strings) and builds every PLD with dp_accounting's own factories
(connect-the-dots, pessimistic), never through our pld module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from dp_accounting.pld import privacy_loss_distribution as lib
from dp_accounting.pld.common import DifferentialPrivacyParameters

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
    else:  # report_noisy_max, generic_eps_delta: any (eps, delta)-DP mechanism
        one = lib.from_privacy_parameters(
            DifferentialPrivacyParameters(_num(record["epsilon"]), _num(record["delta"])),
            value_discretization_interval=discretisation,
        )
    count = int(record.get("count", 1))
    return one.self_compose(count) if count > 1 else one


def epsilon_at(
    records: Iterable[Mapping[str, str]], delta: float, discretisation: float = DISCRETISATION
) -> float:
    """The composed epsilon at `delta` of every record (0 when there are none)."""
    total = None
    for record in records:
        one = record_pld(record, discretisation)
        total = one if total is None else total.compose(one)
    return 0.0 if total is None else float(total.get_epsilon_for_delta(delta))
