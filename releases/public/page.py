"""What the release page shows of one statistic at the reader's chosen options.

The numbers are the `text` strings releases.public.data formatted with
dpportal.formatting; the script on the page swaps in the strings of another
option without formatting anything itself.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from dpportal import formatting, words
from releases.kinds.bounds import extrapolated_text
from releases.models import Release
from releases.public import crosstab_page, notes, page_words, stats_text
from releases.public.options import CONFIDENCE_LABELS, ViewOptions


def fill(name: str, value: str) -> SafeString:
    """A number the page's script refills for another option (data-fill="name")."""
    return format_html('<span data-fill="{}">{}</span>', name, value)


def _rows(stat: dict[str, Any], *, options: ViewOptions) -> list[dict[str, Any]]:
    if stat["kind"] == "argmax":
        return []
    if stat["layout"] == "keys":  # keys found in the data without counts: the keys alone
        return [{"index": i, "cell": cell} for i, cell in enumerate(stat["cells"])]
    text = stat["text"][options.confidence]
    chosen = text[options.intervals]
    rounded = options.display == "rounded" and stat["clampable"]
    rows = []
    notes_ = stat.get("bucket_notes") or {}
    marks = stat.get("cell_buckets") or []
    for i, cell in enumerate(stat["cells"]):
        row = {
            "index": i,
            "cell": cell,
            # dpportal's own cell ("Other", "Missing"): its note, for the tooltip
            "bucket": notes_.get(marks[i], "") if i < len(marks) else "",
            "value": stat["text"]["rounded"][i] if rounded else text["value"][i],
            "lower": chosen["rounded_lower" if rounded else "lower"][i],
            "upper": chosen["rounded_upper" if rounded else "upper"][i],
            "halfwidth": chosen["halfwidth"][i],
        }
        if stat["layout"] in ("heatmap", "crosstab") or (
            stat["layout"] == "grouped_bars" and stat["shape"]
        ):
            cols = stat["shape"][1]
            row["row_label"] = stat["row_labels"][i // cols]
            row["col_label"] = stat["col_labels"][i % cols]
            row["row_bucket"] = _bucket_note(stat, "row_buckets", i // cols)
            row["col_bucket"] = _bucket_note(stat, "col_buckets", i % cols)
        rows.append(row)
    return rows


def _bucket_note(stat: dict[str, Any], key: str, index: int) -> str:
    marks = stat.get(key) or []
    mark = marks[index] if index < len(marks) else ""
    return (stat.get("bucket_notes") or {}).get(mark, "")


def _grid(stat: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A large 2-D histogram as rows of cells, for the table that replaces its heatmap."""
    if stat["layout"] != "crosstab":
        return []
    cols = stat["shape"][1]
    return [
        {"label": label, "cells": rows[r * cols : (r + 1) * cols]}
        for r, label in enumerate(stat["row_labels"])
    ]


def _counts_explanation(stat: dict[str, Any], *, noise_words: str, text: dict) -> SafeString:
    bars = stat["layout"] == "bars"
    fills = {
        "noise": noise_words,
        "confidence": fill("confidence", text["label"]),
        "halfwidth": fill("halfwidth", text["per_cell"]["halfwidth"][0]),
    }
    if stat["k"] == 1:
        return format_html(
            gettext(
                "The figure estimates a count made under the rules below: that count plus random "
                "noise drawn from a {noise}. With {confidence} confidence the count it estimates "
                "lies within plus or minus {halfwidth} of it."
            ),
            **fills,
        )
    if bars:
        message = gettext(
            "Each bar estimates a count made under the rules below: that count plus random noise "
            "drawn from a {noise}. With {confidence} confidence the count it estimates lies "
            "within plus or minus {halfwidth} of any one bar; all {k} bars at once lie within "
            "plus or minus {simultaneous}."
        )
    else:
        message = gettext(
            "Each cell estimates a count made under the rules below: that count plus random "
            "noise drawn from a {noise}. With {confidence} confidence the count it estimates "
            "lies within plus or minus {halfwidth} of any one cell; all {k} cells at once lie "
            "within plus or minus {simultaneous}."
        )
    return format_html(
        message,
        k=stat["k"],
        simultaneous=fill("simultaneous-halfwidth", text["simultaneous"]["halfwidth"][0]),
        **fills,
    )


def _explanation(stat: dict[str, Any], *, options: ViewOptions) -> SafeString:
    if stats_text.handles(stat["kind"]):
        return stats_text.explanation(stat, options=options)
    noise = stat["noise"] or {}
    noise_words = format_html("{} ({})", noise.get("name", ""), noise.get("parameter_text", ""))
    label = CONFIDENCE_LABELS[options.confidence]
    text = {**stat["text"].get(options.confidence, {}), "label": label}
    columns_text = page_words.names_text(stat["columns"], empty=gettext("category"))
    kind = stat["kind"]
    if kind in ("count", "histogram"):
        return _counts_explanation(stat, noise_words=noise_words, text=text)
    if kind == "crosstab":
        return format_html(
            gettext(
                "Each table estimates the counts of its cells made under the rules below. Every "
                "table comes from one set of noisy measurements (ResidualPlanner: each residual "
                "measured once with discrete Gaussian noise), so the tables agree exactly: a "
                "table's totals are the smaller tables' counts. With {confidence} confidence the "
                "count a cell estimates lies within plus or minus its table's half-width of it."
            ),
            confidence=fill("confidence", text["label"]),
        )
    if kind == "keys":
        return _keys_explanation(stat, text=text, noise_words=noise_words)
    if kind == "sum":
        return format_html(
            gettext(
                "The figure estimates the sum of {columns} made under the rules below: that sum "
                "plus random noise drawn from a {noise}. With {confidence} confidence the sum it "
                "estimates lies within plus or minus {halfwidth} of it."
            ),
            columns=columns_text,
            noise=noise_words,
            confidence=fill("confidence", text["label"]),
            halfwidth=fill("halfwidth", text["per_cell"]["halfwidth"][0]),
        )
    if kind == "mean" and (stat.get("uninformative_cells") or [False])[0]:
        return format_html(
            gettext(
                "The mean is a noisy sum of {columns} divided by a noisy count, each with its own "
                "noise from a {noise}, both made under the rules below. There are too few "
                "records to estimate it: no value is shown."
            ),
            columns=columns_text,
            noise=noise_words,
        )
    if kind == "mean":
        return format_html(
            gettext(
                "The mean is a noisy sum of {columns} divided by a noisy count, each with its own "
                "noise from a {noise}, both made under the rules below. With {confidence} "
                "confidence the mean they estimate lies between {lower} and {upper}."
            ),
            columns=columns_text,
            noise=noise_words,
            confidence=fill("confidence", text["label"]),
            lower=fill("lower", text["per_cell"]["lower"][0]),
            upper=fill("upper", text["per_cell"]["upper"][0]),
        )
    return format_html(
        gettext(
            "Chosen by Report Noisy Max: noise from a {noise} was added to the count of every "
            "declared category and only the category with the largest noisy count is published; "
            "the counts themselves are not. It may not be the truly most common one when counts "
            "are close."
        ),
        noise=noise_words,
    )


def _keys_explanation(stat: dict[str, Any], *, text: dict, noise_words: str) -> SafeString:
    """The categories found in the data: what is shown and what a missing key means."""
    if not stat.get("values"):
        return format_html(
            gettext(
                "The values of {columns} found in the data that passed a noisy threshold of "
                "persons (partition selection); their counts are not published. A value not "
                "listed may still be in the data."
            ),
            columns=page_words.names_text(stat["columns"], empty=gettext("category")),
        )
    return format_html(
        gettext(
            "The values of {columns} found in the data that passed a noisy threshold of persons "
            "(partition selection), each with its noisy count of persons: that count plus "
            "random noise drawn from a {noise}. With {confidence} confidence the count it "
            "estimates lies within plus or minus {halfwidth} of the noise's draw; only counts "
            "that passed the threshold are shown, so near it they lean high. A value not listed "
            "may still be in the data."
        ),
        columns=page_words.names_text(stat["columns"], empty=gettext("category")),
        noise=noise_words,
        confidence=fill("confidence", text["label"]),
        halfwidth=fill("halfwidth", text["per_cell"]["halfwidth"][0]),
    )


def _alt_text(stat: dict[str, Any], *, options: ViewOptions) -> str:
    if stats_text.handles(stat["kind"]):
        return stats_text.alt_text(stat, options=options)
    if stat["kind"] == "argmax" or stat["layout"] == "keys":
        return ""
    values = stat["text"][options.confidence]["value"]
    if stat["kind"] in ("sum", "mean"):
        return f"{stat['label']}: {values[0]}"
    pairs = stats_text.pairs_text(stat["cells"], values)
    if stat["layout"] == "bars":
        return gettext("Bar chart of %(label)s: %(values)s") % {
            "label": stat["label"],
            "values": pairs,
        }
    return gettext("Heatmap of %(label)s: %(values)s") % {"label": stat["label"], "values": pairs}


def captions() -> dict[str, str]:
    """Under each chart, by layout, in the reader's language."""
    return {
        "bars": gettext("Error bars: the interval at the chosen confidence level."),
        "heatmap": gettext(
            "Hover over a cell for its value and interval at the chosen confidence level."
        ),
        "crosstab": gettext("Too many cells for a readable heatmap: the counts are in this table."),
        "figure": gettext("The line shows the interval at the chosen confidence level."),
        **stats_text.captions(),
    }


def _page_query(options: ViewOptions, page: int) -> str:
    return "?" + urlencode(
        {"confidence": options.confidence, "intervals": options.intervals,
         "display": options.display, "page": page}
    )  # fmt: skip


def paging_context(stat: dict[str, Any], *, options: ViewOptions) -> dict[str, Any] | None:
    """ "Page p of N" of a statistic cut by releases.public.paging, with the links to the
    pages before and after (None when the statistic fits on one page)."""
    paging = stat.get("paging") or {}
    pages = int(paging.get("pages") or 1)
    if pages <= 1:
        return None
    current = int(paging["page"])
    return {
        **paging,
        "text": gettext(
            "Page %(page)s of %(pages)s: cells %(first)s to %(last)s of %(total)s. Every cell is "
            "in data.csv and data.json."
        )
        % {
            "page": words.number_text(formatting.integer(current)),
            "pages": words.number_text(formatting.integer(pages)),
            "first": words.number_text(formatting.integer(paging["first"])),
            "last": words.number_text(formatting.integer(paging["last"])),
            "total": words.number_text(formatting.integer(paging["total"])),
        },
        "previous": _page_query(options, current - 1) if current > 1 else "",
        "next": _page_query(options, current + 1) if current < pages else "",
    }


def statistic_context(
    stat: dict[str, Any], *, data: dict[str, Any], options: ViewOptions
) -> dict[str, Any]:
    """The template's view of one statistic at the reader's options."""
    rows = _rows(stat, options=options)
    return {
        **stat,
        "rows": rows,
        "grid": _grid(stat, rows),
        "tables": crosstab_page.tables(stat, rows),
        "columns_text": page_words.names_text(stat["columns"], empty=gettext("category")),
        "explanation_html": _explanation(stat, options=options),
        "mechanism_text": data["mechanism_label"]
        if stat["kind"] != "argmax"
        else gettext("Report Noisy Max"),
        "alt_text": _alt_text(stat, options=options),
        "caption": captions().get(stat["layout"], ""),
        "negative_note": notes.NEGATIVE_COUNTS if stat["clampable"] else "",
        "two_way": bool(rows) and "row_label" in rows[0],
        "warnings": stats_text.warnings(stat),
        "quantile_rows": stats_text.quantile_rows(stat, options=options),
        "quantile_basis": stats_text.quantile_basis(stat),
        "paging": paging_context(stat, options=options),
        "bounds_links": bounds_links(stat),
        "exact_noise_text": exact_noise_text(stat),
    }


def exact_noise_text(stat: dict[str, Any]) -> str:
    """The statistic's noise with its parameter exactly, for the release's facts
    ('discrete Laplace distribution: scale b = 500/33'); a search with neither a noise
    parameter nor public candidates (private bounds) is named by its mechanism."""
    noise = stat.get("noise") or {}
    if (
        not noise
        or stat.get("mechanism") == "above_threshold"
        or (noise.get("distribution") == "permute_and_flip" and not noise.get("candidates_text"))
    ):
        return words.mechanism_label(stat["mechanism"])
    return gettext("%(part)s: %(words)s") % {
        "part": noise["name"],
        "words": noise["exact_parameter_text"],
    }


def bounds_links(stat: dict[str, Any]) -> list[dict[str, str]]:
    """Each privately estimated bound the statistic uses, in words, with a link to the
    estimate's public page once that release is published ("" before)."""
    found = stat.get("bounds_estimated") or []
    published = {
        r.pk: r
        for r in Release.objects.filter(
            pk__in=[b["release"] for b in found], status=Release.Status.PUBLISHED
        ).select_related("project")
    }
    out = []
    for b in found:
        release = published.get(b["release"])
        out.append(
            {
                "text": gettext(
                    "bounds of %(column)s estimated privately at ε = %(epsilon)s "
                    "(release «%(title)s»)"
                )
                % {
                    "column": b["column"],
                    "epsilon": formatting.epsilon(b.get("epsilon")),
                    "title": b.get("title", ""),
                }
                + extrapolated_text(b),
                "url": reverse("public:release", args=[release.project.slug, release.pk])
                if release
                else "",
            }
        )
    return out


def chart_text() -> dict[str, str]:
    """The words around the numbers in the charts' hover text and axis titles, in the
    reader's language, for the page's scripts (json_script "chart-text"): {name} marks
    where the script puts a number."""
    style = words.number_style()
    return {
        "interval": gettext("interval %(lower)s to %(upper)s")
        % {"lower": "{lower}", "upper": "{upper}"},
        "rank_error": gettext("rank error ± %(ranks)s values") % {"ranks": "{ranks}"},
        "about": gettext("in the data's units about %(low)s to %(high)s (an estimate)")
        % {"low": "{low}", "high": "{high}"},
        "about_range": gettext("about %(low)s to %(high)s") % {"low": "{low}", "high": "{high}"},
        "ci": gettext("true value between %(low)s and %(high)s")
        % {"low": "{low}", "high": "{high}"},
        "ci_range": gettext("%(low)s to %(high)s") % {"low": "{low}", "high": "{high}"},
        "quantile_axis": gettext("percent of the values below"),
        "too_few": notes.too_few(),
        "between": gettext("%(low)s and %(high)s") % {"low": "{low}", "high": "{high}"},
        # Plotly's layout.separators: the decimal mark, then the thousands separator
        "separators": style.decimal + style.group,
    }
