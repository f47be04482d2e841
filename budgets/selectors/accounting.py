"""What the tight accountant sees of a project: its committed mechanism records.

Committed = every approval's RESERVE that was not RELEASEd (so charges and open
reservations alike), exactly the rows basic composition counts. Each reserve
row carries the release's mechanism records (copied from its request at
approval); a row written before records existed is a generic (epsilon, delta)
mechanism, which every accountant may use soundly.
"""

from __future__ import annotations

from collections.abc import Sequence

from budgets.models import LedgerEntry, Project
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.pld import CapCheck, within_cap

__all__ = ["committed_records", "entry_records", "project_cap_check"]


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
    return merge_records(
        record
        for epsilon, delta, mechanisms in rows
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
