"""The registry's tight accounting: the spent loss both ways and every release's mechanisms.

Published so that anyone can recompute the project's total with an independent
accountant: each published release lists its mechanism records (exact strings,
MechanismRecord.to_dict, from its CHARGE row), the computed-but-unpublished
releases list theirs merged into one list (their number and total are public,
their content is not: a merged list of mechanisms shows neither which release
used which nor any result), and the document names the accountant and its
version. The spent loss is stated three ways at the cap's delta: the PLD epsilon
(dpportal.privacy.pld, pessimistic, an upper bound; multivariate Gaussian
vectors enter it as their charged (eps, delta)), the RDP epsilon
(dpportal.privacy.rdp: the records' Renyi curves added, zCDP rho for Gaussian
vectors, randomized response for pure records, converted by dp_accounting's
compute_epsilon) and the basic sums; all are valid bounds, so the smallest
epsilon is the project's stated loss (dpportal.privacy.pld, docstring points 4
and 4b). Each is recomputable from the listed records alone.
"""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext_noop

from budgets import amounts
from budgets.models import LedgerEntry, Project
from budgets.selectors.accounting import entry_records, float_exact
from budgets.selectors.spend_figure import spend_of, stated_epsilon
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.pld import ACCOUNTANT

__all__ = ["TIGHT_RULE", "accountant_description", "registry_tight", "request_mechanisms"]

TIGHT_RULE = gettext_noop(
    "Tight composition by privacy loss distributions (PLD): each release's noise "
    "mechanisms (listed below with their exact parameters) are composed with the "
    "accountant named here, pessimistic estimates, and the loss is read at the cap's delta. "
    "Renyi differential privacy is a second valid bound (zCDP for Gaussian vectors, whose "
    "privacy loss distribution is not known exactly), and basic composition (the plain sums "
    "of epsilons and deltas) a third; the stated loss is the smallest of the three epsilons."
)


#: The accountant's name (dpportal.privacy.pld.ACCOUNTANT), marked here for translation:
#: the registry page shows it in the reader's language, the JSON keeps it as it is.
ACCOUNTANT_NAME = gettext_noop(
    "privacy loss distributions, pessimistic connect-the-dots (dp_accounting)"
)


def accountant_description() -> dict[str, str]:
    """Name, library, version and discretisation of the accountant (exact strings)."""
    return {
        "name": ACCOUNTANT["name"],
        "library": ACCOUNTANT["library"],
        "version": ACCOUNTANT["version"],
        "discretisation": float_exact(ACCOUNTANT["discretisation"]) or "0",
    }


def _dicts(records: list[MechanismRecord]) -> list[dict[str, object]]:
    return [r.to_dict() for r in merge_records(records)]


def _charged_records(rows) -> dict[int, list[MechanismRecord]]:
    """The records of CHARGE rows (request id, epsilon, delta, mechanisms), by request."""
    by_request: dict[int, list[MechanismRecord]] = {}
    for request_id, epsilon, delta, mechanisms in rows:
        records = entry_records(epsilon=epsilon, delta=delta, mechanisms=mechanisms)
        by_request.setdefault(request_id, []).extend(records)
    return by_request


def _charge_rows(**where: object):
    return LedgerEntry.objects.filter(kind=LedgerEntry.Kind.CHARGE, **where).values_list(
        "request_id", "epsilon", "delta", "mechanisms"
    )


def request_mechanisms(*, budget_request_id: int | None) -> list[dict]:
    """One charged request's mechanism records exactly as the registry lists them under
    its release ("mechanisms": MechanismRecord.to_dict, equal ones merged); empty when
    nothing was charged."""
    if budget_request_id is None:
        return []
    by_request = _charged_records(_charge_rows(request_id=budget_request_id))
    return _dicts(by_request.get(budget_request_id, []))


def registry_tight(
    *, project: Project, spent: tuple[Decimal, Decimal], published_request_ids: set[int]
) -> tuple[dict, dict[int, list[dict]], list[dict]]:
    """(the document's "tight_accounting" block, request id -> its mechanisms, unpublished ones).

    Spent = the CHARGE rows (privacy spent when the noise was drawn), the rows
    whose exact sums are `spent` (epsilon, delta), the basic bound.
    """
    by_request = _charged_records(_charge_rows(project=project))
    every = merge_records(r for records in by_request.values() for r in records)
    unpublished = [
        r for rid, records in by_request.items() if rid not in published_request_ids
        for r in records
    ]  # fmt: skip
    spend = spend_of(every, epsilon_cap=project.epsilon_cap, delta_cap=project.delta_cap)
    pld_epsilon = spend.pld_epsilon
    basic_eps, basic_delta = spent
    # the smallest valid epsilon at the cap's delta, by the one rule (spend_figure)
    stated = stated_epsilon(spend, basic_epsilon=basic_eps, basic_delta=basic_delta)
    block = {
        "rule": TIGHT_RULE,
        "accountant": accountant_description(),
        "delta": amounts.fmt(project.delta_cap),
        "spent_pld_epsilon": float_exact(pld_epsilon),
        "spent_rdp_epsilon": float_exact(spend.rdp_epsilon),
        "spent_basic": {"epsilon": amounts.fmt(basic_eps), "delta": amounts.fmt(basic_delta)},
        "spent_epsilon": None if stated is None else amounts.fmt(stated),
    }
    mechanisms = {rid: _dicts(records) for rid, records in by_request.items()}
    return block, mechanisms, _dicts(unpublished)
