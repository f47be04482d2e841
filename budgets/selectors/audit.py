"""The ledger audit: every violation of the budget invariants, as sentences."""

from __future__ import annotations

from decimal import Decimal

from django.apps import apps
from django.db.models import Sum

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry, Project
from budgets.selectors.accounting import epsilon_text, project_cap_check
from budgets.selectors.budget import budget_summary
from budgets.selectors.summary import BudgetSummary

RELEASE_SPENT_STATUSES = ("computed", "published")


RELEASE_CLOSED_STATUSES = ("rejected", "withdrawn", "failed")


def ledger_audit(*, project: Project | None = None) -> list[str]:
    """Every violation of the budget invariants, as sentences; empty when all hold.

    Per project: committed within the cap by either bound (the basic sums <= both
    caps, or the tight accountant's epsilon at the cap's delta <= the epsilon
    cap: the rule approval applies); totals from the database equal the exact
    sums of the entries; every entry's amounts equal its request's; no RESERVE
    without an approval; no settlement without a RESERVE; each computed or
    published release has exactly one CHARGE and no open RESERVE; closed releases
    hold no open RESERVE; a failed release is charged exactly when it failed after its
    data was read (releases.lifecycle.release_fail), never refunded after a read.
    """
    projects = [project] if project is not None else list(Project.objects.order_by("pk"))
    problems: list[str] = []
    for p in projects:
        problems.extend(_audit_project(p))
    return problems


def _audit_project(project: Project) -> list[str]:
    problems: list[str] = []
    where = f"project {project.slug!r}"
    summary = budget_summary(project=project)
    problems.extend(_audit_cap(project=project, where=where, summary=summary))
    if summary.epsilon_reserved < 0 or summary.delta_reserved < 0:
        problems.append(f"{where}: more settled than was ever reserved")

    db_totals = (
        LedgerEntry.objects.filter(project=project)
        .values("kind")
        .annotate(eps=Sum("epsilon"), dlt=Sum("delta"))
    )
    python_totals: dict[str, tuple[Decimal, Decimal]] = {}
    for kind, epsilon, delta in LedgerEntry.objects.filter(project=project).values_list(
        "kind", "epsilon", "delta"
    ):
        eps0, dlt0 = python_totals.get(kind, (amounts.ZERO, amounts.ZERO))
        python_totals[kind] = (amounts.add(eps0, epsilon), amounts.add(dlt0, delta))
    for row in db_totals:
        expected = python_totals.get(row["kind"], (amounts.ZERO, amounts.ZERO))
        if (row["eps"], row["dlt"]) != expected:
            problems.append(
                f"{where}: database totals of {row['kind']} entries ({row['eps']}, "
                f"{row['dlt']}) differ from the sum of the entries {expected}"
            )

    entries_by_request: dict[int, list[LedgerEntry]] = {}
    for entry in LedgerEntry.objects.filter(project=project).order_by("pk"):
        entries_by_request.setdefault(entry.request_id, []).append(entry)
    foreign = LedgerEntry.objects.filter(request__project=project).exclude(project=project)
    for entry in foreign:
        problems.append(f"{where}: ledger entry {entry.pk} is filed under another project")

    release_status = _release_statuses(project=project)
    data_read = _releases_that_read_data(project=project)
    for request in BudgetRequest.objects.filter(project=project).order_by("pk"):
        label = f"{where}, budget request {request.pk} ({request.title!r})"
        entries = entries_by_request.get(request.pk, [])
        reserves = [e for e in entries if e.kind == LedgerEntry.Kind.RESERVE]
        charges = [e for e in entries if e.kind == LedgerEntry.Kind.CHARGE]
        releases = [e for e in entries if e.kind == LedgerEntry.Kind.RELEASE]
        open_reserve = len(reserves) == 1 and not charges and not releases
        for entry in entries:
            if (entry.epsilon, entry.delta) != (request.epsilon, request.delta):
                problems.append(
                    f"{label}: {entry.kind} entry {entry.pk} moves ({entry.epsilon}, "
                    f"{entry.delta}) but the request costs ({request.epsilon}, {request.delta})"
                )
        if len(reserves) > 1:
            problems.append(f"{label}: {len(reserves)} RESERVE entries")
        if len(charges) + len(releases) > 1:
            problems.append(f"{label}: settled {len(charges) + len(releases)} times")
        if (charges or releases) and not reserves:
            problems.append(f"{label}: CHARGE or RELEASE without a RESERVE")
        status = request.status
        if reserves and status not in ("approved", "withdrawn"):
            problems.append(f"{label}: RESERVE for a request that is {status}, not approved")
        if reserves and request.decided_by_id is None:
            problems.append(f"{label}: RESERVE for a request no reviewer approved")
        if status == "approved" and not reserves:
            problems.append(f"{label}: approved but nothing was reserved")
        if status == "withdrawn" and reserves and not releases:
            problems.append(f"{label}: withdrawn but its reservation was not returned")
        rel = release_status.get(request.pk)
        if rel in RELEASE_SPENT_STATUSES:
            if len(charges) != 1:
                problems.append(f"{label}: release is {rel} but has {len(charges)} CHARGE entries")
            if open_reserve:
                problems.append(f"{label}: release is {rel} but its RESERVE is still open")
        elif rel == "failed" and request.pk in data_read:
            if releases:
                problems.append(f"{label}: release failed after reading its data but was refunded")
        elif charges and rel is not None:
            problems.append(f"{label}: CHARGE for a release that is {rel}, not computed")
        if rel in RELEASE_CLOSED_STATUSES and open_reserve:
            problems.append(f"{label}: release is {rel} but its RESERVE is still open")
    problems.extend(_audit_releases_without_request(project=project))
    return problems


