"""The public release page's words and numbers, in the reader's language, put in when the
page renders.

The release's public data (releases.public.data) is computed once per publication
and shared by every language, the API and the downloads, which read its English
texts. The page reads a localised copy (`localised`): the same numbers, with every
word a reader sees put back together from the data's codes and numbers in the
active language (gettext): the privacy unit, the mechanism, the noise, chart
titles, quantile names, and the names dpportal gives the cells "Other" and
"Missing". Numbers are the strings dpportal.formatting made, in the language's separators.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext, pgettext

from dpportal import buckets, formatting, words
from releases.public import notes


def names_text(names: list[str], *, empty: str = "") -> str:
    """'a', 'a and b', 'a, b and c' in the reader's language."""
    if not names:
        return empty
    if len(names) == 1:
        return names[0]
    return gettext("%(first)s and %(last)s") % {
        "first": pgettext("list separator", ", ").join(names[:-1]),
        "last": names[-1],
    }


def cell_label(label: str, generated: list[str]) -> str:
    """A cell's name: dpportal's own "Other" and "Missing" written as buckets, "(Other)", in
    the reader's language (dpportal.buckets); a category as declared."""
    if label not in generated:
        return label
    return buckets.bucket_text(buckets.MARKS[label])


def cell_names(
    labels: list[str], marks: list[str] | None, generated: list[str]
) -> tuple[list[str], list[str]]:
    """The cells' names and their bucket marks ("other", "missing", "" for a category).

    `marks` come from the cells' places on the axes (releases.public.data); without
    them a name the spec declares no category for is taken for the bucket it names."""
    if not marks or len(marks) != len(labels):
        marks = [buckets.MARKS[label] if label in generated else "" for label in labels]
    names = [buckets.bucket_text(m) if m else label for label, m in zip(labels, marks, strict=True)]
    return names, list(marks)


def _note_value(key: str, value: Any, generated: list[str]) -> Any:
    """A note's parameter: "other" and "missing" always name dpportal's own cells; a
    "category" is one only when no declared category has its name."""
    if key in ("other", "missing"):
        return buckets.bucket_text(key)
    if key == "category":
        return cell_label(value, generated)
    return value


def bucket_notes() -> dict[str, str]:
    """The tooltip of each bucket, in the reader's language."""
    return {mark: buckets.bucket_note(mark) for mark in buckets.MARKS.values()}


def percentile_name(number: str) -> str:
    """'25th percentile', '2.5th percentile' for a percent written as text ('25', '2.5')."""
    shown = words.number_text(number)
    if "." in number:
        return gettext("%(number)sth percentile") % {"number": shown}
    n = int(number)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return {
        "st": gettext("%(number)sst percentile"),
        "nd": gettext("%(number)snd percentile"),
        "rd": gettext("%(number)srd percentile"),
        "th": gettext("%(number)sth percentile"),
    }[suffix] % {"number": shown}


def quantile_name(q: str) -> str:
    """'Median', 'Lower quartile', 'Upper quartile', '10th percentile', '2.5th percentile'."""
    value = Decimal(q)
    named = {
        Decimal("0.5"): gettext("Median"),
        Decimal("0.25"): gettext("Lower quartile"),
        Decimal("0.75"): gettext("Upper quartile"),
    }
    if value in named:
        return named[value]
    return percentile_name(format((value * 100).normalize(), "f"))


def percentile_text(percent: float | None) -> str:
    """'the 25th percentile' of a percent in [0, 100] (3 significant digits); '' for None."""
    if percent is None:
        return ""
    number = formatting.significant(percent, 3, group=False)
    return gettext("the %(percentile)s") % {"percentile": percentile_name(number)}


def value_title(kind: str, columns: list[str]) -> str:
    """The value axis of a statistic's chart."""
    name = columns[0] if columns else ""
    if kind in ("count", "histogram"):
        return pgettext("axis", "count")
    if kind == "quantiles":
        return name
    titles = {
        "sum": gettext("sum of %(name)s"),
        "grouped_sum": gettext("sum of %(name)s"),
        "mean": gettext("mean of %(name)s"),
        "grouped_mean": gettext("mean of %(name)s"),
        "stddev": gettext("standard deviation of %(name)s"),
        "variance": gettext("variance of %(name)s"),
    }
    if kind not in titles:
        return ""
    return titles[kind] % {"name": name} if name else titles[kind].replace("%(name)s", "").strip()


def _part_words(part: dict[str, Any]) -> tuple[str, str]:
    """(distribution, 'scale b = 12.3') of one noise draw."""
    if part.get("distribution") == "discrete_gaussian":
        name = gettext("discrete Gaussian distribution")
        words = gettext("parameter sigma (about its standard deviation) = %(value)s")
    else:
        name = gettext("discrete Laplace distribution")
        words = gettext("scale b = %(value)s")
    shown = part.get("value_text") or gettext("not recorded")
    return name, words % {"value": shown}


