"""What the tight accountant sees of a project: its committed mechanism records.

Committed = every approval's RESERVE that was not RELEASEd (so charges and open
reservations alike), exactly the rows basic composition counts. Each reserve
row carries the release's mechanism records (copied from its request at
approval); a row written before records existed is a generic (epsilon, delta)
mechanism, which every accountant may use soundly.

"Fits under the cap" is decided in ONE place, `cost_fits`, for approval, the
builder's preview, saving and submitting a draft and a request's standing, so
an owner is never told "does not fit" of a release an approval would admit:
the project stays within (epsilon_cap, delta_cap) when EITHER valid bound shows
it (dpportal.privacy.pld, module docstring point 4). The basic sums are exact
and cheap, so they are tried first; the PLD bound is computed only when they
do not suffice (a correct short cut: the verdict is their OR).

Pages that show the tight spend and the fit count (the builder's preview, a
request's review) read it through `cap_check_cached`: the check is kept in
Django's cache under the project's ledger state (its last row id: the ledger is
append-only), the candidate's records and the caps (public parameters only;
never data), so a page viewed again reads neither the history nor does any
accounting, and a new ledger row or cap is a different key. The approval
itself never reads the cache: it decides under the project lock on what it reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max, Q
from django.utils.translation import gettext

from budgets import amounts
from budgets.models import LedgerEntry, Project
from budgets.selectors.summary import BudgetSummary
from dpportal import formatting
from dpportal.privacy.headroom import compose_history
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.pld import CapCheck, within_cap, within_cap_composed

__all__ = [
    "CAP_CHECK_CACHE_SECONDS",
    "CostFit",
    "cap_check_cached",
    "committed_records",
    "cost_fits",
    "entry_records",
    "epsilon_text",
    "committed_records_at",
    "committed_records_of",
    "ledger_states",
    "fit_text",
    "float_exact",
    "ledger_state",
    "rows_records",
    "project_cap_check",
]


def entry_records(*, epsilon: object, delta: object, mechanisms: list) -> list[MechanismRecord]:
    """The records of one ledger row or request: its mechanisms, or generic (epsilon, delta)."""
    if mechanisms:
        return [MechanismRecord.from_dict(m) for m in mechanisms]
    return [MechanismRecord.generic(epsilon=epsilon, delta=delta)]


def committed_records(*, project: Project) -> list[MechanismRecord]:
    """The project's committed mechanisms (charges and open reservations), equal ones merged."""
    released = LedgerEntry.objects.filter(project=project, kind=LedgerEntry.Kind.RELEASE).values(
        "request_id"
    )
    rows = (
        LedgerEntry.objects.filter(project=project, kind=LedgerEntry.Kind.RESERVE)
        .exclude(request_id__in=released)
        .values_list("epsilon", "delta", "mechanisms")
    )
    return rows_records(rows)


def rows_records(rows: Iterable[tuple[object, object, list]]) -> list[MechanismRecord]:
    """The records of ledger rows (epsilon, delta, mechanisms), equal ones merged.

    Rows with the same stored mechanisms (a design published again and again) are
    read once and counted: equal to reading each (a record used k times is the
    record with k times its count), without parsing a long ledger row by row.
    """
    counts: dict[str, list] = {}
    for epsilon, delta, mechanisms in rows:
        key = json.dumps([str(epsilon), str(delta), mechanisms], sort_keys=True)
        seen = counts.setdefault(key, [epsilon, delta, mechanisms, 0])
        seen[3] += 1
    return merge_records(
        record.times(times)
        for epsilon, delta, mechanisms, times in counts.values()
        for record in entry_records(epsilon=epsilon, delta=delta, mechanisms=mechanisms)
    )


def project_cap_check(
    *, project: Project, candidate: Sequence[MechanismRecord], count_fit: bool = True
) -> CapCheck:
    """The project's spend before/after `candidate`, both bounds, and how many more fit."""
    return within_cap(
        committed_records(project=project),
        candidate,
        epsilon_cap=project.epsilon_cap,
        delta_cap=project.delta_cap,
        count_fit=count_fit,
    )


logger = logging.getLogger(__name__)

#: how long a page's cap check is kept: its key names everything it depends on, so
#: this only bounds the cache's memory, never how stale an answer can be
CAP_CHECK_CACHE_SECONDS = 24 * 3600
_CACHE_VERSION = "cap-check-1"


def _records_digest(records: Iterable[MechanismRecord]) -> str:
    """An order-free digest of records' exact public parameters (equal ones merged)."""
    parts = sorted(repr((r.key, r.count)) for r in merge_records(records))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def ledger_state(*, project_id: int, moment: Q | None = None) -> str:
    """Names the project's ledger rows (matching `moment`): the last row's id, with the
    moment's condition.

    The ledger is append-only (a database trigger refuses updates and deletes) and
    ids follow commit order under the project lock, so the rows a moment selects,
    and so the committed records, are fixed by these two.
    """
    moment = moment if moment is not None else Q()
    rows = LedgerEntry.objects.filter(moment, project_id=project_id)
    return f"{rows.aggregate(last=Max('pk'))['last'] or 0}|{moment!s}"


