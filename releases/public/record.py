"""The release record: the one versioned public document of a published release.

It states everything public about the release in one JSON document with a JSON
Schema (releases/schemas/release-record.schema.json): who published what and
when, the privacy unit, the budget, the accountant, every statistic with its
noisy values, its intervals at every confidence level of the page, the stored
explanation they are recomputed from and the public domain it used, and the
release's mechanism records as the epsilon registry lists them. Two digests make
it checkable: `spec_sha256`, of the frozen public specification (given in
`spec`), and `record_sha256`, of the document itself without that key.

No fact is derived here a second time. The statistics' facts are the entries of
the public data (releases.public.data.release_public_data, which data.json, the
CSV and the page are made from), the days and the approval those of
releases.public.facts, the mechanism records and the accountant the registry's
(budgets.selectors). The record only selects and arranges them.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.urls import reverse

from budgets import selectors as budget_selectors
from dpportal import product
from releases.models import Release
from releases.public.data import frozen_statistics, frozen_unit, release_public_data
from releases.public.options import CONFIDENCE_LEVELS
from releases.services import spec_hash

__all__ = [
    "RECORD_VERSION",
    "STATISTIC_EXTRA_KEYS",
    "STATISTIC_KEYS",
    "SCHEMA_PATH",
    "canonical_sha256",
    "public_spec",
    "record_schema",
    "release_record",
]

#: the record's JSON Schema (draft 2020-12), served at /schemas/release-record.schema.json
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "release-record.schema.json"

#: the record's shape: a change of a key's name or meaning is a new version
RECORD_VERSION = 1

#: the keys of a public data statistic (data.json's) the record keeps, same names and meanings
STATISTIC_KEYS = (
    "position", "kind", "label", "columns", "values", "exact_values", "shape", "row_labels",
    "col_labels", "quantiles", "epsilon", "delta", "mechanism", "noise", "intervals",
)  # fmt: skip

#: the public data's keys the record adds to those, so that its values can be read: the
#: cells' names, the counted category, the grouping columns, the published answer of a
#: selection (the most common category's, the private bounds') and the confidence a
#: quantile's intervals were released at, which cells too few records make uninformative,
#: a cross-tabulation's tables and whole-number display, and the basis a quantile's
#: data-unit range was read with (None where a kind has none)
STATISTIC_EXTRA_KEYS = (
    "cells", "category", "group_columns", "argmax", "bounds", "interval_confidence",
    "uninformative_cells", "display_values", "tables", "about_basis",
)  # fmt: skip

#: the frozen specification's public keys. Left out: the dataset's and the project's
#: database ids, and where the data is stored (its file, an external location), which
#: say nothing about the statistics and are nobody's business.
PUBLIC_SPEC_KEYS = (
    "version", "release", "mechanism", "confidence", "epsilon", "delta", "privacy_unit",
    "statistics",
)  # fmt: skip

#: the keys of a frozen statistic that the record states beside its domain, not in it
#: (its place, kind, budget share and the owner's texts)
NOT_DOMAIN_KEYS = frozenset(
    ("position", "kind", "label", "label_zh", "description", "description_zh", "epsilon", "delta")
)

#: what the record calls the role that approved a release's budget (facts.APPROVER_ROLE
#: in words): public output names a role, never a person
APPROVER_ROLE = "reviewer"

#: the accountant's library as its Python package is imported
ACCOUNTANT_LIBRARY = "dp_accounting"


@functools.cache
def record_schema() -> tuple[str, str]:
    """(the schema's text, a digest of it for an ETag), read once per process."""
    text = SCHEMA_PATH.read_text(encoding="utf-8")
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def canonical_sha256(document: Any) -> str:
    """SHA-256 hex of the canonical JSON of `document`: sorted keys, no spaces, UTF-8
    (the frozen specification's own digest, releases.services.spec_hash)."""
    return spec_hash(document)


def public_spec(*, release: Release) -> dict[str, Any]:
    """The release's frozen specification, its public keys only (PUBLIC_SPEC_KEYS)."""
    spec = release.spec if isinstance(release.spec, dict) else {}
    return {key: copy.deepcopy(spec[key]) for key in PUBLIC_SPEC_KEYS if key in spec}


def _finite(value: Any) -> Any:
    """`value` with every non-finite float (an unbounded interval end) as None: JSON has
    no infinity, and a digest must read the same in every language's parser."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _domain(frozen: dict[str, Any] | None) -> dict[str, Any]:
    """The public domain a statistic used, as frozen with the release: its columns'
    declared domains (categories, bounds, bins, missing-value rules), groups, clipping
    range, grid and the kind's other frozen parameters."""
    return {k: copy.deepcopy(v) for k, v in (frozen or {}).items() if k not in NOT_DOMAIN_KEYS}


def _statistic(
    stat: dict[str, Any], *, entry: dict[str, Any], frozen: dict[str, Any] | None
) -> dict[str, Any]:
    """One statistic: the public data's facts (STATISTIC_KEYS), its stored explanation
    and its domain. Every key of a stored explanation is public: noise parameters,
    budget, grid, candidates and noisy values or estimates (never a true aggregate,
    releases.models.ReleaseResult); tests/test_release_record.py checks each kind."""
    out = {key: stat[key] for key in STATISTIC_KEYS}
    out.update({key: stat.get(key) for key in STATISTIC_EXTRA_KEYS})
    out["explanation"] = copy.deepcopy(entry.get("explanation") or {})
    out["domain"] = _domain(frozen)
    return out


def _approval(approval: dict[str, str] | None) -> dict[str, str] | None:
    """The public data's approval (releases.public.facts.release_approval) in the record's
    words: the day, and the role that approved."""
    if approval is None:
        return None
    return {"approved_on": approval["decided_at"], "role": APPROVER_ROLE}


def _accountant() -> dict[str, str]:
    """The registry's accountant (name, version, value discretisation), the library named
    by its Python package."""
    described = budget_selectors.accountant_description()
    return {
        "name": described["name"],
        "library": ACCOUNTANT_LIBRARY,
        "version": described["version"],
        "discretisation": described["discretisation"],
    }


def _public_data(
    release: Release, public_data_at: Callable[[str], dict[str, Any]] | None
) -> dict[str, Any]:
    """The public data with intervals at every confidence level of the page: read one
    level at a time through `public_data_at` (the pages' cache) when given."""
    if public_data_at is None:
        return release_public_data(release=release, levels=CONFIDENCE_LEVELS)
    at = {level: public_data_at(level) for level in CONFIDENCE_LEVELS}
    first = at[CONFIDENCE_LEVELS[0]]
    statistics = [
        {
            **stat,
            "intervals": {
                level: at[level]["statistics"][i]["intervals"][level] for level in CONFIDENCE_LEVELS
            },
        }
        for i, stat in enumerate(first["statistics"])
    ]
    return {**first, "statistics": statistics}


def release_record(
    release: Release, *, public_data_at: Callable[[str], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The record of a published release (the caller checks that it is published).

    Built from the public data at every confidence level of the page, the frozen
    specification and its ledger's mechanism records; the last key, `record_sha256`,
    is the digest of all the others. `public_data_at(level)`: the release's public data
    with its intervals at `level` (release_public_data with that one level), where a
    caller keeps it cached; None computes all levels here.
    """
    data = _public_data(release, public_data_at)
    entries = {int(e["position"]): e for e in release.result.payload.get("statistics", [])}
    frozen = frozen_statistics(release=release)
    unit = frozen_unit(release=release)
    record: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "schema": reverse("public:release-record-schema"),
        "product": {"name": product.PRODUCT_NAME, "version": product.product_version()},
        "project": {"slug": data["project"], "name": data["project_name"]},
        "dataset": {"name": release.dataset.name},
        "release": {
            "id": data["release_id"],
            "title": data["title"],
            "published_on": data["published_at"],
            "approval": _approval(data["approval"]),
        },
        "privacy_unit": {
            "unit": "person" if unit["id_column"] else "row",
            "id_column": unit["id_column"] or None,
            "contribution_bound": int(unit["bound"]),
        },
        "budget": {
            "epsilon": data["epsilon"],
            "delta": data["delta"],
            "mechanism": data["mechanism"],
        },
        "accountant": _accountant(),
        "confidence_levels": list(CONFIDENCE_LEVELS),
        "statistics": [
            _statistic(stat, entry=entries[stat["position"]], frozen=frozen.get(stat["position"]))
            for stat in data["statistics"]
        ],
        "mechanism_records": budget_selectors.request_mechanisms(
            budget_request_id=release.budget_request_id
        ),
        "spec": public_spec(release=release),
    }
    record = _finite(record)
    record["spec_sha256"] = canonical_sha256(record["spec"])
    record["record_sha256"] = canonical_sha256(record)
    return record
