"""A request's spend under tight accounting, before and after it, at the moment that matters.

The tight twin of budget.budget_standing: the project's committed mechanism
records (accounting.committed_records' rule: RESERVE rows not RELEASEd) composed
by privacy loss distributions (dpportal.privacy.pld), with the basic sums beside
them, and how many releases like this one fit under the cap.

Which moment, as budget_standing: a pending request is measured now (before:
committed now; after: with the request). A request that was approved is measured
from the ledger rows written before its RESERVE row (ids follow commit order under
the project lock) and the caps of that time: before = those committed records
(without this request), after = with it, so its cost is never counted twice
whatever was approved since. A rejected request: the rows up to the rejection,
nothing added after. Withdrawn before any decision: now, nothing added after.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import ClassVar

from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry
from budgets.selectors.accounting import (
    cap_check_cached,
    committed_records_of,
    entry_records,
    fit_text,
    ledger_state,
    ledger_states,
    rows_records,
)
from budgets.selectors.budget import BudgetStanding, MomentLabels, _caps_at
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.pld import Spend

__all__ = [
    "SpendStanding",
    "spend_standing",
    "spend_standings_pending",
    "standing_with_spend",
]

logger = logging.getLogger(__name__)


def _finite(value: float) -> float | None:
    """An accountant's epsilon, None when no finite epsilon reaches the delta."""
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class SpendStanding(MomentLabels):
    """The project's privacy loss before and after a request, both ways, at the cap's delta.

    epsilon_*: the tightest bound (pld.Spend.epsilon); pld_epsilon_*: the tight bound,
    PLD or RDP whichever is smaller (pld.Spend.tight_epsilon; within_pld likewise:
    pld.CapCheck.within_tight); basic_*: the plain sums. None: no finite epsilon at that delta.
    fit: how many releases like this one (this one included) fit under the cap;
    fit_at_least: fit is a lower bound (the search is bounded: pld.MAX_PLD_FIT).
    """

    moment: str
    at: datetime | None
    epsilon_cap: Decimal
    delta_cap: Decimal
    epsilon_before: float | None
    epsilon_after: float | None
    pld_epsilon_before: float | None
    pld_epsilon_after: float | None
    basic_epsilon_before: Fraction
    basic_delta_before: Fraction
    basic_epsilon_after: Fraction
    basic_delta_after: Fraction
    within_pld: bool
    within_basic: bool
    fit: int | None
    fit_at_least: bool = False

    LABELS: ClassVar[dict[str, tuple[str, str]]] = {
        "now": (_("Committed now"), _("After approval")),
        "approval": (_("Before the approval"), _("After the approval")),
        "rejection": (_("At the rejection"), _("After the rejection (nothing reserved)")),
        "withdrawn": (_("Committed now"), _("After (nothing reserved)")),
    }

    @property
    def fit_text(self) -> str:
        """The fit count for a person: "12", or "at least 4,096" for a lower bound."""
        return fit_text(fit=self.fit, at_least=self.fit_at_least)

    @property
    def within(self) -> bool:
        """Approving fits under the cap by either bound (for a pending request)."""
        return self.within_pld or self.within_basic


def _committed_records(*, project_id: int, moment: Q) -> list[MechanismRecord]:
    """accounting.committed_records restricted to the ledger rows matching `moment`."""
    entries = LedgerEntry.objects.filter(moment, project_id=project_id)
    released = entries.filter(kind=LedgerEntry.Kind.RELEASE).values("request_id")
    rows = (
        entries.filter(kind=LedgerEntry.Kind.RESERVE)
        .exclude(request_id__in=released)
        .values_list("epsilon", "delta", "mechanisms")
    )
    return rows_records(rows)


def _moment(budget_request: BudgetRequest) -> tuple[str, datetime | None, Q, bool]:
    """(moment, at, which ledger rows count, whether the request is added after)."""
    if budget_request.status == BudgetRequest.Status.PENDING:
        return "now", None, Q(), True
    reserve = (
        LedgerEntry.objects.filter(request=budget_request, kind=LedgerEntry.Kind.RESERVE)
        .only("pk", "created_at")
        .first()
    )
    if reserve is not None:
        return "approval", reserve.created_at, Q(pk__lt=reserve.pk), True
    if budget_request.decided_at is not None:
        at = budget_request.decided_at
        return "rejection", at, Q(created_at__lte=at), False
    return "withdrawn", None, Q(), False


