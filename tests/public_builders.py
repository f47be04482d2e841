"""Builds releases with realistic results for the public dashboard tests.

The results are made the way the release worker makes them: the true aggregates
(fixed here) go through dpportal.privacy's mechanisms, and only the noisy values
and the mechanisms' explanations are stored, in the ReleaseResult.payload format
agreed between the engineers. The budget goes through budgets.services
(request, approval, charge) and publication through releases.lifecycle.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from unittest import mock

import numpy as np
from django.utils import timezone

from budgets import services as budget_services
from datasets.models import Column, Dataset
from dpportal.privacy import mechanisms, sensitivity
from releases import lifecycle
from releases.models import Release, ReleaseResult, Statistic

# The true aggregates behind the test release. Distinctive numbers, so that a
# test can check they appear nowhere public.
TRUE_COUNT = 987_654
TRUE_REGIONS = {"North": 1201, "South": 877, "East": 45, "West": 3}
TRUE_AGE_BY_SEX = [[120, 340, 95], [110, 360, 130]]  # rows: sex, columns: age band
INCOME_BOUNDS = (Decimal("0"), Decimal("200000"))
TRUE_INCOME = [31_000.5, 54_250.25, 199_999.0, 12.75, 88_000.0]


def _str(x: object) -> str:
    return str(Fraction(x)) if not isinstance(x, str) else x


def _decimal_text(value: Fraction) -> str:
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text


def build_payload(*, mechanism: str = "laplace", epsilon_each: str = "0.5", delta_each: str = "0"):
    """(payload, statistics spec) for six statistics: count, 1-D and 2-D histograms,
    sum, mean and argmax, each with (epsilon_each, delta_each)."""
    eps = Fraction(epsilon_each)
    dlt = Fraction(delta_each)
    kw = {"mechanism": mechanism, "epsilon": eps, "delta": dlt}
    entries = []

    count = mechanisms.release_counts(TRUE_COUNT, **kw)
    entries.append(
        {
            "kind": "count",
            "label": "Respondents",
            "columns": [],
            "category": None,
            "cells": ["all rows"],
            "shape": None,
            "values": list(count.values),
            "explanation": count.to_dict(),
        }
    )

    regions = list(TRUE_REGIONS)
    hist = mechanisms.release_counts(np.array(list(TRUE_REGIONS.values())), **kw)
    entries.append(
        {
            "kind": "histogram",
            "label": "Respondents by region",
            "columns": ["region"],
            "category": None,
            "cells": regions,
            "shape": None,
            "values": list(hist.values),
            "explanation": hist.to_dict(),
        }
    )

    rows, cols = ["female", "male"], ["18-34", "35-64", "65+"]
    flat = np.array(TRUE_AGE_BY_SEX).reshape(-1)
    hist2 = mechanisms.release_counts(flat, **kw)
    entries.append(
        {
            "kind": "histogram",
            "label": "Respondents by sex and age band",
            "columns": ["sex", "age_band"],
            "category": None,
            "cells": [f"{r} / {c}" for r in rows for c in cols],
            "shape": [len(rows), len(cols)],
            "row_labels": rows,
            "col_labels": cols,
            "values": list(hist2.values),
            "explanation": hist2.to_dict(),
        }
    )

    lo, hi = INCOME_BOUNDS
    gamma = sensitivity.sum_granularity(lo, hi, epsilon=eps)
    units = int(
        np.sum(sensitivity.to_grid_units(TRUE_INCOME, lower=lo, upper=hi, granularity=gamma))
    )
    total = mechanisms.release_sum(units, lower=lo, upper=hi, granularity=gamma, **kw)
    entries.append(
        {
            "kind": "sum",
            "label": "Total income",
            "columns": ["income"],
            "category": None,
            "cells": ["Total income"],
            "shape": None,
            "values": list(total.decimal_values),
            "explanation": total.to_dict(),
        }
    )

    mean = mechanisms.release_mean(
        units, len(TRUE_INCOME), lower=lo, upper=hi, granularity=gamma, confidence="0.95", **kw
    )
    entries.append(
        {
            "kind": "mean",
            "label": "Mean income",
            "columns": ["income"],
            "category": None,
            "cells": ["Mean income"],
            "shape": None,
            "values": [mean.to_dict()["estimate"]],
            "explanation": mean.to_dict(),
        }
    )

    top = mechanisms.release_argmax(np.array(list(TRUE_REGIONS.values())), epsilon=eps)
    entries.append(
        {
            "kind": "argmax",
            "label": "Most common region",
            "columns": ["region"],
            "category": None,
            "cells": regions,
            "shape": None,
            "values": [],
            "explanation": top.to_dict(),
            "argmax": {"index": top.index, "label": regions[top.index]},
        }
    )
    for position, entry in enumerate(entries):
        entry["position"] = position
        entry["epsilon"] = _str(epsilon_each)
        entry["delta"] = _str(delta_each)
        entry.setdefault("row_labels", None)
        entry.setdefault("col_labels", None)
    payload = {
        "version": 1,
        "confidence": "0.95",
        "mechanism": mechanism,
        "statistics": entries,
    }
    return payload


def _domain(name: str, **declared) -> dict:
    return {
        "name": name, "kind": "categorical", "type": "string", "categories": [],
        "lower": None, "upper": None, "bin_edges": [], "missing": "drop", **declared,
    }  # fmt: skip


def build_spec(payload: dict, *, id_column: str | None = None, bound: int = 1) -> dict:
    """The frozen specification matching `build_payload`'s statistics (public domains)."""
    region = _domain("region", categories=list(TRUE_REGIONS))
    sex = _domain("sex", categories=["female", "male"], missing="category")
    age = _domain("age_band", categories=["18-34", "35-64", "65+"])
    income = _domain("income", kind="numeric", type="float", lower="0", upper="200000")
    columns = [[], [region], [sex, age], [income], [income], [region]]
    statistics = []
    for entry, domains in zip(payload["statistics"], columns, strict=True):
        spec = {
            "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
            "columns": domains, "category": None, "epsilon": entry["epsilon"],
            "delta": entry["delta"],
        }  # fmt: skip
        if entry["kind"] in ("sum", "mean"):
            spec.update(
                lower="0",
                upper="200000",
                granularity=entry["explanation"].get(
                    "granularity", entry["explanation"].get("sum", {}).get("granularity")
                ),
            )
        statistics.append(spec)
    return {
        "version": 1,
        "mechanism": payload["mechanism"],
        "privacy_unit": {"id_column": id_column, "contribution_bound": bound},
        "statistics": statistics,
    }


