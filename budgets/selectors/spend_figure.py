"""The project's spend figure: the ONE definition of "spent" and "remaining" every page reads.

The headline is the tight privacy loss at the cap's delta: the smallest epsilon of
three valid bounds on the same mechanisms (privacy loss distributions, Renyi DP,
and the basic sum when its own delta is within the cap's delta; pld.Spend.epsilon,
dpportal.privacy.pld docstring points 4 and 4b). The basic sum (the plain sums of
epsilons and deltas) is kept beside it as the explanation ("basic composition
would count 1").

- spent: the CHARGE rows (the noise was drawn), as the registry counts it;
- committed: charges and open reservations (accounting.committed_records), what an
  approval is checked against;
- remaining: cap - committed, never below zero;
- after a candidate release (`remaining_after`): cap - the tight loss with the
  candidate, never below zero when the release fits (by any bound), so a "fits"
  never comes with a negative remainder.

Every number is an exact Decimal (a float accountant's epsilon through its
shortest round-trip digits; the basic sum exactly when it is the smallest); pages
write it with dpportal.formatting.budget. The figure is kept in Django's cache
under the project's ledger state (its last row: the ledger is append-only), the
caps and the accountant's version (public parameters only), so a page viewed again
does no accounting.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from django.conf import settings
from django.core.cache import cache

from budgets import amounts
from budgets.models import LedgerEntry, Project
from budgets.selectors.accounting import committed_records, ledger_state, rows_records
from budgets.selectors.budget import budget_summary
from budgets.selectors.summary import BudgetSummary
from dpportal import formatting
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.headroom import compose_history
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.pld import ACCOUNTANT, Spend, within_cap_composed

__all__ = [
    "SpendFigure",
    "project_spend_figure",
    "release_spend_figure",
    "remaining_after",
    "spend_of",
    "stated_epsilon",
]

logger = logging.getLogger(__name__)

_CACHE_VERSION = "spend-figure-1"
SPEND_FIGURE_CACHE_SECONDS = 24 * 3600


def stated_epsilon(
    spend: Spend, *, basic_epsilon: Decimal | None = None, basic_delta: Decimal | None = None
) -> Decimal | None:
    """The smallest valid epsilon of `spend` at its delta, exact (None: no finite one).

    `basic_epsilon`, `basic_delta`: the exact ledger sums when known (else the
    records' own sums); the basic sum states a loss at the cap's delta only when
    its delta is within it, and is written exactly when it is the smallest.
    """
    basic_eps = basic_epsilon if basic_epsilon is not None else _dec(spend.basic.epsilon)
    basic_dlt = basic_delta if basic_delta is not None else _dec(spend.basic.delta)
    tight = spend.tight_epsilon
    if basic_dlt <= _dec(spend.delta) and (
        not math.isfinite(tight) or basic_eps <= Decimal(repr(tight))
    ):
        return basic_eps
    if not math.isfinite(tight):
        return None
    return Decimal(repr(tight))


def spend_of(
    records: Sequence[MechanismRecord], *, epsilon_cap: object, delta_cap: object
) -> Spend:
    """The records' spend at the cap's delta, composed as every cap check composes them.

    Through headroom.compose_history (one order, one result, shared with the builder's
    and the review's checks), so the same records give the same digits on every page.
    """
    check = within_cap_composed(
        compose_history(records), [], epsilon_cap=epsilon_cap, delta_cap=delta_cap, count_fit=False
    )
    return check.before


def _dec(value: object) -> Decimal:
    """An exact Fraction or number as a Decimal (60 digits)."""
    if isinstance(value, Fraction):
        return amounts.EXACT.divide(Decimal(value.numerator), Decimal(value.denominator))
    return Decimal(str(value))


@dataclass(frozen=True)
class SpendFigure:
    """A project's spend, the headline and its explanation (module docstring).

    spent_epsilon / committed_epsilon: the tight loss at `delta` (the cap's delta),
    None when no finite epsilon reaches it; basic_*: the plain sums of the same rows.
    """

    epsilon_cap: Decimal
    delta_cap: Decimal
    spent_epsilon: Decimal | None
    committed_epsilon: Decimal | None
    basic_spent_epsilon: Decimal
    basic_spent_delta: Decimal
    basic_committed_epsilon: Decimal
    basic_committed_delta: Decimal

    @property
    def delta(self) -> Decimal:
        """The delta at which the epsilons are read: the cap's."""
        return self.delta_cap

    @property
    def remaining_epsilon(self) -> Decimal:
        """cap - committed, never below zero (an unbounded loss leaves nothing)."""
        if self.committed_epsilon is None:
            return amounts.ZERO
        return max(amounts.ZERO, amounts.sub(self.epsilon_cap, self.committed_epsilon))

    def to_json(self) -> dict[str, object]:
        """Exact strings for JSON (null: no finite epsilon at the cap's delta)."""

        def exact(value: Decimal | None) -> str | None:
            return None if value is None else amounts.fmt(value)

        return {
            "delta": amounts.fmt(self.delta_cap),
            "epsilon_cap": amounts.fmt(self.epsilon_cap),
            "spent_epsilon": exact(self.spent_epsilon),
            "committed_epsilon": exact(self.committed_epsilon),
            "remaining_epsilon": amounts.fmt(self.remaining_epsilon),
            "basic": {
                "spent_epsilon": amounts.fmt(self.basic_spent_epsilon),
                "spent_delta": amounts.fmt(self.basic_spent_delta),
                "committed_epsilon": amounts.fmt(self.basic_committed_epsilon),
                "committed_delta": amounts.fmt(self.basic_committed_delta),
            },
        }


def _charged_records(project: Project) -> list:
    rows = LedgerEntry.objects.filter(project=project, kind=LedgerEntry.Kind.CHARGE).values_list(
        "epsilon", "delta", "mechanisms"
    )
    return rows_records(rows)


def _compute(project: Project, summary: BudgetSummary) -> SpendFigure:
    spent: Decimal | None
    committed: Decimal | None
    try:
        caps = {"epsilon_cap": project.epsilon_cap, "delta_cap": project.delta_cap}
        spent = stated_epsilon(
            spend_of(_charged_records(project), **caps),
            basic_epsilon=summary.epsilon_spent,
            basic_delta=summary.delta_spent,
        )
        committed = stated_epsilon(
            spend_of(committed_records(project=project), **caps),
            basic_epsilon=summary.epsilon_committed,
            basic_delta=summary.delta_committed,
        )
    except PrivacyParameterError:  # a ledger the accountant refuses: the sums still hold
        logger.exception("tight accounting failed for project %s", project.pk)
        spent, committed = _basic_only(summary)
    return SpendFigure(
        epsilon_cap=project.epsilon_cap,
        delta_cap=project.delta_cap,
        spent_epsilon=spent,
        committed_epsilon=committed,
        basic_spent_epsilon=summary.epsilon_spent,
        basic_spent_delta=summary.delta_spent,
        basic_committed_epsilon=summary.epsilon_committed,
        basic_committed_delta=summary.delta_committed,
    )


def _basic_only(summary: BudgetSummary) -> tuple[Decimal | None, Decimal | None]:
    """The sums as the stated loss when they state one at the cap's delta, else unbounded."""
    spent = summary.epsilon_spent if summary.delta_spent <= summary.delta_cap else None
    committed = summary.epsilon_committed if summary.delta_committed <= summary.delta_cap else None
    return spent, committed


def project_spend_figure(*, project: Project, summary: BudgetSummary | None = None) -> SpendFigure:
    """The project's SpendFigure now (module docstring), kept in the cache per ledger state.

    `summary`: the project's budget_summary when the caller already has it.
    """
    key = ":".join(
        (
            _CACHE_VERSION,
            str(settings.DATABASES["default"].get("NAME", "")),
            str(project.pk),
            ledger_state(project_id=project.pk),
            str(project.epsilon_cap),
            str(project.delta_cap),
            str(ACCOUNTANT["version"]),
        )
    )
    key = "spend-figure:" + hashlib.sha256(key.encode()).hexdigest()
    try:
        hit = cache.get(key)
    except Exception:  # a cache that fails is a miss; the page still answers
        logger.warning("spend figure cache read failed", exc_info=True)
        hit = None
    if isinstance(hit, SpendFigure):
        return hit
    figure = _compute(project, summary or budget_summary(project=project))
    try:
        cache.set(key, figure, SPEND_FIGURE_CACHE_SECONDS)
    except Exception:
        logger.warning("spend figure cache write failed", exc_info=True)
    return figure


def remaining_after(
    *, epsilon_cap: Decimal, after: Spend | None, fits: bool, fallback: Decimal
) -> Decimal:
    """What remains of the epsilon cap after a candidate release, by the headline's rule.

    `after`: the tight spend with the candidate (pld.CapCheck.after), None when it
    was not computed; then `fallback` (cap - the basic sums after) is used. Never
    negative when the release `fits`: a release that fits leaves at least zero.
    """
    if after is not None:
        stated = stated_epsilon(after)
        left = amounts.ZERO if stated is None else amounts.sub(epsilon_cap, stated)
    else:
        left = fallback
    return max(amounts.ZERO, left) if fits else left


def release_spend_figure(*, project: Project, budget_request_id: int | None) -> dict | None:
    """One computed release's own loss by the same rule, at the cap's delta (exact strings).

    {"epsilon": the tight loss of its CHARGE row's mechanisms (None: no finite one),
    "differs": whether the two read differently once rounded for people, "delta": the
    cap's delta, "basic_epsilon", "basic_delta": what it was charged}; None
    when it was not charged (nothing computed) or the accountant refuses its records.
    """
    if budget_request_id is None:
        return None
    rows = list(
        LedgerEntry.objects.filter(
            project=project, request_id=budget_request_id, kind=LedgerEntry.Kind.CHARGE
        ).values_list("epsilon", "delta", "mechanisms")
    )
    if not rows:
        return None
    basic_eps = amounts.total(eps for eps, _, _ in rows)
    basic_delta = amounts.total(delta for _, delta, _ in rows)
    try:
        spend = spend_of(
            rows_records(rows), epsilon_cap=project.epsilon_cap, delta_cap=project.delta_cap
        )
    except PrivacyParameterError:
        logger.exception("tight accounting failed for budget request %s", budget_request_id)
        return None
    stated = stated_epsilon(spend, basic_epsilon=basic_eps, basic_delta=basic_delta)
    return {
        "epsilon": None if stated is None else amounts.fmt(stated),
        # a page states the tight loss apart only where a reader would see it differ
        "differs": stated is not None
        and formatting.epsilon(stated) != formatting.epsilon(basic_eps),
        "delta": amounts.fmt(project.delta_cap),
        "basic_epsilon": amounts.fmt(basic_eps),
        "basic_delta": amounts.fmt(basic_delta),
    }
