"""Reads for the public dashboards: only published releases, only public numbers.

Everything here works from what a published release stores: the noisy values and
the explanation returned by dpportal.privacy (mechanism, noise scale, epsilon,
delta, granularity). Intervals at any confidence level are recomputed from that
stored explanation with `dpportal.privacy.accuracy` -- never from data -- so
switching the confidence level is post-processing of public values.

No compute time is public, not even `computed_at`: with the public approval time
it gives the compute duration, which depends on the noise the exact rejection
samplers drew (PRIVACY-TESTING.md, "Timing").
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from budgets.models import Project
from dpportal.errors import NotFound, ValidationFailed
from dpportal.privacy import accuracy
from releases.models import Release

logger = logging.getLogger(__name__)

CONFIDENCE_LEVELS: tuple[str, ...] = ("0.9", "0.95", "0.99")
CONFIDENCE_LABELS: dict[str, str] = {"0.9": "90 %", "0.95": "95 %", "0.99": "99 %"}
DEFAULT_CONFIDENCE = "0.95"
INTERVAL_KINDS: tuple[str, ...] = ("per_cell", "simultaneous")
DISPLAY_MODES: tuple[str, ...] = ("raw", "rounded")

MECHANISM_LABELS = {
    "laplace": "Laplace mechanism (pure epsilon-differential privacy)",
    "gaussian": "Gaussian mechanism ((epsilon, delta)-differential privacy)",
}


@dataclass(frozen=True)
class ViewOptions:
    """What the reader chose on the release page (validated)."""

    confidence: str = DEFAULT_CONFIDENCE
    intervals: str = "per_cell"
    display: str = "raw"

    @property
    def cache_variant(self) -> str:
        return f"{self.confidence}:{self.intervals}:{self.display}"


def confidence_parse(*, value: str | None) -> str:
    """The confidence level named by a query parameter: one of 0.9, 0.95, 0.99."""
    if value is None or value.strip() == "":
        return DEFAULT_CONFIDENCE
    text = value.strip().rstrip("%").strip()
    for level in CONFIDENCE_LEVELS:
        if (
            text == level
            or _same_number(text, level)
            or _same_number(text, str(100 * float(level)))
        ):
            return level
    raise ValidationFailed("confidence must be one of 0.9, 0.95 or 0.99 (90 %, 95 % or 99 %).")


def _same_number(text: str, level: str) -> bool:
    try:
        return Decimal(text) == Decimal(level)
    except ArithmeticError:
        return False


def view_options_parse(*, query: dict[str, str]) -> ViewOptions:
    """The release page's options from its query string; bad values raise ValidationFailed."""
    confidence = confidence_parse(value=query.get("confidence"))
    intervals = (query.get("intervals") or "per_cell").strip()
    if intervals not in INTERVAL_KINDS:
        raise ValidationFailed("intervals must be 'per_cell' or 'simultaneous'.")
    display = (query.get("display") or "raw").strip()
    if display not in DISPLAY_MODES:
        raise ValidationFailed("display must be 'raw' or 'rounded'.")
    return ViewOptions(confidence=confidence, intervals=intervals, display=display)


# --- projects and releases ---------------------------------------------------------


def _published() -> Q:
    return Q(releases__status=Release.Status.PUBLISHED)


def project_list_published() -> QuerySet[Project]:
    """Projects with at least one published release, annotated with their count and latest."""
    return (
        Project.objects.annotate(
            published_count=Count("releases", filter=_published()),
            last_published_at=Max("releases__published_at", filter=_published()),
        )
        .filter(published_count__gt=0)
        .order_by("name")
    )


def project_get_published(*, slug: str) -> Project:
    """The project named `slug` if it has a published release; NotFound otherwise."""
    project = project_list_published().filter(slug=slug).first()
    if project is None:
        raise NotFound("No such project.")
    return project


def release_list_published(*, project: Project) -> QuerySet[Release]:
    """The project's published releases, newest first, with their number of statistics."""
    return (
        Release.objects.filter(project=project, status=Release.Status.PUBLISHED)
        .annotate(statistic_count=Count("statistics"))
        .order_by("-published_at", "-pk")
    )


def release_get_published(*, slug: str, release_id: int) -> Release:
    """The published release `release_id` of project `slug`; NotFound for anything else.

    Unpublished releases (computed, failed, draft...) are not distinguished from
    missing ones, so their existence does not leak.
    """
    release = (
        Release.objects.select_related("project")
        .filter(
            pk=release_id,
            project__slug=slug,
            status=Release.Status.PUBLISHED,
            published_at__isnull=False,
            result__isnull=False,
        )
        .first()
    )
    if release is None:
        raise NotFound("No such release.")
    return release


