"""A stand-in release record for the verification script's tests.

`record_assembled_from_public_data` builds the document the shared contract calls a
release record (`/p/<slug>/releases/<id>/record.json`) from what a published release
already has: data.json's statistics (releases.public.data.release_public_data, every
confidence level), each statistic's stored explanation and frozen specification
entry, and the release's CHARGE row mechanisms. It exists only until the record
itself is served by the product; the lead switches the tests to the real record
(one function to replace) once it is merged.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from budgets.models import LedgerEntry
from budgets.selectors.registry_accounting import accountant_description
from releases.models import Release
from releases.public.data import release_public_data
from releases.public.facts import day_text
from releases.public.options import CONFIDENCE_LEVELS

#: the data.json keys a record's statistic keeps (the contract), plus the quantiles'
#: released confidence and value basis, which data.json states beside them
STATISTIC_KEYS = (
    "position", "kind", "label", "columns", "values", "exact_values", "shape", "row_labels",
    "col_labels", "quantiles", "epsilon", "delta", "mechanism", "noise", "intervals",
    "uninformative_cells", "display_values", "tables", "interval_confidence", "about_basis",
    "bounds",
)  # fmt: skip


def canonical(document: Any) -> bytes:
    """The contract's canonical JSON bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def record_assembled_from_public_data(release: Release) -> dict[str, Any]:
    """The release's record as the contract shapes it, assembled from its public data."""
    data = release_public_data(release=release, levels=CONFIDENCE_LEVELS)
    payload = release.result.payload
    entries = {int(e["position"]): e for e in payload["statistics"]}
    frozen = {
        int(e["position"]): e
        for e in (release.spec or {}).get("statistics") or []
        if "position" in e
    }
    statistics = []
    for stat in data["statistics"]:
        out = {key: stat[key] for key in STATISTIC_KEYS if key in stat}
        out["explanation"] = entries[stat["position"]].get("explanation") or {}
        out["domain"] = frozen.get(stat["position"]) or {}
        statistics.append(out)
    charge = LedgerEntry.objects.filter(
        request=release.budget_request, kind=LedgerEntry.Kind.CHARGE
    ).first()
    unit = (release.spec or {}).get("privacy_unit") or {}
    request = release.budget_request
    record: dict[str, Any] = {
        "record_version": 1,
        "schema": "/schemas/release-record.schema.json",
        "product": {"name": "dpportal", "version": "0.1.0"},
        "project": {"slug": release.project.slug, "name": release.project.name},
        "dataset": {"name": release.dataset.name},
        "release": {
            "id": release.pk,
            "title": release.title,
            "published_on": day_text(release.published_at),
            "approval": {"approved_on": day_text(request.decided_at), "role": "reviewer"},
        },
        "privacy_unit": {
            "unit": "person" if unit.get("id_column") else "row",
            "id_column": unit.get("id_column") or None,
            "contribution_bound": int(unit.get("contribution_bound") or 1),
        },
        "budget": {
            "epsilon": data["epsilon"],
            "delta": data["delta"],
            "mechanism": data["mechanism"],
        },
        "accountant": {**accountant_description(), "version": metadata.version("dp-accounting")},
        "confidence_levels": list(CONFIDENCE_LEVELS),
        "statistics": statistics,
        "mechanism_records": list(charge.mechanisms) if charge else [],
        "spec_sha256": hashlib.sha256(canonical(release.spec or {})).hexdigest(),
    }
    record["record_sha256"] = hashlib.sha256(canonical(record)).hexdigest()
    return record