def spend_standing(*, budget_request: BudgetRequest) -> SpendStanding | None:
    """The request's SpendStanding (None when the ledger's records cannot be accounted).

    Never raises for the accounting: the standing is shown on pages answered after
    a decision has committed (the review page, the API's answer to an approval),
    which must state the decision whatever the accountant does.
    """
    project = budget_request.project
    moment, at, rows, add = _moment(budget_request)
    epsilon_cap, delta_cap = (
        _caps_at(project=project, at=at) if at else (project.epsilon_cap, project.delta_cap)
    )
    return _accounted(
        budget_request=budget_request,
        moment=moment,
        at=at,
        caps=(epsilon_cap, delta_cap),
        state=lambda: ledger_state(project_id=project.pk, moment=rows),
        history=lambda: _committed_records(project_id=project.pk, moment=rows),
        add=add,
    )


def spend_standings_pending(
    *, budget_requests: Sequence[BudgetRequest]
) -> dict[int, SpendStanding | None]:
    """spend_standing of pending requests (a list page), by request id, in at most two
    queries whatever their number: the projects' ledger states, and their committed
    records only when some check is not in the cache (accounting.cap_check_cached)."""
    project_ids = {r.project_id for r in budget_requests}
    states = ledger_states(project_ids=project_ids) if budget_requests else {}
    loaded: dict[int, list[MechanismRecord]] = {}

    def history(project_id: int) -> list[MechanismRecord]:
        if not loaded:  # the first miss reads every listed project's records at once
            loaded.update(committed_records_of(project_ids=project_ids))
        return loaded.get(project_id, [])

    out: dict[int, SpendStanding | None] = {}
    for r in budget_requests:
        project = r.project
        out[r.pk] = _accounted(
            budget_request=r,
            moment="now",
            at=None,
            caps=(project.epsilon_cap, project.delta_cap),
            state=lambda pk=project.pk: states[pk],
            history=lambda pk=project.pk: history(pk),
            add=True,
        )
    return out


def _accounted(
    *,
    budget_request: BudgetRequest,
    moment: str,
    at: datetime | None,
    caps: tuple[Decimal, Decimal],
    state: Callable[[], str],
    history: Callable[[], list[MechanismRecord]],
    add: bool,
) -> SpendStanding | None:
    """The SpendStanding of a request measured against `history` (None if not accountable)."""
    epsilon_cap, delta_cap = caps
    try:
        candidate = entry_records(
            epsilon=budget_request.epsilon,
            delta=budget_request.delta,
            mechanisms=budget_request.mechanisms,
        )
        check = cap_check_cached(
            project_id=budget_request.project_id,
            state=state(),
            history=history,
            candidate=candidate,
            epsilon_cap=epsilon_cap,
            delta_cap=delta_cap,
        )
    except PrivacyParameterError:
        logger.exception("tight accounting failed for budget request %s", budget_request.pk)
        return None
    except Exception:  # informational: a page after an approval must still answer
        logger.exception("tight accounting raised for budget request %s", budget_request.pk)
        return None
    before: Spend = check.before
    after: Spend = check.after if add else check.before
    return SpendStanding(
        moment=moment,
        at=at,
        epsilon_cap=epsilon_cap,
        delta_cap=delta_cap,
        epsilon_before=_finite(before.epsilon),
        epsilon_after=_finite(after.epsilon),
        pld_epsilon_before=_finite(before.tight_epsilon),
        pld_epsilon_after=_finite(after.tight_epsilon),
        basic_epsilon_before=before.basic.epsilon,
        basic_delta_before=before.basic.delta,
        basic_epsilon_after=after.basic.epsilon,
        basic_delta_after=after.basic.delta,
        within_pld=check.within_tight,
        within_basic=check.within_basic,
        fit=check.fit,
        fit_at_least=check.fit_at_least,
    )


def standing_with_spend(standing: BudgetStanding, spend: SpendStanding | None) -> BudgetStanding:
    """`standing` with the remaining epsilon by the one spend figure (spend_figure's rule).

    Before: cap - the tight loss before, at least zero; after: cap - the tight loss
    after, at least zero when the request fits (by any bound), so a request that fits
    never shows a negative remainder. `spend` None (not accounted): unchanged.
    """
    if spend is None:
        return standing

    def left(loss: float | None) -> Decimal:
        if loss is None:
            return amounts.ZERO
        return amounts.sub(spend.epsilon_cap, Decimal(repr(loss)))

    before = max(amounts.ZERO, left(spend.epsilon_before))
    after = left(spend.epsilon_after)
    fits = standing.fits if standing.moment == "now" else after >= 0 or spend.within
    return replace(
        standing,
        tight_epsilon_before=before,
        tight_epsilon_after=max(amounts.ZERO, after) if fits else after,
    )