def _release_statuses(*, project: Project) -> dict[int, str]:
    """budget request id -> its release's status, through the reverse relation only."""
    return dict(
        BudgetRequest.objects.filter(project=project, release__isnull=False).values_list(
            "pk", "release__status"
        )
    )


def _releases_that_read_data(*, project: Project) -> set[int]:
    """Budget request ids whose release had begun reading its data (a failure charges)."""
    return set(
        BudgetRequest.objects.filter(
            project=project, release__data_read_at__isnull=False
        ).values_list("pk", flat=True)
    )


def _audit_releases_without_request(*, project: Project) -> list[str]:
    # Looked up in the app registry: budgets never imports the releases app's code.
    try:
        release_model = apps.get_model("releases", "Release")
    except LookupError:
        return []
    rows = release_model.objects.filter(
        project_id=project.pk,
        status__in=RELEASE_SPENT_STATUSES,
        budget_request__isnull=True,
    ).values_list("pk", "status")
    return [
        f"project {project.slug!r}: release {pk} is {status} without any budget request"
        for pk, status in rows
    ]


def _audit_cap(*, project: Project, where: str, summary: BudgetSummary) -> list[str]:
    """The committed budget against the cap: within by the sums, else by the PLD bound."""
    over_eps = summary.epsilon_committed > project.epsilon_cap
    over_delta = summary.delta_committed > project.delta_cap
    if not (over_eps or over_delta):
        return []
    tight = project_cap_check(project=project, candidate=[], count_fit=False)
    if tight.within_tight:
        return []
    problems = [
        f"{where}: tightly (PLD or RDP) the committed releases are epsilon "
        f"{epsilon_text(tight.after.tight_epsilon)} at delta {project.delta_cap}, over the cap "
        f"{project.epsilon_cap}"
    ]
    if over_eps:
        problems.append(
            f"{where}: epsilon committed {summary.epsilon_committed} exceeds the cap "
            f"{project.epsilon_cap}"
        )
    if over_delta:
        problems.append(
            f"{where}: delta committed {summary.delta_committed} exceeds the cap "
            f"{project.delta_cap}"
        )
    return problems
