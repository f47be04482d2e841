"""The frozen specification of a release, its SHA-256, and the freeze at submission."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from budgets.amounts import fmt
from datasets.external import external_spec
from releases import dp, kinds
from releases.kinds.domains import column_domain
from releases.models import Release
from releases.services.drafts import release_form_data
from releases.services.plan import release_plan_parse
from releases.services.preview import _check_fits, plan_preview


def release_spec_build(*, release: Release) -> dict[str, Any]:
    """The release's specification from its CURRENT rows (statistics, columns' domains).

    Everything the computation depends on, nothing it does not; all numbers as
    exact strings, so the JSON is canonical.
    """
    dataset = release.dataset
    statistics = []
    related = ("column", "column2", "group_column", "group_column2")
    for s in release.statistics.select_related(*related).order_by("position", "id"):
        entry: dict[str, Any] = {
            "position": s.position,
            "kind": s.kind,
            "label": s.label,
            "columns": [column_domain(c) for c in (s.column, s.column2) if c is not None],
            "category": s.category or None,
            "epsilon": fmt(s.epsilon),
            "delta": fmt(s.delta or Decimal(0)),
        }
        # the owner's other texts, frozen with the label so that a published page never
        # changes; only when given, so that specifications without them keep their form
        for field in ("label_zh", "description", "description_zh"):
            if getattr(s, field):
                entry[field] = getattr(s, field)
        entry.update(
            kinds.get(s.kind).spec_fields(s, contribution_bound=dataset.contribution_bound)
        )
        statistics.append(entry)
    return {
        "version": 1,
        "release": release.pk,
        "project": release.project_id,
        "dataset": dataset.pk,
        "parquet_file": dataset.parquet_file,
        **(
            {"external": external_spec(dataset.external_kind, dataset.external_location)}
            if dataset.external_kind
            else {}
        ),
        "mechanism": release.mechanism,
        "confidence": fmt(Decimal(release.confidence)),
        "epsilon": fmt(release.epsilon),
        "delta": fmt(release.delta),
        "privacy_unit": {
            "id_column": dataset.id_column or None,
            "contribution_bound": dataset.contribution_bound,
        },
        "statistics": statistics,
    }


def spec_hash(spec: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of a specification."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class FrozenRelease:
    spec: dict[str, Any]
    spec_hash: str
    epsilon: Decimal
    delta: Decimal
    summary: dict[str, Any]
    mechanisms: list[dict[str, Any]]


def release_freeze(*, release: Release) -> FrozenRelease:
    """Re-validate a draft against the current domains and budget; build its frozen spec.

    Called by lifecycle.release_submit with the release row locked.
    """
    plan = release_plan_parse(project=release.project, data=release_form_data(release=release))
    cost_eps, cost_delta = _check_fits(plan=plan)
    # the stored shares must be what the current domains give (a domain may have changed)
    stored = list(release.statistics.order_by("position", "id"))
    for s, p in zip(stored, plan.statistics, strict=True):
        if s.epsilon != p.epsilon or (s.delta or 0) != p.delta:
            s.epsilon, s.delta = p.epsilon, p.delta
            s.save(update_fields=["epsilon", "delta"])
    release.epsilon, release.delta = cost_eps, cost_delta
    spec = release_spec_build(release=release)
    # the reviewer's page shows the budget and the tight spend live: none frozen here
    summary = plan_preview(plan=plan, accounting=False)
    summary.pop("budget", None)
    summary["title"] = release.title
    summary["title_zh"] = release.title_zh
    summary["release"] = release.pk
    return FrozenRelease(
        spec=spec,
        spec_hash=spec_hash(spec),
        epsilon=cost_eps,
        delta=cost_delta,
        summary=summary,
        mechanisms=dp.release_mechanisms(plan=plan),
    )
