"""The public data of one published release, as JSON-ready values.

Everything here works from what a published release stores: the noisy values and
the explanation returned by dpportal.privacy (mechanism, noise scale, epsilon,
delta, granularity). Intervals at any confidence level are recomputed from that
stored explanation with `dpportal.privacy.accuracy` -- never from data -- so
switching the confidence level is post-processing of public values.

Numbers for people are formatted here by dpportal.formatting (`statistic_texts`:
values at the precision their half-width justifies, one set per confidence level
and interval kind), so the page, its script and the CSV show the same digits; the
exact values stay beside them for JSON. The cached public data holds no texts: a
page formats only the cells it shows (releases.public.paging), so its cost stays
bounded whatever the release's size.
"""

from __future__ import annotations

from typing import Any

from dpportal import buckets, formatting
from dpportal.bilingual import Bilingual
from releases import kinds
from releases.kinds import quantile_words
from releases.kinds.base import UNINFORMATIVE, clamped_at_zero, shown_as
from releases.kinds.counting import HEATMAP_MAX_CELLS, HEATMAP_MAX_LABELS
from releases.kinds.crosstab import public_tables as crosstab_tables
from releases.kinds.domains import cell_labels
from releases.models import Release
from releases.public import noise_data, notes, stats_data
from releases.public.facts import (
    day_text,
    privacy_unit_records,
    privacy_unit_text,
    release_approval,
)
from releases.public.options import (
    CONFIDENCE_LABELS,
    CONFIDENCE_LEVELS,
    DEFAULT_CONFIDENCE,
    INTERVAL_KINDS,
)

#: The shape of the cached public data: part of its cache key, so that a deploy that
#: changes the shape never reads an entry cached by the code before it.
FORMAT = 7

__all__ = [
    "FORMAT",
    "HEATMAP_MAX_CELLS",
    "HEATMAP_MAX_LABELS",
    "frozen_statistics",
    "frozen_unit",
    "release_public_data",
    "statistic_texts",
]

MECHANISM_LABELS = {
    "laplace": "Laplace mechanism (pure epsilon-differential privacy)",
    "gaussian": "Gaussian mechanism ((epsilon, delta)-differential privacy)",
    "permute_and_flip": "Exact permute-and-flip selection (pure epsilon-differential privacy)",
    "above_threshold": "AboveThreshold search (pure epsilon-differential privacy)",
    "partition_selection": (
        "Partition selection: keys found in the data above a noisy threshold "
        "((epsilon, delta)-differential privacy)"
    ),
}