def noise_words(noise: dict[str, Any]) -> dict[str, str]:
    """The noise's name and parameters in the reader's language."""
    if noise.get("distribution") == "permute_and_flip":
        return {
            "name": gettext("exact permute-and-flip selection"),
            "parameter_text": gettext(
                "permute-and-flip over %(m)s public candidates (no added noise)"
            )
            % {"m": noise.get("candidates_text", "")},
        }
    parts = [p for p in ("sum", "count", "squares") if isinstance(noise.get(p), dict)]
    if not parts:
        name, words = _part_words(noise)
        return {"name": name, "parameter_text": words}
    labels = {
        "sum": pgettext("noise part", "sum"),
        "count": pgettext("noise part", "count"),
        "squares": pgettext("noise part", "squares"),
    }
    texts = [
        gettext("%(part)s: %(words)s") % {"part": labels[p], "words": _part_words(noise[p])[1]}
        for p in parts
    ]
    return {
        "name": _part_words(noise[parts[-1]] if "squares" in parts else noise[parts[0]])[0],
        "parameter_text": pgettext("list separator", "; ").join(texts),
    }


def _numbers(value: Any) -> Any:
    """Every number text inside `value` (dicts and lists of strings) in the reader's style."""
    if isinstance(value, str):
        return words.number_text(value)
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    return value


def _localise_numbers(stat: dict[str, Any]) -> None:
    stat["text"] = _numbers(stat.get("text") or {})
    noise = stat.get("noise") or {}
    for part in [noise, *(noise.get(p) for p in ("sum", "count", "squares"))]:
        if isinstance(part, dict):
            for key in ("value_text", "candidates_text"):
                if part.get(key):
                    part[key] = words.number_text(part[key])
    chart = stat.get("quantile_chart")
    if chart:
        for key in ("candidates_text", "grid_first", "grid_last"):
            chart[key] = words.number_text(chart.get(key) or "")
        for level in chart["bands"].values():
            for band in level.values():
                band["ranks_text"] = _numbers(band["ranks_text"])


def _localise_statistic(stat: dict[str, Any]) -> None:
    _localise_numbers(stat)
    generated = stat.get("generated_labels") or []
    for key, marks in (("cells", "cell_buckets"), ("row_labels", "row_buckets"),
                       ("col_labels", "col_buckets")):  # fmt: skip
        stat[key], stat[marks] = cell_names(stat.get(key) or [], stat.get(marks), generated)
    stat["bucket_notes"] = bucket_notes()
    if stat["kind"] == "quantiles" and stat.get("quantiles"):
        stat["cells"] = [quantile_name(q) for q in stat["quantiles"]]
        stat["cell_buckets"] = [""] * len(stat["cells"])
    if stat.get("argmax") and isinstance(stat["argmax"], dict):
        _localise_argmax(stat["argmax"])
    stat["value_title"] = value_title(stat["kind"], stat.get("columns") or [])
    if stat.get("noise"):
        noise = stat["noise"]
        for part in ("sum", "count", "squares"):
            if isinstance(noise.get(part), dict):
                noise[part] = {**noise[part], **noise_words(noise[part])}
        stat["noise"] = {**noise, **noise_words(noise)}
    stat["note_records"] = [
        [msgid, {k: _note_value(k, v, generated) for k, v in (params or {}).items()}]
        for msgid, params in stat.get("note_records") or []
    ]
    chart = stat.get("quantile_chart")
    if chart:
        chart["percent_texts"] = [percentile_text(p) for p in chart.get("percents") or []]
        for level in chart["bands"].values():
            for band in level.values():
                band["low_text"] = [percentile_text(p) for p in band["low"]]
                band["high_text"] = [percentile_text(p) for p in band["high"]]


def _localise_argmax(argmax: dict[str, Any]) -> None:
    """The most common category is always a declared one (releases.kinds.counting): its name
    is never taken for a bucket; one that reads like a bucket (a declaration from before such
    names were refused) says plainly that it is a declared category."""
    label = str(argmax.get("label", ""))
    mark = buckets.bucket_named(label)
    argmax["declared_note"] = (
        gettext(
            "“%(category)s” is one of the declared categories, not the cell dpportal adds for "
            "%(holds)s."
        )
        % {"category": label, "holds": buckets.bucket_holds(mark)}
        if mark
        else ""
    )


def localised(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of the release's public data with its words in the reader's language."""
    out = copy.deepcopy(data)
    out["mechanism_label"] = words.mechanism_label(out.get("mechanism", ""))
    records = out.get("privacy_unit_records")
    if records:
        out["privacy_unit"] = " ".join(notes.translated(r) for r in records)
    for stat in out.get("statistics") or []:
        _localise_statistic(stat)
    return out
