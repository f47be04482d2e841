"""Reads: the review document of a budget request, for the reviewer's page and the API.

What a reviewer must judge, built once as typed values from public parameters
only (the release's frozen specification, the request's frozen preview, the
ledger): each statistic's kind, columns and their declared domains, clip range,
how out-of-range and missing values are handled (as releases.compute.readers
does it), the privacy unit and L, mechanism, epsilon and delta, sensitivity,
noise scale in the data's units (grid units times the granularity) and the
half-widths at the release's confidence (releases.dp, the preview's own
functions); then the budget before and after (budgets.selectors.budget_standing),
the spend under tight accounting with the fit count (budgets.selectors.spend_standing)
and the project's earlier releases on the same dataset. Numbers stay exact here;
the `*_text` fields are written with dpportal.formatting for people.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils.translation import gettext

from budgets import amounts
from budgets.models import BudgetRequest
from budgets.selectors import (
    budget_standing,
    spend_standing,
    standing_with_spend,
    statistic_lines,
)
from datasets.models import Column, Dataset
from dpportal import bilingual, formatting, statistic_names
from dpportal.bilingual import Bilingual
from dpportal.errors import ApplicationError
from dpportal.privacy.accuracy import noise_halfwidth
from dpportal.privacy.errors import PrivacyParameterError
from releases import dp, kinds
from releases.models import Release
from releases.review import bounds as review_bounds
from releases.review import crosstab as review_crosstab
from releases.review import keys as review_keys
from releases.review import stats as review_stats
from releases.review.text import (
    clip_text,
    estimates_text,
    halfwidth_text,
    kind_text,
    mechanism_text,
    missing_text,
    out_of_range_text,
    privacy_unit_text,
    value_unit,
)
from releases.review.types import (
    ColumnReview,
    EarlierRelease,
    PrivacyUnitReview,
    ReviewDocument,
    StatisticReview,
)
from releases.services.plan import ReleasePlan, StatisticPlan

SPENT_STATUSES = (Release.Status.COMPUTED, Release.Status.PUBLISHED)


def _decimal(value: Any) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


def _column(domain: dict[str, Any], derived: dict[str, list[str]]) -> Column:
    """An unsaved Column holding the frozen domain (what releases.dp reads).

    Which parts were filled in from the data comes from the column's row: the
    declaration is frozen once a release using it leaves the draft stage.
    """
    return Column(
        derived_from_data=list(derived.get(str(domain["name"])) or []),
        name=str(domain["name"]),
        kind=str(domain["kind"]),
        suggested_type=str(domain.get("type") or ""),
        categories=[str(c) for c in domain.get("categories") or []],
        bin_edges=[str(e) for e in domain.get("bin_edges") or []],
        lower=_decimal(domain.get("lower")),
        upper=_decimal(domain.get("upper")),
        missing=str(domain.get("missing") or Column.Missing.DROP),
        label=Bilingual.from_json(domain.get("label")).en if domain.get("label") else "",
        label_zh=Bilingual.from_json(domain.get("label")).zh if domain.get("label") else "",
        missing_codes=[str(c) for c in domain.get("missing_codes") or []],
        date={str(k): str(v) for k, v in (domain.get("date") or {}).items()},
        category_labels=dict(domain.get("category_labels") or {}),
        bounds_estimate=dict(domain.get("bounds_estimate") or {}),
        categories_source=dict(domain.get("categories_source") or {}),
    )


def _plan(*, release: Release, spec: dict[str, Any], summary: Any) -> ReleasePlan:
    """The frozen specification as the ReleasePlan releases.dp computes with."""
    unit = spec.get("privacy_unit") or {}
    dataset = Dataset(
        pk=release.dataset_id,
        name=release.dataset.name,
        id_column=str(unit.get("id_column") or ""),
        contribution_bound=int(unit.get("contribution_bound") or 1),
    )
    previews = summary.get("statistics") if isinstance(summary, dict) else None
    n_guess = {
        p.get("position"): p.get("n_guess")
        for p in (previews if isinstance(previews, list) else [])
        if isinstance(p, dict)
    }
    plan = ReleasePlan(
        project=release.project,
        dataset=dataset,
        title=release.title,
        description="",
        mechanism=str(spec["mechanism"]),
        confidence=Decimal(str(spec["confidence"])),
        epsilon=Decimal(str(spec["epsilon"])),
        delta=Decimal(str(spec["delta"])),
    )
    derived = dict(
        Column.objects.filter(dataset_id=release.dataset_id).values_list(
            "name", "derived_from_data"
        )
    )
    for entry in spec["statistics"]:
        columns = [_column(d, derived) for d in entry["columns"]]
        guess = n_guess.get(entry["position"])
        plan.statistics.append(
            StatisticPlan(
                position=int(entry["position"]),
                kind=str(entry["kind"]),
                label=str(entry.get("label") or ""),
                label_zh=str(entry.get("label_zh") or ""),
                column=columns[0] if columns else None,
                column2=columns[1] if len(columns) > 1 else None,
                category=str(entry.get("category") or ""),
                lower=_decimal(entry.get("lower")),
                # a rows-per-person statistic's cap is its plan's upper (kinds.rows_per_person)
                upper=_decimal(entry.get("upper", entry.get("cap"))),
                epsilon=Decimal(str(entry["epsilon"])),
                delta=Decimal(str(entry.get("delta") or 0)),
                n_guess=int(guess) if isinstance(guess, int) else None,
            )
        )
        review_stats.add_plan_fields(plan.statistics[-1], entry, lambda d: _column(d, derived))
        review_crosstab.add_plan_fields(plan.statistics[-1], entry, lambda d: _column(d, derived))
        review_bounds.add_plan_fields(plan.statistics[-1], entry, lambda d: _column(d, derived))
        review_keys.add_plan_fields(plan.statistics[-1], entry, lambda d: _column(d, derived))
    return plan


def _statistic(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    if kinds.get(stat.kind).fields == "grouped":  # grouped statistics, quantiles, spread
        return review_stats.statistic_review(plan=plan, stat=stat)
    if kinds.get(stat.kind).fields == "crosstab":
        return review_crosstab.statistic_review(plan=plan, stat=stat)
    if kinds.get(stat.kind).fields == "bounds":
        return review_bounds.statistic_review(plan=plan, stat=stat)
    if kinds.get(stat.kind).fields == "keys":
        return review_keys.statistic_review(plan=plan, stat=stat)
    kind = kinds.get(stat.kind)
    specs = dp.statistic_noise(plan=plan, stat=stat)
    unit = value_unit(stat)
    noises = review_stats.noise_reviews(plan=plan, stat=stat, value_unit=unit)
    preview = (
        dp.statistic_accuracy(plan=plan, stat=stat) if stat.n_guess or stat.kind != "mean" else None
    )
    cells = int(preview["cells"]) if preview else 1
    per_cell = preview["halfwidth"] if preview else None
    simultaneous = preview["halfwidth_simultaneous"] if preview else None
    if stat.kind == "argmax":
        spec = specs[0]
        simultaneous = float(
            noise_halfwidth(
                noise=spec.noise, parameter=spec.scale, confidence=plan.confidence, k=cells
            )
        )
    elif simultaneous is None:
        simultaneous = per_cell  # one value: all at once is the same interval
    mechanism = kind.mechanism(plan.mechanism)
    texts = halfwidth_text(
        stat=stat, unit=unit, cells=cells, per_cell=per_cell, simultaneous=simultaneous
    )
    return StatisticReview(
        number=stat.position + 1,
        label=statistic_names.label_of(stat),
        kind=stat.kind,
        kind_text=kind_text(stat),
        estimates_text=estimates_text(stat, bound=plan.dataset.contribution_bound),
        columns=tuple(ColumnReview.of(c) for c in stat.columns),
        category=stat.category,
        clip_lower=stat.lower if stat.kind in ("sum", "mean") else None,
        clip_upper=stat.upper if stat.kind in ("sum", "mean") else None,
        clip_text=clip_text(stat, granularity=noises[0].granularity),
        cells=cells,
        out_of_range_text=out_of_range_text(stat),
        missing_text=missing_text(stat),
        mechanism=mechanism,
        mechanism_text=mechanism_text(stat.kind, mechanism),
        epsilon=stat.epsilon,
        delta=Decimal(0) if kind.pure else stat.delta,
        noise=noises,
        unit=unit,
        n_guess=stat.n_guess,
        halfwidth=per_cell,
        halfwidth_simultaneous=simultaneous,
        halfwidth_text=texts[0],
        halfwidth_simultaneous_text=texts[1],
    )


def _earlier(release: Release) -> tuple[EarlierRelease, ...]:
    releases = (
        Release.objects.filter(dataset_id=release.dataset_id, created_at__lt=release.created_at)
        .exclude(status=Release.Status.DRAFT)
        .select_related("budget_request")
        .order_by("-created_at", "-pk")
    )
    return tuple(
        EarlierRelease(
            id=r.pk,
            title=statistic_names.title_of(r),
            status=r.status,
            status_text=r.get_status_display(),
            epsilon=r.epsilon,
            delta=r.delta,
            requested_at=r.budget_request.requested_at if r.budget_request else None,
            published_at=r.published_at,
        )
        for r in releases
    )


def review_document_get(*, budget_request: BudgetRequest) -> ReviewDocument:
    """The review document of `budget_request` (the caller checked the reader's access)."""
    release = (
        Release.objects.select_related("dataset", "project")
        .filter(budget_request_id=budget_request.pk)
        .first()
    )
    summary = budget_request.summary
    statistics: tuple[StatisticReview, ...] = ()
    plan = None
    notice = ""
    spec = release.spec if release is not None else None
    if isinstance(spec, dict) and isinstance(spec.get("statistics"), list):
        try:
            plan = _plan(release=release, spec=spec, summary=summary)
            statistics = tuple(_statistic(plan=plan, stat=s) for s in plan.statistics)
        except (KeyError, TypeError, ValueError, ArithmeticError, PrivacyParameterError,
                ApplicationError):  # fmt: skip
            plan, statistics = None, ()
    if plan is None:
        notice = gettext(
            "This request does not carry a readable specification of its statistics: "
            "only its recorded preview is shown."
        )
    earlier = _earlier(release) if release is not None else ()
    spent = [r for r in earlier if r.status in SPENT_STATUSES]
    confidence = plan.confidence if plan else None
    spend = spend_standing(budget_request=budget_request)
    return ReviewDocument(
        budget_request=budget_request,
        release=release,
        dataset_name=bilingual.show(release.dataset, "name") if release else "",
        mechanism=plan.mechanism if plan else "",
        mechanism_text=mechanism_text("", plan.mechanism) if plan else "",
        confidence=confidence,
        confidence_text=formatting.percent(confidence) if confidence is not None else "",
        privacy_unit=(
            PrivacyUnitReview(
                id_column=plan.dataset.id_column,
                contribution_bound=plan.dataset.contribution_bound,
                text=privacy_unit_text(plan.dataset),
                project_text=budget_request.project.privacy_unit_description,
            )
            if plan
            else None
        ),
        statistics=statistics,
        preview_lines=() if plan else statistic_lines(summary=summary),
        notice=notice,
        budget=standing_with_spend(budget_standing(budget_request=budget_request), spend),
        spend=spend,
        earlier_releases=earlier,
        earlier_epsilon_spent=amounts.total(r.epsilon for r in spent),
        earlier_delta_spent=amounts.total(r.delta for r in spent),
    )