def bounds_estimated(spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The statistic's columns whose declared bounds a private estimate gave, as frozen
    with its specification (releases.kinds.domains.column_domain): column, release,
    title, epsilon, lower, upper. Empty when the owner knew every bound used."""
    out = []
    for domain in (spec or {}).get("columns") or []:
        estimate = domain.get("bounds_estimate") if isinstance(domain, dict) else None
        if isinstance(estimate, dict) and estimate.get("release") is not None:
            out.append({"column": str(domain.get("name")), **estimate})
    return out


def _intervals(
    entry: dict, levels: tuple[str, ...], display: list[int] | None = None
) -> tuple[dict[str, dict[str, dict[str, list]]], list[bool]]:
    """For each confidence level of `levels` and each interval kind: per-cell half-widths,
    lower and upper (and a quantile's rank errors), as the statistic's kind states them,
    and for counts the interval of the rounded, clamped display ("rounded_lower",
    "rounded_upper": kinds.base.clamped_at_zero), or of `display`, a kind's whole numbers
    that agree with each other (kinds.base.shown_as); and per cell whether the kind flagged
    it uninformative (a fact of the noisy values at the release's confidence, the same
    at every level: read from the first level's cells)."""
    kind = kinds.get(entry["kind"])
    out: dict[str, dict[str, dict[str, list]]] = {}
    flags: list[bool] = []
    for level in levels:
        out[level] = {}
        for interval_kind in INTERVAL_KINDS:
            cells = kind.intervals(
                entry, confidence=level, simultaneous=interval_kind == "simultaneous"
            )
            out[level][interval_kind] = {
                "halfwidths": [c.halfwidth for c in cells],
                "lower": [c.low for c in cells],
                "upper": [c.high for c in cells],
            }
            if any(c.rank_error is not None for c in cells):
                out[level][interval_kind]["rank_errors"] = [c.rank_error for c in cells]
                # the rank error in the data's units, an estimate (None: no n to read it with)
                out[level][interval_kind]["about_lower"] = [c.about_low for c in cells]
                out[level][interval_kind]["about_upper"] = [c.about_high for c in cells]
            if kind.clampable:
                shown = (
                    [shown_as(c, d) for c, d in zip(cells, display, strict=True)]
                    if display is not None
                    else [clamped_at_zero(c) for c in cells]
                )
                out[level][interval_kind]["rounded_lower"] = [c.low for c in shown]
                out[level][interval_kind]["rounded_upper"] = [c.high for c in shown]
            if level == levels[0] and interval_kind == "per_cell":
                flags = [c.flag == UNINFORMATIVE for c in cells]
    return out, flags


def _precision(value: float, lower: float, upper: float, halfwidth: float | None) -> float:
    """The half-width that fixes a shown value's last digit (a mean's: its longer side)."""
    if halfwidth is not None:
        return halfwidth
    return max(upper - value, value - lower)


def statistic_texts(stat: dict[str, Any]) -> dict[str, Any]:
    """The statistic's numbers as people read them, for every option of the page.

    Linear in the statistic's cells (about 20 texts each): call it on the page's
    slice of a statistic (releases.public.paging), not on a whole large one.

    {level: {"value": [...], "per_cell": {"lower", "upper", "halfwidth"},
    "simultaneous": {...}}, "rounded": [...]}: a value keeps the precision its
    per-cell half-width justifies; an interval's ends the precision of its own
    half-width; "rounded" is the clamped display of counts (whole, at least 0), with
    its own interval ends ("rounded_lower", "rounded_upper": clamped the same way).
    A cell its kind flags uninformative shows the words "too few records to estimate"
    instead of its value, and no interval.
    """
    values = stat["values"]
    out: dict[str, Any] = {}
    if stat["kind"] == "argmax":
        return out
    if stat["kind"] == "quantiles":
        return _quantile_texts(stat)
    hidden = stat.get("uninformative_cells") or [False] * len(values)
    for level in stat["intervals"]:
        per_cell = stat["intervals"][level]["per_cell"]
        texts: dict[str, Any] = {
            "value": [
                notes.too_few()
                if hidden[i]
                else formatting.noisy(
                    v,
                    _precision(
                        v, per_cell["lower"][i], per_cell["upper"][i], per_cell["halfwidths"][i]
                    ),
                )
                for i, v in enumerate(values)
            ]  # fmt: skip
        }
        for interval_kind in INTERVAL_KINDS:
            iv = stat["intervals"][level][interval_kind]
            ends = [
                _precision(v, iv["lower"][i], iv["upper"][i], iv["halfwidths"][i])
                for i, v in enumerate(values)
            ]
            texts[interval_kind] = {
                name: [
                    notes.NO_NUMBER if hidden[i] else formatting.noisy(x, h)
                    for i, (x, h) in enumerate(zip(iv[name], ends, strict=True))
                ]
                for name in ("lower", "upper")
            }
            texts[interval_kind]["halfwidth"] = [
                "" if hidden[i] else formatting.halfwidth(h) for i, h in enumerate(iv["halfwidths"])
            ]
            if stat["clampable"]:  # the rounded display's interval, at the same precision
                texts[interval_kind].update(
                    {
                        f"rounded_{name}": [
                            formatting.noisy(x, h)
                            for x, h in zip(iv[f"rounded_{name}"], ends, strict=True)
                        ]
                        for name in ("lower", "upper")
                    }
                )
        out[level] = texts
    if stat["clampable"]:
        display = stat.get("display_values")
        out["rounded"] = (
            [formatting.integer(d) for d in display]
            if display
            else [formatting.integer(max(0, round(v))) for v in values]
        )
    return out


def _quantile_texts(stat: dict[str, Any]) -> dict[str, Any]:
    """Quantiles: the chosen candidates exactly, and the rank error in records (no interval)."""
    out: dict[str, Any] = {}
    for level in stat["intervals"]:
        texts: dict[str, Any] = {
            "value": [formatting.exact(v, group=True) for v in stat["exact_values"]]
        }
        for interval_kind in INTERVAL_KINDS:
            iv = stat["intervals"][level][interval_kind]
            errors = iv["rank_errors"]
            about = [
                quantile_words.about_range_texts(low, high)
                for low, high in zip(
                    iv.get("about_lower") or [None] * len(errors),
                    iv.get("about_upper") or [None] * len(errors),
                    strict=True,
                )
            ]
            texts[interval_kind] = {
                "lower": [""] * len(errors),
                "upper": [""] * len(errors),
                "halfwidth": [""] * len(errors),
                "rank_error": [formatting.rank(t) for t in errors],
                "about_lower": [low for low, _ in about],
                "about_upper": [high for _, high in about],
            }
        out[level] = texts
    return out


def _statistic_data(
    entry: dict,
    *,
    spec: dict[str, Any] | None,
    unit_note: list,
    mechanism: str,
    levels: tuple[str, ...] = CONFIDENCE_LEVELS,
) -> dict[str, Any]:
    kind = entry["kind"]
    statistic_kind = kinds.get(kind)
    explanation = entry.get("explanation") or {}
    columns = list(entry.get("columns") or [])
    values = statistic_kind.values(entry)
    # a kind whose cells must agree shows whole numbers that still agree (its display)
    display = statistic_kind.display_values(entry) if statistic_kind.clampable else None
    intervals, uninformative = _intervals(entry, levels, display)
    cells = [str(c) for c in entry.get("cells") or []]
    # a statistic the owner named in Chinese only has no plain label
    label = entry.get("label") or ("" if (spec or {}).get("label_zh") else kind)
    if kind in ("sum", "mean") or (kind == "count" and not cells):
        cells = [label or str((spec or {}).get("label_zh"))]
    if statistic_kind.values_published(entry) and len(cells) != len(values):
        raise ValueError("a published statistic's cells and values disagree")
    shape = entry.get("shape")
    data: dict[str, Any] = {
        "position": int(entry["position"]),
        "kind": kind,
        "label": label,
        "columns": columns,
        "category": entry.get("category"),
        "layout": statistic_kind.layout(entry),
        "cells": cells,
        "shape": list(shape) if shape else None,
        "row_labels": [str(x) for x in entry.get("row_labels") or []],
        "col_labels": [str(x) for x in entry.get("col_labels") or []],
        "row_title": columns[0] if columns else "",
        "col_title": columns[1] if len(columns) > 1 else "",
        "value_title": statistic_kind.value_title(columns),
        "values": values,
        "k": max(1, len(values)),
        "clampable": statistic_kind.clampable,
        "epsilon": formatting.exact(entry.get("epsilon") or 0),
        "delta": formatting.exact(entry.get("delta") or 0),
        "epsilon_text": formatting.budget(entry.get("epsilon") or 0),
        "delta_text": formatting.budget(entry.get("delta") or 0),
        "mechanism": statistic_kind.result_mechanism(entry, mechanism),
        "mechanism_label": MECHANISM_LABELS.get(
            statistic_kind.result_mechanism(entry, mechanism), mechanism
        ),
        "noise": noise_data.noise(explanation, kind=kind),
        "intervals": intervals,
        "argmax": entry.get("argmax"),
        "uninformative": any(uninformative),
        "uninformative_cells": uninformative,
        "group_columns": list(entry.get("group_columns") or []),
        "quantiles": list(entry.get("quantiles") or []),
        "exact_values": list(entry.get("values") or []),
        "generated_labels": _generated_labels(spec),
        # the owner's texts frozen with the specification (releases.services.freeze)
        **_owner_texts(spec),
        **_bucket_marks(statistic_kind, spec, data_cells=cells, shape=shape),
    }
    _add_cell_labels(data, spec)
    data["bounds_estimated"] = bounds_estimated(spec)
    statement = statistic_kind.statement(entry)
    if statement:  # a result that is a sentence (private bounds): its values and the sentence
        data["bounds"] = dict(entry.get("bounds") or {})
        data["statement"] = statement
    if entry.get("tables"):  # a cross-tabulation's tables over its flattened cells
        data["tables"] = crosstab_tables(entry)
        data["display_values"] = display
    if kind == "quantiles":  # what n a quantile's data-unit range is read with (or None)
        basis = quantile_words.value_basis(entry)
        data["about_basis"] = list(basis) if basis else None
        # the confidence the quantiles' intervals were released at (None: released without)
        data["interval_confidence"] = entry.get("interval_confidence")
    # notes in English for the API and downloads, and as message records for the pages,
    # which translate them when they are rendered (this data is cached for every language)
    data["note_records"] = notes.statistic_notes(entry=entry, spec=spec, unit=unit_note)
    data["notes"] = [notes.english(record) for record in data["note_records"]]
    if stats_data.handles(kind):  # chart fields of the grouped kinds
        data.update(stats_data.chart_fields(entry, data["intervals"]))
    return data


def _add_cell_labels(data: dict[str, Any], spec: dict[str, Any] | None) -> None:
    """The owner's labels of the cells, frozen in the specification: "cell_labels" (one
    {"en", "zh-hans"} or None per cell), "row_names" and "col_names" (a two-way table's),
    and the most common category's "argmax_label"; the codes stay in "cells"."""
    labels = cell_labels(
        spec, cells=data["cells"], row_labels=data["row_labels"], col_labels=data["col_labels"]
    )
    data["cell_labels"] = labels["cells"]
    data["row_names"], data["col_names"] = labels["rows"], labels["columns"]
    argmax = data.get("argmax")
    data["argmax_label"] = None
    if isinstance(argmax, dict) and argmax.get("label") is not None:
        found = cell_labels(spec, cells=[str(argmax["label"])], row_labels=[], col_labels=[])
        data["argmax_label"] = (found["cells"] or [None])[0]


def _owner_texts(spec: dict[str, Any] | None) -> dict[str, Any]:
    """The statistic's Chinese label, its description in both languages and its columns'
    labels ({name: {"en", "zh-hans"}}), as frozen in its specification."""
    spec = spec or {}
    titles = {
        str(domain.get("name")): Bilingual.from_json(domain["label"]).as_json()
        for domain in [*(spec.get("columns") or []), *(spec.get("groups") or [])]
        if isinstance(domain, dict) and domain.get("label")
    }
    return {
        "label_zh": str(spec.get("label_zh") or ""),
        "description": str(spec.get("description") or ""),
        "description_zh": str(spec.get("description_zh") or ""),
        "column_titles": titles,
    }


def _generated_labels(spec: dict[str, Any] | None) -> list[str]:
    """The cell names dpportal gives ("Other", "Missing") that no declared category shares:
    the page translates those, never a category the owner declared with the same name."""
    declared = {
        str(category)
        for domain in [*((spec or {}).get("columns") or []), *((spec or {}).get("groups") or [])]
        for category in (domain.get("categories") or [])
    }
    return [label for label in (notes.OTHER, notes.MISSING) if label not in declared]


def _bucket_marks(
    statistic_kind: Any, spec: dict[str, Any] | None, *, data_cells: list[str], shape: Any
) -> dict[str, list[str]]:
    """Which cells are dpportal's own (dpportal.buckets.cell_marks), by their place on the
    axes of the frozen spec: the groups of a grouped kind, the columns of the others."""
    if not spec or not statistic_kind.cells_on_axes:
        return {}
    grouped = statistic_kind.fields == "grouped"
    domains = (spec.get("groups") if grouped else spec.get("columns")) or []
    return buckets.cell_marks(domains, cells=len(data_cells), shape=shape)


def frozen_statistics(*, release: Release) -> dict[int, dict[str, Any]]:
    """The frozen specification of each statistic by position (public domains, bounds)."""
    spec = release.spec if isinstance(release.spec, dict) else {}
    entries = spec.get("statistics")
    if not isinstance(entries, list):
        return {}
    return {int(e["position"]): e for e in entries if isinstance(e, dict) and "position" in e}


def frozen_unit(*, release: Release) -> dict[str, Any]:
    """The privacy unit the release was computed with (its spec; else the dataset's)."""
    spec = release.spec if isinstance(release.spec, dict) else {}
    unit = spec.get("privacy_unit")
    if isinstance(unit, dict) and "contribution_bound" in unit:
        return {"id_column": unit.get("id_column"), "bound": int(unit["contribution_bound"])}
    dataset = release.dataset
    return {"id_column": dataset.id_column or None, "bound": int(dataset.contribution_bound)}


def _unit_parameters(*, release: Release) -> dict[str, Any]:
    """{"unit": "person" or "row", "id_column", "contribution_bound" (L; 1 for rows)}."""
    frozen = frozen_unit(release=release)
    return {
        "unit": "person" if frozen["id_column"] else "row",
        "id_column": frozen["id_column"],
        "contribution_bound": frozen["bound"] if frozen["id_column"] else 1,
    }


def release_public_data(
    *, release: Release, levels: tuple[str, ...] = CONFIDENCE_LEVELS
) -> dict[str, Any]:
    """Everything the public may know about a published release, as JSON-ready data.

    The statistics carry their noisy values and, for each confidence level of
    `levels` and for per-cell and simultaneous intervals, the intervals computed
    from the stored noise parameters. Some kinds' intervals cost milliseconds a
    cell to compute, so a page or a download asks for the one level it shows.
    """
    if not levels or any(level not in CONFIDENCE_LEVELS for level in levels):
        raise ValueError("levels must be confidence levels of the page")
    payload = release.result.payload
    mechanism = payload.get("mechanism") or release.mechanism
    specs = frozen_statistics(release=release)
    unit_note = notes.unit_note(**frozen_unit(release=release))
    statistics = [
        _statistic_data(
            entry,
            spec=specs.get(int(entry["position"])),
            unit_note=unit_note,
            mechanism=mechanism,
            levels=levels,
        )
        for entry in sorted(payload.get("statistics", []), key=lambda e: int(e["position"]))
    ]
    approval = release_approval(release=release)
    return {
        "release_id": release.pk,
        "project": release.project.slug,
        "project_name": release.project.name,
        "title": release.title,
        "title_zh": release.title_zh,
        "description": release.description,
        "description_zh": release.description_zh,
        "project_name_zh": release.project.name_zh,
        # the owner's words in the privacy unit's notes, in both languages (page_words)
        "unit_words_i18n": Bilingual.of(release.project, "privacy_unit_description").as_json(),
        "dataset_name_i18n": Bilingual.of(release.dataset, "name").as_json(),
        "mechanism": mechanism,
        "mechanism_label": MECHANISM_LABELS.get(mechanism, mechanism),
        "epsilon": formatting.exact(release.epsilon),
        "delta": formatting.exact(release.delta),
        "epsilon_text": formatting.budget(release.epsilon),
        "delta_text": formatting.budget(release.delta),
        "privacy_unit": privacy_unit_text(release=release),
        # the unit as parameters: a person (by an ID column, at most L rows) or a row
        "privacy_unit_parameters": _unit_parameters(release=release),
        "privacy_unit_records": privacy_unit_records(release=release),
        "approval": approval,
        "published_at": day_text(release.published_at),
        "default_confidence": DEFAULT_CONFIDENCE if DEFAULT_CONFIDENCE in levels else levels[0],
        "levels": list(levels),
        "confidence_levels": [
            {"value": level, "label": CONFIDENCE_LABELS[level]} for level in CONFIDENCE_LEVELS
        ],
        "confidence_labels": CONFIDENCE_LABELS,
        "statistics": statistics,
    }