def build_release(
    *,
    project,
    owner,
    reviewer,
    title: str = "Survey 2026, first wave",
    mechanism: str = "laplace",
    publish: bool = True,
    epsilon_each: str = "0.05",
    delta_each: str = "0",
    computed_at: datetime | None = None,
    id_column: str | None = None,
    contribution_bound: int = 1,
) -> Release:
    """A computed (and, by default, published) release of six statistics in `project`.

    `computed_at` sets when the computation finished: the release's computed_at and
    the time of its ledger charge (written then, as the worker writes it).
    """
    dataset = Dataset.objects.create(
        project=project,
        name="survey.csv",
        uploaded_by=owner,
        status=Dataset.Status.READY,
        declared=True,
    )
    for position, name in enumerate(["region", "sex", "age_band", "income"]):
        Column.objects.create(
            dataset=dataset,
            name=name,
            position=position,
            suggested_type="string" if name != "income" else "float",
            kind="categorical" if name != "income" else "numeric",
        )
    payload = build_payload(mechanism=mechanism, epsilon_each=epsilon_each, delta_each=delta_each)
    n = len(payload["statistics"])
    epsilon = Decimal(epsilon_each) * n
    delta = Decimal(delta_each) * n
    request = budget_services.budget_request_create(
        project=project,
        title=title,
        epsilon=epsilon,
        delta=delta,
        summary={"statistics": n},
        spec_hash="0" * 64,
        requested_by=owner,
    )
    budget_services.budget_request_approve(
        budget_request_id=request.pk, reviewer=reviewer, comment="Looks fine."
    )
    release = Release.objects.create(
        project=project,
        dataset=dataset,
        title=title,
        description="Counts and incomes of the first wave.",
        created_by=owner,
        status=Release.Status.COMPUTED,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        spec=build_spec(payload, id_column=id_column, bound=contribution_bound),
        spec_hash="0" * 64,
        budget_request=request,
        computed_at=computed_at or timezone.now(),
        progress=1.0,
    )
    for entry in payload["statistics"]:
        Statistic.objects.create(
            release=release,
            position=entry["position"],
            kind=entry["kind"],
            label=entry["label"],
            epsilon=Decimal(epsilon_each),
            delta=Decimal(delta_each),
        )
    ReleaseResult.objects.create(release=release, payload=payload)
    if computed_at is None:
        budget_services.budget_charge(budget_request=request, note="computed")
    else:
        # the ledger is append-only (a trigger refuses updates): write the charge at that time
        with mock.patch.object(timezone, "now", return_value=computed_at):
            budget_services.budget_charge(budget_request=request, note="computed")
    if publish:
        release = lifecycle.release_publish(release=release, actor=owner)
    return Release.objects.get(pk=release.pk)


def replace_heatmap(release: Release, *, row_labels: list[str], col_labels: list[str]) -> dict:
    """Give the release's 2-D histogram (position 2) these labels, noised like compute would.

    Returns the new result entry. The labels become the declared categories of the
    frozen spec (plus "Other", which compute always adds, when the caller lists it).
    """
    rng = np.random.default_rng(7)
    true = rng.integers(0, 500, size=len(row_labels) * len(col_labels))
    noisy = mechanisms.release_counts(true, mechanism=release.mechanism, epsilon=Fraction("0.05"))
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    entry = payload["statistics"][2]
    entry.update(
        cells=[f"{r} / {c}" for r in row_labels for c in col_labels],
        shape=[len(row_labels), len(col_labels)],
        row_labels=row_labels,
        col_labels=col_labels,
        values=list(noisy.values),
        explanation=noisy.to_dict(),
    )
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    spec = release.spec
    rows, cols = spec["statistics"][2]["columns"]
    rows["categories"] = [x for x in row_labels if x not in ("Other", "Missing")]
    cols["categories"] = [x for x in col_labels if x not in ("Other", "Missing")]
    Release.objects.filter(pk=release.pk).update(spec=spec)
    return entry