def release_version_key(*, release: Release) -> str:
    """Identifies the immutable published content of a release (for caches and ETags)."""
    assert release.published_at is not None
    return f"{release.pk}:{release.published_at.isoformat()}"


# --- the public data of one release ---------------------------------------------------


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("boolean is not a statistic value")
    return float(Decimal(value)) if isinstance(value, str) else float(value)


def exact_text(value: Any) -> str:
    """A Decimal-like value as plain text without exponent noise ('0.5', '1e-05' -> '0.00001')."""
    if value is None or value == "":
        return "0"
    number = Decimal(str(value))
    if number == 0:
        return "0"
    text = format(number.normalize(), "f")
    return text


def _display_dt(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else ""


def privacy_unit_text(*, release: Release) -> str:
    """The privacy unit the release actually used, in the project's words and the dataset's.

    The unit is the one frozen in the release's specification (the dataset's for a
    release without one). The text says it plainly: a person identified by an ID
    column with at most L rows used, or one row; and when the dataset's owner had
    not confirmed that unit before the release was submitted (releases from before
    confirmations existed), it says so instead of implying the project's description.
    """
    from dpportal.formatting import integer  # moves to the imports when this module is split

    project, dataset = release.project, release.dataset
    frozen = (release.spec or {}).get("privacy_unit") or {}
    id_column = frozen.get("id_column", dataset.id_column) or ""
    bound = int(frozen.get("contribution_bound", dataset.contribution_bound) or 1)
    submitted_at = release.budget_request.requested_at if release.budget_request else None
    confirmed = (
        dataset.unit_confirmed_at is not None
        and (submitted_at is None or dataset.unit_confirmed_at <= submitted_at)
        and (dataset.id_column or "") == id_column
        and (not id_column or dataset.contribution_bound == bound)
    )
    words = project.privacy_unit_description.strip()
    lead = f"{words.rstrip('.')}. " if words else ""
    if id_column:
        rows = "row" if bound == 1 else "rows"
        used = (
            f"In this release: one person, identified by the column '{id_column}' of the "
            f"dataset '{dataset.name}'; at most {integer(bound)} {rows} per person were used."
        )
        if not confirmed:
            used += " The dataset's owner had not confirmed this privacy unit before the release."
        return lead + used
    if confirmed:
        return (
            f"{lead}In this release: one row of the dataset '{dataset.name}', as its owner "
            "confirmed (each row belongs to a different privacy unit)."
        )
    return (
        f"{lead}In this release: each row of the dataset '{dataset.name}' was protected on its "
        "own; its owner had not confirmed that one row is one privacy unit, so someone with "
        "several rows is protected less than this description says."
    )


def _approval(*, release: Release) -> dict[str, str] | None:
    request = release.budget_request
    if request is None or request.decided_by is None or request.status != "approved":
        return None
    reviewer = request.decided_by
    name = (reviewer.get_full_name() or reviewer.get_username()).strip()
    return {
        "reviewer": name,
        "decided_at": request.decided_at.isoformat() if request.decided_at else "",
        "decided_at_display": _display_dt(request.decided_at),
    }


def _halfwidth(explanation: dict, *, confidence: str, simultaneous: bool) -> float:
    return float(
        accuracy.result_halfwidth(explanation, confidence=confidence, simultaneous=simultaneous)
    )


def _noise_part(explanation: dict) -> dict[str, Any]:
    """One noise distribution in words, its parameter converted to value units."""
    granularity = Decimal(str(explanation.get("granularity", "1")))
    if explanation.get("noise") == "discrete_gaussian":
        name = "discrete Gaussian distribution"
        symbol, raw = "sigma", explanation.get("sigma_float", explanation.get("sigma"))
        words = "parameter sigma (about its standard deviation)"
    else:
        name = "discrete Laplace distribution"
        symbol, raw = "scale", explanation.get("scale_float", explanation.get("scale"))
        words = "scale b"
    value = float(_number(raw)) * float(granularity) if raw is not None else None
    shown = f"{value:.6g}" if value is not None else "?"
    return {
        "name": name,
        "parameter": symbol,
        "value": value,
        "granularity": exact_text(granularity),
        "parameter_text": f"{words} = {shown}",
    }


def _noise(explanation: dict, *, kind: str) -> dict[str, Any]:
    """The noise distribution(s) in words and their parameter (in value units)."""
    if kind == "mean":
        total = _noise_part(explanation["sum"])
        count = _noise_part(explanation["count"])
        return {
            "name": total["name"],
            "parameter": total["parameter"],
            "sum": total,
            "count": count,
            "parameter_text": (f"sum: {total['parameter_text']}; count: {count['parameter_text']}"),
        }
    return _noise_part(explanation)


def _layout(entry: dict) -> str:
    kind = entry["kind"]
    if kind == "argmax":
        return "statement"
    if kind in ("sum", "mean"):
        return "figure"
    if kind == "histogram" and entry.get("shape"):
        return "heatmap"
    return "bars"


def _intervals(entry: dict, values: list[float]) -> dict[str, dict[str, dict[str, list]]]:
    """For each confidence level and interval kind: per-cell half-widths, lower and upper."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    explanation = entry["explanation"]
    kind = entry["kind"]
    for level in CONFIDENCE_LEVELS:
        out[level] = {}
        for interval_kind in INTERVAL_KINDS:
            simultaneous = interval_kind == "simultaneous"
            if kind == "argmax":
                out[level][interval_kind] = {"halfwidths": [], "lower": [], "upper": []}
            elif kind == "mean":
                _, lower, upper = accuracy.mean_interval(explanation, confidence=level)
                out[level][interval_kind] = {
                    "halfwidths": [None],
                    "lower": [lower],
                    "upper": [upper],
                }
            else:
                h = _halfwidth(explanation, confidence=level, simultaneous=simultaneous)
                out[level][interval_kind] = {
                    "halfwidths": [h] * len(values),
                    "lower": [v - h for v in values],
                    "upper": [v + h for v in values],
                }
    return out


def _statistic_data(entry: dict, *, mechanism: str) -> dict[str, Any]:
    kind = entry["kind"]
    explanation = entry.get("explanation") or {}
    columns = list(entry.get("columns") or [])
    if kind == "mean":
        estimate, _, _ = accuracy.mean_interval(explanation, confidence=DEFAULT_CONFIDENCE)
        values = [float(estimate)]
    else:
        values = [_number(v) for v in entry.get("values") or []]
    cells = [str(c) for c in entry.get("cells") or []]
    if kind in ("sum", "mean") or (kind == "count" and not cells):
        cells = [entry.get("label") or kind]
    if kind != "argmax" and len(cells) != len(values):
        raise ValueError("a published statistic's cells and values disagree")
    shape = entry.get("shape")
    data: dict[str, Any] = {
        "position": int(entry["position"]),
        "kind": kind,
        "label": entry.get("label") or kind,
        "columns": columns,
        "category": entry.get("category"),
        "layout": _layout(entry),
        "cells": cells,
        "shape": list(shape) if shape else None,
        "row_labels": [str(x) for x in entry.get("row_labels") or []],
        "col_labels": [str(x) for x in entry.get("col_labels") or []],
        "row_title": columns[0] if columns else "",
        "col_title": columns[1] if len(columns) > 1 else "",
        "value_title": _value_title(kind, columns),
        "values": values,
        "k": max(1, len(values)),
        "clampable": kind in ("count", "histogram"),
        "epsilon": exact_text(entry.get("epsilon")),
        "delta": exact_text(entry.get("delta")),
        "mechanism": explanation.get("mechanism", mechanism),
        "noise": _noise(explanation, kind=kind),
        "intervals": _intervals(entry, values),
        "argmax": entry.get("argmax"),
        "count_nonpositive": bool(explanation.get("count_nonpositive"))
        if kind == "mean"
        else False,
    }
    return data


def _value_title(kind: str, columns: list[str]) -> str:
    if kind in ("count", "histogram"):
        return "count"
    if kind == "sum":
        return f"sum of {columns[0]}" if columns else "sum"
    if kind == "mean":
        return f"mean of {columns[0]}" if columns else "mean"
    return ""


def release_public_data(*, release: Release) -> dict[str, Any]:
    """Everything the public may know about a published release, as JSON-ready data.

    The statistics carry their noisy values and, for every confidence level and
    for per-cell and simultaneous intervals, the intervals computed from the
    stored noise parameters.
    """
    payload = release.result.payload
    mechanism = payload.get("mechanism") or release.mechanism
    statistics = [
        _statistic_data(entry, mechanism=mechanism)
        for entry in sorted(payload.get("statistics", []), key=lambda e: int(e["position"]))
    ]
    approval = _approval(release=release)
    return {
        "release_id": release.pk,
        "project": release.project.slug,
        "project_name": release.project.name,
        "title": release.title,
        "description": release.description,
        "mechanism": mechanism,
        "mechanism_label": MECHANISM_LABELS.get(mechanism, mechanism),
        "epsilon": exact_text(release.epsilon),
        "delta": exact_text(release.delta),
        "privacy_unit": privacy_unit_text(release=release),
        "approval": approval,
        "published_at": release.published_at.isoformat() if release.published_at else "",
        "published_at_display": _display_dt(release.published_at),
        "default_confidence": DEFAULT_CONFIDENCE,
        "confidence_levels": [
            {"value": level, "label": CONFIDENCE_LABELS[level]} for level in CONFIDENCE_LEVELS
        ],
        "confidence_labels": CONFIDENCE_LABELS,
        "statistics": statistics,
    }


# --- downloads ------------------------------------------------------------------------


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def release_download_data(*, data: dict[str, Any], confidence: str) -> dict[str, Any]:
    """The JSON download: the release's public record with intervals at `confidence`."""
    statistics = []
    for stat in data["statistics"]:
        per_cell = stat["intervals"][confidence]["per_cell"]
        simultaneous = stat["intervals"][confidence]["simultaneous"]
        cells = []
        if stat["kind"] != "argmax":
            for i, cell in enumerate(stat["cells"]):
                row: dict[str, Any] = {"cell": cell, "value": stat["values"][i]}
                if stat["layout"] == "heatmap":
                    cols = stat["shape"][1]
                    row["row"] = stat["row_labels"][i // cols]
                    row["column"] = stat["col_labels"][i % cols]
                row.update(
                    halfwidth=_finite(per_cell["halfwidths"][i]),
                    lower=per_cell["lower"][i],
                    upper=per_cell["upper"][i],
                    simultaneous_halfwidth=_finite(simultaneous["halfwidths"][i]),
                    simultaneous_lower=simultaneous["lower"][i],
                    simultaneous_upper=simultaneous["upper"][i],
                )
                cells.append(row)
        statistics.append(
            {
                "position": stat["position"],
                "kind": stat["kind"],
                "label": stat["label"],
                "columns": stat["columns"],
                "category": stat["category"],
                "shape": stat["shape"],
                "epsilon": stat["epsilon"],
                "delta": stat["delta"],
                "mechanism": stat["mechanism"],
                "noise": stat["noise"],
                "cells": cells,
                "argmax": stat["argmax"],
            }
        )
    return {
        "release": {
            "id": data["release_id"],
            "project": data["project"],
            "title": data["title"],
            "mechanism": data["mechanism"],
            "epsilon": data["epsilon"],
            "delta": data["delta"],
            "privacy_unit": data["privacy_unit"],
            "approval": (
                {k: data["approval"][k] for k in ("reviewer", "decided_at")}
                if data["approval"]
                else None
            ),
            "published_at": data["published_at"],
        },
        "confidence": confidence,
        "interval_note": (
            "Intervals hold for the noisy value before any rounding or clamping. "
            "'halfwidth' holds for each value on its own; 'simultaneous_halfwidth' for all "
            "values of one statistic at once."
        ),
        "statistics": statistics,
    }


CSV_COLUMNS = [
    "release_id", "project", "release_title", "statistic_position", "statistic_label", "kind",
    "columns", "category", "cell", "row", "column", "value", "confidence", "halfwidth", "lower",
    "upper", "simultaneous_halfwidth", "simultaneous_lower", "simultaneous_upper", "mechanism",
    "noise", "noise_parameter", "epsilon", "delta", "privacy_unit", "approved_by", "approved_at",
    "published_at",
]  # fmt: skip

_PLAIN_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A CSV cell safe against formula injection in spreadsheets.

    Text starting with = + - @ (or tab / carriage return) is prefixed with a single
    quote; plain numbers (e.g. -3.5) stay numbers.
    """
    if value is None:
        return ""
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ""
    else:
        text = str(value)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def release_download_csv(*, data: dict[str, Any], confidence: str) -> str:
    """The CSV download: one row per published value (the argmax: one row with its label)."""
    record = release_download_data(data=data, confidence=confidence)
    meta = record["release"]
    approval = meta["approval"] or {}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for stat in record["statistics"]:
        noise = stat["noise"] or {}
        common = {
            "release_id": meta["id"],
            "project": meta["project"],
            "release_title": meta["title"],
            "statistic_position": stat["position"],
            "statistic_label": stat["label"],
            "kind": stat["kind"],
            "columns": " x ".join(stat["columns"]),
            "category": stat["category"],
            "confidence": confidence,
            "mechanism": stat["mechanism"],
            "noise": noise.get("name"),
            "noise_parameter": noise.get("parameter_text"),
            "epsilon": stat["epsilon"],
            "delta": stat["delta"],
            "privacy_unit": meta["privacy_unit"],
            "approved_by": approval.get("reviewer"),
            "approved_at": approval.get("decided_at"),
            "published_at": meta["published_at"],
        }
        rows = stat["cells"]
        if stat["kind"] == "argmax":
            rows = [{"cell": "most common", "value": (stat["argmax"] or {}).get("label")}]
        for cell in rows:
            row = {**common, **cell}
            writer.writerow([csv_cell(row.get(name)) for name in CSV_COLUMNS])
    return buffer.getvalue()
