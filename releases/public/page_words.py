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

from dpportal import bilingual, buckets, formatting, statistic_names, words
from dpportal.bilingual import Bilingual
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
    if kind in ("count", "histogram", "crosstab"):
        return pgettext("axis", "count")
    if kind == "keys":
        return pgettext("axis", "persons")
    if kind == "quantiles":
        return name
    if kind == "rows_per_person":
        return pgettext("axis", "persons")
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


def _part_words(part: dict[str, Any], *, exact: bool = False) -> tuple[str, str]:
    """(distribution, 'scale b = 12.3') of one noise draw; with `exact`, the parameter
    exactly ('scale b = 500/33'), as a printed record states it."""
    if part.get("distribution") == "discrete_gaussian":
        name = gettext("discrete Gaussian distribution")
        words_ = gettext("parameter sigma (about its standard deviation) = %(value)s")
    else:
        name = gettext("discrete Laplace distribution")
        words_ = gettext("scale b = %(value)s")
    if exact and part.get("value_exact"):
        shown = words.number_text(formatting.exact_fraction(part["value_exact"]))
    else:
        shown = part.get("value_text") or gettext("not recorded")
    return name, words_ % {"value": shown}


def noise_words(noise: dict[str, Any]) -> dict[str, str]:
    """The noise's name and parameters in the reader's language ("parameter_text" rounded
    as the page shows them, "exact_parameter_text" exactly)."""
    if noise.get("distribution") == "above_threshold":
        text = gettext(
            "discrete Laplace noise of scale b = %(value)s on the threshold and on each count "
            "of values compared (none is published)"
        ) % {"value": words.number_text(noise.get("scale_text") or "")}
        if noise.get("count_scale_text"):
            text += pgettext("list separator", "; ") + gettext(
                "the count of values: discrete Laplace noise of scale b = %(value)s"
            ) % {"value": words.number_text(noise["count_scale_text"])}
        return {
            "name": gettext("AboveThreshold search"),
            "parameter_text": text,
            "exact_parameter_text": text,
        }
    if noise.get("distribution") == "permute_and_flip":
        text = gettext("permute-and-flip over %(m)s public candidates (no added noise)") % {
            "m": noise.get("candidates_text", "")
        }
        return {
            "name": gettext("exact permute-and-flip selection"),
            "parameter_text": text,
            "exact_parameter_text": text,
        }
    parts = [p for p in ("sum", "count", "squares") if isinstance(noise.get(p), dict)]
    if not parts:
        name, shown = _part_words(noise)
        return {
            "name": name,
            "parameter_text": shown,
            "exact_parameter_text": _part_words(noise, exact=True)[1],
        }
    labels = {
        "sum": pgettext("noise part", "sum"),
        "count": pgettext("noise part", "count"),
        "squares": pgettext("noise part", "squares"),
    }

    def listed(exact: bool) -> str:
        texts = [
            gettext("%(part)s: %(words)s")
            % {"part": labels[p], "words": _part_words(noise[p], exact=exact)[1]}
            for p in parts
        ]
        return pgettext("list separator", "; ").join(texts)

    return {
        "name": _part_words(noise[parts[-1]] if "squares" in parts else noise[parts[0]])[0],
        "parameter_text": listed(False),
        "exact_parameter_text": listed(True),
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
                for key in ("ranks_text", "about_low_text", "about_high_text"):
                    if key in band:
                        band[key] = _numbers(band[key])


def _localise_owner_texts(stat: dict[str, Any]) -> None:
    """The statistic's name and description in the reader's language (the owner's, else
    the name dpportal makes, translated), and its columns named by their owner labels."""
    titles = {
        name: Bilingual.from_json(title).show()
        for name, title in (stat.get("column_titles") or {}).items()
    }
    stat["label"] = statistic_names.label_of(stat, titles=titles)
    stat["description_text"] = statistic_names.texts_of(stat, "description").show()
    cells = stat.get("cells") or []
    if stat["kind"] in ("sum", "mean"):
        stat["cells"] = [stat["label"]] * len(cells)
    elif len(cells) == 1 and not stat.get("category") and not stat.get("group_columns"):
        stat["cells"] = [statistic_names.cell_name(cells[0])]
    for key in ("row_title", "col_title"):
        if stat.get(key):
            stat[key] = titles.get(stat[key]) or stat[key]
    for key in ("columns", "group_columns"):
        stat[key] = [titles.get(c) or c for c in stat.get(key) or []]


def _localise_statistic(stat: dict[str, Any]) -> None:
    _localise_numbers(stat)
    _localise_owner_texts(stat)
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
    named = _owner_labels(stat)
    stat["value_title"] = value_title(stat["kind"], stat.get("columns") or [])
    if stat.get("noise"):
        noise = stat["noise"]
        for part in ("sum", "count", "squares"):
            if isinstance(noise.get(part), dict):
                noise[part] = {**noise[part], **noise_words(noise[part])}
        stat["noise"] = {**noise, **noise_words(noise)}
    stat["note_records"] = [
        [
            msgid,
            {
                k: (named.get(v) if k == "category" and isinstance(v, str) else None)
                or _note_value(k, v, generated)
                for k, v in (params or {}).items()
            },
        ]
        for msgid, params in stat.get("note_records") or []
    ]
    chart = stat.get("quantile_chart")
    if chart:
        chart["percent_texts"] = [percentile_text(p) for p in chart.get("percents") or []]
        for level in chart["bands"].values():
            for band in level.values():
                band["low_text"] = [percentile_text(p) for p in band["low"]]
                band["high_text"] = [percentile_text(p) for p in band["high"]]


def _owner_labels(stat: dict[str, Any]) -> dict[str, str]:
    """Show the owner's category labels (frozen with the release) instead of the codes,
    in the reader's language (falling back to the other, then to the code). The codes
    stay in the downloads and the API. Returns code -> label shown, for the notes."""
    codes = [str(c) for c in stat.get("cells") or []]
    named = {
        code: bilingual.json_text(label, code)
        for code, label in zip(codes, stat.get("cell_labels") or [], strict=False)
        if label and not stat.get("shape")
    }
    rows, cols = stat.get("row_names") or [], stat.get("col_names") or []
    if stat.get("shape") and (rows or cols):
        rows = rows or [None] * len(stat["row_labels"])
        cols = cols or [None] * len(stat["col_labels"])
        stat["row_labels"] = [
            bilingual.json_text(n, r) for r, n in zip(stat["row_labels"], rows, strict=False)
        ]
        stat["col_labels"] = [
            bilingual.json_text(n, c) for c, n in zip(stat["col_labels"], cols, strict=False)
        ]
        stat["cells"] = [f"{r} / {c}" for r in stat["row_labels"] for c in stat["col_labels"]]
    elif stat.get("cell_labels"):
        stat["cells"] = [
            bilingual.json_text(n, c)
            for c, n in zip(stat["cells"], stat["cell_labels"], strict=False)
        ]
    if stat.get("argmax_label") and isinstance(stat.get("argmax"), dict):
        stat["argmax"]["label"] = bilingual.json_text(stat["argmax_label"], stat["argmax"]["label"])
    return named


def _owner_words(record: Any, data: dict[str, Any]) -> Any:
    """A privacy unit note with the owner's words (the unit's description, the dataset's
    name) in the reader's language, where the data has them in both."""
    if not (isinstance(record, list | tuple) and len(record) == 2 and isinstance(record[1], dict)):
        return record
    params = dict(record[1])
    words = Bilingual.from_json(data.get("unit_words_i18n"))
    if "words" in params and words:
        params["words"] = words.show().strip().rstrip(".")
    name = Bilingual.from_json(data.get("dataset_name_i18n"))
    if "dataset" in params and name:
        params["dataset"] = name.show()
    return [record[0], params]


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
    out["title"] = statistic_names.title_of(out)
    out["description"] = statistic_names.texts_of(out, "description").show()
    records = out.get("privacy_unit_records")
    if records:
        records = [_owner_words(r, out) for r in records]
        out["privacy_unit"] = " ".join(notes.translated(r) for r in records)
    for stat in out.get("statistics") or []:
        _localise_statistic(stat)
    return out
