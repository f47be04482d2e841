"""The public epsilon registry of a project (Dwork & Roth section 13.1)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.apps import apps
from django.db.models import Q
from django.utils import timezone

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry, Project
from budgets.selectors.budget import budget_summary
from dpportal.privacy.accounting import Cost, group_privacy, group_privacy_delta
from dpportal.privacy.params import exact_str

REGISTRY_VERSION = 1


GROUP_SIZES = (1, 2, 5, 10)


BURN_WINDOW_DAYS = 30


RATE_PLACES = Decimal("0.000001")


ACCOUNTING_RULE = (
    "Basic sequential composition (Dwork & Roth, Theorem B.2): the epsilons and the deltas "
    "of all releases add up. Within a release, statistics compose sequentially; the cells of "
    "one histogram are disjoint and cost once. Budget is counted as spent when a release's "
    "noisy results are computed, whether or not they were published."
)


def _group_privacy(*, epsilon: Decimal, delta: Decimal, group_size: int) -> dict[str, str]:
    """The (epsilon, delta) protecting a group of `group_size` privacy units, as exact strings.

    The math is dpportal.privacy.accounting's: epsilon is group_privacy (g * eps,
    exact); delta is group_privacy_delta (g * exp((g-1) * eps) * delta, a float
    bound capped at 1, written with the float's shortest round-trip digits).
    """
    # No budget spent yet: accounting refuses eps = 0, and a group of nothing spent spends 0.
    eps_k = group_privacy(epsilon, group_size) if epsilon > 0 else Fraction(0)
    try:
        delta_k = group_privacy_delta(Cost(epsilon, delta), group_size)
    except OverflowError:
        # exp((g-1) * eps) beyond a float: the bound is far past its cap of 1.
        delta_k = 1.0
    return {"epsilon": exact_str(eps_k), "delta": amounts.fmt(Decimal(repr(delta_k)))}


def _pair(epsilon: Decimal, delta: Decimal) -> dict[str, str]:
    return {"epsilon": amounts.fmt(epsilon), "delta": amounts.fmt(delta)}


def project_registry(*, project: Project, now: datetime | None = None) -> dict:
    """The public epsilon registry of `project`, as a JSON-ready document.

    All amounts are exact decimal strings taken from the ledger. Computed but
    unpublished releases count as spent (privacy was spent) and are reported only
    as a number and a total, never with their content. Validates against
    budgets/schemas/registry.schema.json.
    """
    now = now or timezone.now()
    summary = budget_summary(project=project)
    charges = list(
        LedgerEntry.objects.filter(project=project, kind=LedgerEntry.Kind.CHARGE)
        .order_by("created_at", "id")
        .values_list("request_id", "epsilon", "delta", "created_at")
    )
    window_start = now - timedelta(days=BURN_WINDOW_DAYS)
    eps_30 = amounts.total(e for _, e, _, at in charges if at >= window_start)
    delta_30 = amounts.total(d for _, _, d, at in charges if at >= window_start)
    first_at = charges[0][3] if charges else None
    if first_at is not None:
        days = max(Decimal((now - first_at).total_seconds()) / Decimal(86400), Decimal(1))
        months = max(days / Decimal(BURN_WINDOW_DAYS), Decimal(1))
        per_month = (summary.epsilon_spent / months).quantize(RATE_PLACES)
    else:
        per_month = None

    published = list(
        BudgetRequest.objects.filter(project=project, release__status="published")
        .order_by("release__published_at", "pk")
        .values(
            "pk",
            "epsilon",
            "delta",
            "decided_at",
            "release__pk",
            "release__title",
            "release__mechanism",
            "release__published_at",
        )
    )
    published_ids = {row["pk"] for row in published}
    charged_ids = {request_id for request_id, *_ in charges}
    unpublished = [c for c in charges if c[0] not in published_ids]
    mechanisms = sorted(
        set(
            BudgetRequest.objects.filter(pk__in=charged_ids, release__isnull=False).values_list(
                "release__mechanism", flat=True
            )
        )
    )
    datasets = _registry_datasets(project=project)
    bounds = [d["max_rows_per_person"] for d in datasets if d["max_rows_per_person"]]
    max_rows = max(bounds) if bounds and len(bounds) == len(datasets) else None

    group_table = [
        {
            "group_size": g,
            "spent": _group_privacy(
                epsilon=summary.epsilon_spent, delta=summary.delta_spent, group_size=g
            ),
            "cap": _group_privacy(
                epsilon=project.epsilon_cap, delta=project.delta_cap, group_size=g
            ),
        }
        for g in GROUP_SIZES
    ]
    return {
        "version": REGISTRY_VERSION,
        "project": {"name": project.name, "slug": project.slug},
        "data_use": project.description,
        "privacy_unit": {
            "description": project.privacy_unit_description,
            "max_rows_per_person": max_rows,
            "datasets": datasets,
            "neighbouring": "add or remove one privacy unit (unbounded differential privacy)",
        },
        "mechanism_families": mechanisms,
        "accounting_rule": ACCOUNTING_RULE,
        "caps": _pair(project.epsilon_cap, project.delta_cap),
        "spent": _pair(summary.epsilon_spent, summary.delta_spent),
        "committed": _pair(summary.epsilon_committed, summary.delta_committed),
        "remaining": _pair(summary.epsilon_remaining, summary.delta_remaining),
        "burn_rate": {
            "window_days": BURN_WINDOW_DAYS,
            "last_30_days": _pair(eps_30, delta_30),
            "epsilon_per_month_since_first_release": (
                amounts.fmt(per_month) if per_month is not None else None
            ),
            "first_release_at": first_at.isoformat() if first_at else None,
        },
        "group_privacy": {
            "rule": "A group of g privacy units is protected with g*epsilon and "
            "g*exp((g-1)*epsilon)*delta (Dwork & Roth, Theorem 2.2).",
            "table": group_table,
        },
        "unpublished_spent": {
            "count": len(unpublished),
            **_pair(
                amounts.total(e for _, e, _, _ in unpublished),
                amounts.total(d for _, _, d, _ in unpublished),
            ),
        },
        "releases": [
            {
                "id": row["release__pk"],
                "title": row["release__title"],
                "mechanism": row["release__mechanism"],
                "epsilon": amounts.fmt(row["epsilon"]),
                "delta": amounts.fmt(row["delta"]),
                "approved_at": row["decided_at"].isoformat() if row["decided_at"] else None,
                "published_at": (
                    row["release__published_at"].isoformat()
                    if row["release__published_at"]
                    else None
                ),
            }
            for row in published
        ],
        "generated_at": now.isoformat(),
    }


def _registry_datasets(*, project: Project) -> list[dict]:
    """Each public dataset's privacy unit (public: the ID column's name and the bound L).

    Public by design only: a dataset that is ready, declared and whose unit an owner
    confirmed, or one a published release used. Never a failed upload, one still
    ingesting or undeclared (deleted ones are gone).
    """
    try:
        dataset_model = apps.get_model("datasets", "Dataset")
    except LookupError:
        return []
    usable = Q(status="ready", declared=True, unit_confirmed_at__isnull=False)
    published = Q(releases__status="published")
    rows = (
        dataset_model.objects.filter(project_id=project.pk)
        .filter(usable | published)
        .distinct()
        .order_by("pk")
    )
    return [
        {
            "name": row.name,
            "unit": f"person identified by column {row.id_column!r}" if row.id_column else "row",
            # Row-level protection makes no claim about people with several rows.
            "max_rows_per_person": int(row.contribution_bound) if row.id_column else None,
        }
        for row in rows
    ]