def ledger_states(*, project_ids: Iterable[int]) -> dict[int, str]:
    """ledger_state (the moment now) of several projects, in one query."""
    ids = sorted(set(project_ids))
    last = dict(
        LedgerEntry.objects.filter(project_id__in=ids)
        .order_by()
        .values("project_id")
        .annotate(last=Max("pk"))
        .values_list("project_id", "last")
    )
    return {pk: f"{last.get(pk) or 0}|{Q()!s}" for pk in ids}


def committed_records_of(*, project_ids: Iterable[int]) -> dict[int, list[MechanismRecord]]:
    """committed_records of several projects, in one query (project id -> its records)."""
    ids = sorted(set(project_ids))
    released = LedgerEntry.objects.filter(project_id__in=ids, kind=LedgerEntry.Kind.RELEASE).values(
        "request_id"
    )
    rows = (
        LedgerEntry.objects.filter(project_id__in=ids, kind=LedgerEntry.Kind.RESERVE)
        .exclude(request_id__in=released)
        .values_list("project_id", "epsilon", "delta", "mechanisms")
    )
    by_project: dict[int, list[tuple[object, object, list]]] = {pk: [] for pk in ids}
    for project_id, epsilon, delta, mechanisms in rows:
        by_project[project_id].append((epsilon, delta, mechanisms))
    return {pk: rows_records(project_rows) for pk, project_rows in by_project.items()}


#: committed records of this many recent (project, ledger state) pairs are kept in
#: process: reading and parsing a long ledger costs more than composing it
COMMITTED_RECORDS_KEPT = 16


@functools.lru_cache(maxsize=COMMITTED_RECORDS_KEPT)
def _committed_at(database: str, project_id: int, state: str) -> tuple[MechanismRecord, ...]:
    del database, state  # key only: the rows are fixed by them (ledger_state)
    return tuple(committed_records(project=Project(pk=project_id)))


def committed_records_at(*, project_id: int, state: str) -> list[MechanismRecord]:
    """committed_records of the project now, given its `state` (ledger_state, moment now),
    kept in process for the few most recent states."""
    database = str(settings.DATABASES["default"].get("NAME", ""))
    return list(_committed_at(database, project_id, state))


def cap_check_cached(
    *,
    project_id: int,
    state: str,
    history: Callable[[], Sequence[MechanismRecord]],
    candidate: Sequence[MechanismRecord],
    epsilon_cap: object,
    delta_cap: object,
) -> CapCheck:
    """`within_cap` with the fit count, kept in Django's cache for pages (module docstring).

    Keyed by the project, `state` (ledger_state: its last ledger row up to the
    moment measured), the candidate's records and the caps; `history()` reads the
    committed records only on a miss. A cache that fails is a miss (the check is
    computed, never refused).
    """
    key = ":".join(
        (
            _CACHE_VERSION,
            str(settings.DATABASES["default"].get("NAME", "")),
            str(project_id),
            state,
            _records_digest(candidate),
            str(epsilon_cap),
            str(delta_cap),
        )
    )
    key = "cap-check:" + hashlib.sha256(key.encode()).hexdigest()
    try:
        hit = cache.get(key)
    except Exception:  # a cache that fails is a miss; the page still answers
        logger.warning("cap check cache read failed", exc_info=True)
        hit = None
    if isinstance(hit, CapCheck):
        return hit
    check = within_cap_composed(
        compose_history(history()), candidate, epsilon_cap=epsilon_cap, delta_cap=delta_cap
    )
    try:
        cache.set(key, check, CAP_CHECK_CACHE_SECONDS)
    except Exception:
        logger.warning("cap check cache write failed", exc_info=True)
    return check


def fit_text(*, fit: int | None, at_least: bool) -> str:
    """How many releases fit, for a person: "4,096", or "at least 4,096" for a lower bound."""
    if fit is None:
        return ""
    if at_least:
        return gettext("at least %(count)s") % {"count": formatting.integer(fit)}
    return formatting.integer(fit)


def float_exact(value: float) -> str | None:
    """A float accountant's epsilon for JSON: its shortest round-trip digits; None if infinite."""
    if not math.isfinite(value):
        return None
    return amounts.fmt(Decimal(repr(value)))


def epsilon_text(value: float) -> str:
    """A float accountant's epsilon for a person (formatting.budget), or words when infinite."""
    return formatting.budget(value) if math.isfinite(value) else "more than any finite epsilon"


