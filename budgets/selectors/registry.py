"""The public epsilon registry of a project (Dwork & Roth section 13.1)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.apps import apps
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone
from django.utils.translation import gettext_noop

from budgets import amounts
from budgets.models import BudgetRequest, LedgerEntry, Project
from budgets.public_version import (
    local_copies,
    project_public_version,
    project_public_version_peek,
    public_version_key,
)
from budgets.selectors.budget import budget_summary
from budgets.selectors.projects import project_get_public
from budgets.selectors.registry_accounting import registry_tight
from budgets.selectors.spend_figure import project_spend_figure
from dpportal.bilingual import Bilingual
from dpportal.privacy.accounting import Cost, group_privacy, group_privacy_delta
from dpportal.privacy.params import exact_str
from dpportal.privacy.pld import ACCOUNTANT

# 2: tight accounting (the PLD loss, the accountant, each release's mechanisms)
# 3: the RDP bound, exact records of Gaussian vectors (zCDP) and of each quantile
# 4: "spend", the one spend figure (tight at the cap's delta, the basic sums beside);
#    spent, committed and remaining stay, as the basic sums
REGISTRY_VERSION = 4


GROUP_SIZES = (1, 2, 5, 10)


BURN_WINDOW_DAYS = 30


RATE_PLACES = Decimal("0.000001")


ACCOUNTING_RULE = gettext_noop(
    "Three valid bounds, the smallest stated: basic sequential composition (Dwork & Roth, "
    "Theorem B.2), where the epsilons and the deltas of all releases add up, and tight "
    "composition of the releases' noise mechanisms at the cap's delta, by privacy loss "
    "distributions and by Renyi differential privacy (see tight_accounting). A release may "
    "be approved when any bound keeps the project within its cap. Within a release, "
    "statistics compose sequentially; the "
    "cells of one histogram are disjoint and cost once. Budget is counted as spent when a "
    "release's noisy results are computed, whether or not they were published."
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
    today = timezone.localdate(now, timezone=UTC)
    summary = budget_summary(project=project)
    figure = project_spend_figure(project=project, summary=summary)
    # Only the (public) approval DAY of each charged request is used for time: the
    # charge's own time is when the computation finished, and its distance to the
    # approval would publish the compute duration (PRIVACY-TESTING.md, "Timing").
    charges = [
        (request_id, epsilon, delta, _day(decided_at or created_at))
        for request_id, epsilon, delta, decided_at, created_at in LedgerEntry.objects.filter(
            project=project, kind=LedgerEntry.Kind.CHARGE
        )
        .order_by("request__decided_at", "id")
        .values_list("request_id", "epsilon", "delta", "request__decided_at", "created_at")
    ]
    window_start = today - timedelta(days=BURN_WINDOW_DAYS)
    eps_30 = amounts.total(e for _, e, _, day in charges if day >= window_start)
    delta_30 = amounts.total(d for _, _, d, day in charges if day >= window_start)
    first_day = min((day for *_, day in charges), default=None)
    if first_day is not None:
        days = max(Decimal((today - first_day).days), Decimal(1))
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
            "release__title_zh",
            "release__mechanism",
            "release__published_at",
        )
    )
    published_ids = {row["pk"] for row in published}
    tight, mechanisms_of, unpublished_mechanisms = registry_tight(
        project=project,
        spent=(summary.epsilon_spent, summary.delta_spent),
        published_request_ids=published_ids,
    )
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
        "project": {
            "name": project.name,
            "name_i18n": Bilingual.of(project, "name").as_json(),
            "slug": project.slug,
        },
        "data_use": project.description,
        "data_use_i18n": Bilingual.of(project, "description").as_json(),
        "privacy_unit": {
            "description": project.privacy_unit_description,
            "description_i18n": Bilingual.of(project, "privacy_unit_description").as_json(),
            "max_rows_per_person": max_rows,
            "datasets": datasets,
            "neighbouring": gettext_noop(
                "add or remove one privacy unit (unbounded differential privacy)"
            ),
        },
        "mechanism_families": mechanisms,
        "accounting_rule": ACCOUNTING_RULE,
        "tight_accounting": tight,
        "spend": figure.to_json(),
        "caps": _pair(project.epsilon_cap, project.delta_cap),
        "spent": _pair(summary.epsilon_spent, summary.delta_spent),
        "committed": _pair(summary.epsilon_committed, summary.delta_committed),
        "remaining": _pair(summary.epsilon_remaining, summary.delta_remaining),
        "burn_rate": {
            "window_days": BURN_WINDOW_DAYS,
            "last_30_days": _pair(eps_30, delta_30),
            "epsilon_per_month_since_first_approval": (
                amounts.fmt(per_month) if per_month is not None else None
            ),
            "first_approved_at": first_day.isoformat() if first_day else None,
        },
        "group_privacy": {
            "rule": gettext_noop(
                "A group of g privacy units is protected with g*epsilon and "
                "g*exp((g-1)*epsilon)*delta (Dwork & Roth, Theorem 2.2)."
            ),
            "table": group_table,
        },
        "unpublished_spent": {
            "count": len(unpublished),
            **_pair(
                amounts.total(e for _, e, _, _ in unpublished),
                amounts.total(d for _, _, d, _ in unpublished),
            ),
            "mechanisms": unpublished_mechanisms,
        },
        "releases": [
            {
                "id": row["release__pk"],
                "title": row["release__title"],
                "title_i18n": Bilingual(
                    en=row["release__title"], zh=row["release__title_zh"]
                ).as_json(),
                "mechanism": row["release__mechanism"],
                "epsilon": amounts.fmt(row["epsilon"]),
                "delta": amounts.fmt(row["delta"]),
                "approved_at": _day_text(row["decided_at"]),
                "published_at": _day_text(row["release__published_at"]),
                "mechanisms": mechanisms_of.get(row["pk"], []),
            }
            for row in published
        ],
        "generated_at": today.isoformat(),
    }


# A document is rebuilt when the project's public token or the day changes; kept a day.
REGISTRY_CACHE_SECONDS = 24 * 3600


def _cached_version(*, slug: str, token: str, now: datetime | None = None) -> str:
    """The document's version (its HTTP ETag): the project's public token, the UTC day
    (the 30-day window), the document's shape and the accountant's version (another
    dp-accounting may state another PLD epsilon)."""
    today = timezone.localdate(now or timezone.now(), timezone=UTC)
    text = json.dumps([slug, token, today.isoformat(), REGISTRY_VERSION, ACCOUNTANT["version"]])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _document_key(version: str) -> str:
    return f"registry:doc:{version}"


def project_registry_cached(*, project: Project) -> tuple[dict, str]:
    """(document, version): the registry from the cache, built once per version.

    The document is public and identical for everyone, like a published release
    page; the version is also the HTTP ETag. It changes with the project's public
    token (budgets.public_version), which every change to what the document shows
    renews, and with the day.
    """
    token = project_public_version(slug=project.slug)  # before the data is read
    version = _cached_version(slug=project.slug, token=token)
    entry = cache.get(_document_key(version))
    if entry is None:
        entry = _registry_entry(project=project)
        cache.set(_document_key(version), entry, REGISTRY_CACHE_SECONDS)
    return entry["document"], version


def _registry_entry(*, project: Project) -> dict:
    document = project_registry(project=project)
    # the JSON body too, made once: a cached answer then needs no encoding
    return {"document": document, "body": json.dumps(document, cls=DjangoJSONEncoder).encode()}


def project_registry_json_cached(
    *, slug: str, now: datetime | None = None
) -> tuple[bytes, str, dict[str, str]]:
    """(JSON body, version, what the version was read from) of the project's registry,
    without a database query when it is cached under the project's current token;
    otherwise the project is looked up (NotFound) and the document built and cached.

    `now`: the moment whose UTC day the version names. The third part maps the
    token's cache key to the token the version was made of: the document may be
    answered early while the key holds it, that day (dpportal.public_cache).
    """
    token = project_public_version_peek(slug=slug)
    if token is not None:
        version = _cached_version(slug=slug, token=token, now=now)
        key = _document_key(version)
        entry = local_copies.get(key) or cache.get(key)
        if entry is not None:
            local_copies.put(key, entry, size=2 * len(entry["body"]))
            return entry["body"], version, {public_version_key(slug=slug): token}
    project = project_get_public(slug=slug)
    token = project_public_version(slug=slug)  # before the data is read
    version = _cached_version(slug=slug, token=token, now=now)
    entry = _registry_entry(project=project)
    cache.set(_document_key(version), entry, REGISTRY_CACHE_SECONDS)
    return entry["body"], version, {public_version_key(slug=slug): token}


def _day(moment: datetime) -> date:
    """The UTC calendar day of a moment: the only precision time is published with."""
    return timezone.localdate(moment, timezone=UTC)


def _day_text(moment: datetime | None) -> str | None:
    return _day(moment).isoformat() if moment else None


def _registry_datasets(*, project: Project) -> list[dict]:
    """Each published dataset's privacy unit (public: the ID column's name and the bound L).

    Only a dataset some published release used: the registry says what was published,
    and a dataset's name is the owner's to reveal by publishing, not by declaring it.
    """
    try:
        dataset_model = apps.get_model("datasets", "Dataset")
    except LookupError:
        return []
    rows = (
        dataset_model.objects.filter(project_id=project.pk, releases__status="published")
        .distinct()
        .order_by("pk")
    )
    return [
        {
            "name": row.name,
            "name_i18n": Bilingual.of(row, "name").as_json(),
            "unit": f"person identified by column {row.id_column!r}" if row.id_column else "row",
            "id_column": row.id_column or None,
            # Row-level protection makes no claim about people with several rows.
            "max_rows_per_person": int(row.contribution_bound) if row.id_column else None,
        }
        for row in rows
    ]