@dataclass(frozen=True)
class CostFit:
    """Whether a cost fits under its project's cap, and (when it was needed) the tight check.

    within_basic: committed + cost within both caps by the plain sums; tight: the
    PLD check, computed only when the sums do not suffice (None otherwise).
    """

    project: Project
    summary: BudgetSummary
    epsilon: Decimal
    delta: Decimal
    within_basic: bool
    tight: CapCheck | None

    @property
    def within(self) -> bool:
        """Within the cap by either bound."""
        return self.within_basic or (self.tight is not None and self.tight.within)

    def refusal(self, *, what: str) -> str:
        """Why it does not fit, for a reviewer or owner: both bounds, in words.

        `what` names the thing that costs ("this request", "this release"), in the
        active language, as the whole message is.
        """
        eps_left = amounts.sub(self.project.epsilon_cap, self.summary.epsilon_committed)
        delta_left = amounts.sub(self.project.delta_cap, self.summary.delta_committed)
        values = {
            "what": what,
            "epsilon": amounts.text(self.epsilon),
            "delta": amounts.text(self.delta),
            "epsilon_left": amounts.text(eps_left),
            "delta_left": amounts.text(delta_left),
            "epsilon_committed": amounts.text(self.summary.epsilon_committed),
            "delta_committed": amounts.text(self.summary.delta_committed),
            "epsilon_cap": amounts.text(self.project.epsilon_cap),
            "delta_cap": amounts.text(self.project.delta_cap),
        }
        if eps_left >= 0 and delta_left >= 0:
            message = gettext(
                "Budget exceeded: %(what)s costs epsilon %(epsilon)s, delta %(delta)s, but only "
                "epsilon %(epsilon_left)s, delta %(delta_left)s remain in the project by basic "
                "composition (the plain sums of all releases)."
            )
        else:
            message = gettext(
                "Budget exceeded: %(what)s costs epsilon %(epsilon)s, delta %(delta)s, and by "
                "basic composition (the plain sums of all releases) the project is already past "
                "its cap: epsilon %(epsilon_committed)s, delta %(delta_committed)s committed of "
                "epsilon %(epsilon_cap)s, delta %(delta_cap)s."
            )
        message = message % values
        if self.tight is None:
            return message
        before, after = self.tight.before.tight_epsilon, self.tight.after.tight_epsilon
        left = float(self.project.epsilon_cap) - before
        values |= {
            "message": message,
            "before": epsilon_text(before),
            "after": epsilon_text(after),
            "left": epsilon_text(left),
        }
        if left > 0:
            tight = gettext(
                "%(message)s Counted tightly (privacy loss distributions or Renyi DP, at the "
                "cap's delta %(delta_cap)s), the project has used epsilon %(before)s of its cap of "
                "%(epsilon_cap)s, so epsilon %(left)s remains, and %(what)s would bring it to "
                "epsilon %(after)s."
            )
        else:
            tight = gettext(
                "%(message)s Counted tightly (privacy loss distributions or Renyi DP, at the "
                "cap's delta %(delta_cap)s), the project has used epsilon %(before)s of its cap of "
                "%(epsilon_cap)s, and %(what)s would bring it to epsilon %(after)s."
            )
        return tight % values

    def extra(self) -> dict[str, str | None]:
        """The refusal's machine-readable details: exact strings (JSON keeps exact values)."""
        eps_left = amounts.sub(self.project.epsilon_cap, self.summary.epsilon_committed)
        delta_left = amounts.sub(self.project.delta_cap, self.summary.delta_committed)
        out: dict[str, str | None] = {
            "epsilon_remaining": amounts.fmt(eps_left),
            "delta_remaining": amounts.fmt(delta_left),
        }
        if self.tight is not None:
            before, after = self.tight.before.tight_epsilon, self.tight.after.tight_epsilon
            remaining = float(self.project.epsilon_cap) - before
            out |= {
                "tight_delta": amounts.fmt(self.project.delta_cap),
                "tight_epsilon_committed": float_exact(before),
                "tight_epsilon_after": float_exact(after),
                "tight_epsilon_remaining": float_exact(remaining),
            }
        return out


def cost_fits(
    *,
    project: Project,
    summary: BudgetSummary,
    epsilon: Decimal,
    delta: Decimal,
    mechanisms: list | None,
    cached: bool = False,
) -> CostFit:
    """Would committing (epsilon, delta) with these mechanism records keep `project` in its cap?

    `summary`: the project's current basic totals (budget_summary, read under
    the project's row lock by an approval). `mechanisms`: the release's records
    (MechanismRecord.to_dict); none: a generic (epsilon, delta) mechanism.
    The PLD bound is computed only when the basic sums do not fit (see the
    module docstring): an approval within the plain sums costs no PLD.
    `cached`: for pages (cap_check_cached); an approval decides on what it reads
    under the project lock and passes False.
    """
    within_basic = epsilon <= summary.epsilon_remaining and delta <= summary.delta_remaining
    tight = None
    if not within_basic:
        candidate = entry_records(epsilon=epsilon, delta=delta, mechanisms=mechanisms or [])
        if cached:
            state = ledger_state(project_id=project.pk)
            tight = cap_check_cached(
                project_id=project.pk,
                state=state,
                history=lambda: committed_records_at(project_id=project.pk, state=state),
                candidate=candidate,
                epsilon_cap=project.epsilon_cap,
                delta_cap=project.delta_cap,
            )
        else:
            tight = project_cap_check(project=project, candidate=candidate, count_fit=False)
    return CostFit(project, summary, epsilon, delta, within_basic, tight)
