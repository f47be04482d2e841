"""The names dpportal gives a statistic, a cell and a release when their owner gives none.

A statistic without a label is stored with an English name made from its kind and
columns ("Mean of income by region"): the API and the downloads read that English.
A page shows it in the reader's language, made again from the same parts when it
renders (`statistic_label`): a stored label equal to the English name made from the
statistic's parts is one dpportal made, anything else is the owner's text and is shown
as written. An owner's label in both languages is shown in the reader's language with
a fallback to the other (dpportal.bilingual).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from django.utils.translation import gettext, gettext_noop, pgettext

from dpportal.bilingual import Bilingual, json_text

#: The title of a release whose owner gave none, and the one cell of a statistic over
#: every row (a count without a category, a grouped kind without groups).
UNTITLED_RELEASE = gettext_noop("Untitled release")
ALL_ROWS = gettext_noop("All rows")

_ROWS = gettext_noop("Rows")
_ROWS_WITH = gettext_noop("Rows with %(column)s = %(category)s")
_TWO_COLUMNS = gettext_noop("%(first)s x %(second)s")
_AND = gettext_noop("%(first)s and %(last)s")
_PLAIN = {
    "histogram": gettext_noop("Histogram of %(column)s"),
    "sum": gettext_noop("Sum of %(column)s"),
    "mean": gettext_noop("Mean of %(column)s"),
    "argmax": gettext_noop("Most common %(column)s"),
    "grouped_sum": gettext_noop("Sum of %(column)s"),
    "grouped_mean": gettext_noop("Mean of %(column)s"),
    "stddev": gettext_noop("Standard deviation of %(column)s"),
    "variance": gettext_noop("Variance of %(column)s"),
    "crosstab": gettext_noop("Cross-tabulation of %(column)s"),
    "bounds": gettext_noop("Bounds of %(column)s"),
    "keys": gettext_noop("Categories of %(column)s found in the data"),
}
_BY = {
    "grouped_sum": gettext_noop("Sum of %(column)s by %(groups)s"),
    "grouped_mean": gettext_noop("Mean of %(column)s by %(groups)s"),
    "stddev": gettext_noop("Standard deviation of %(column)s by %(groups)s"),
    "variance": gettext_noop("Variance of %(column)s by %(groups)s"),
}
#: kinds named without a column (they read the dataset's person column)
_UNIT = {"rows_per_person": gettext_noop("Rows per person")}
#: every kind whose name this module makes
KINDS = frozenset({"count", "quantiles", *_PLAIN, *_UNIT})
_MEDIAN = gettext_noop("Median of %(column)s")
_QUARTILES = gettext_noop("Median and quartiles of %(column)s")
_QUANTILES = gettext_noop("Quantiles of %(column)s")


def _english(message: str) -> str:
    return message


def statistic_default_label(
    *,
    kind: str,
    columns: Sequence[str],
    groups: Sequence[str] = (),
    category: str = "",
    quantiles: Sequence[str] = (),
    translate: bool = False,
) -> str:
    """The name dpportal gives a statistic: English (as stored and in the API) unless
    `translate`, then in the active language. `columns` and `groups` are the names to
    show (the columns' names in English; their labels on a page)."""
    words: Callable[[str], str] = gettext if translate else _english
    columns, groups = [str(c) for c in columns], [str(g) for g in groups]
    if kind in _UNIT:
        return words(_UNIT[kind])
    if kind == "count":
        if not columns:
            return words(_ROWS)
        return words(_ROWS_WITH) % {"column": columns[0], "category": category}
    if len(columns) == 2:
        column = words(_TWO_COLUMNS) % {"first": columns[0], "second": columns[1]}
    elif len(columns) > 2:
        column = columns[0]
        for name in columns[1:]:
            column = words(_TWO_COLUMNS) % {"first": column, "second": name}
    else:
        column = columns[0] if columns else ""
    if kind == "quantiles":
        listed = [str(q) for q in quantiles]
        if listed == ["0.5"]:
            return words(_MEDIAN) % {"column": column}
        if listed == ["0.25", "0.5", "0.75"]:
            return words(_QUARTILES) % {"column": column}
        return words(_QUANTILES) % {"column": column}
    if groups and kind in _BY:
        joined = groups[0]
        if len(groups) > 1:
            if translate:
                joined = words(_AND) % {
                    "first": pgettext("list separator", ", ").join(groups[:-1]),
                    "last": groups[-1],
                }
            else:
                joined = " and ".join(groups)
        return words(_BY[kind]) % {"column": column, "groups": joined}
    if kind in _PLAIN:
        return words(_PLAIN[kind]) % {"column": column}
    return words(_ROWS) if not column else column


def statistic_label(
    *,
    label: str,
    label_zh: str = "",
    kind: str,
    columns: Sequence[str],
    groups: Sequence[str] = (),
    category: str = "",
    quantiles: Sequence[str] = (),
    titles: Mapping[str, str] | None = None,
    language: str | None = None,
) -> str:
    """A statistic's name in the reader's language.

    The owner's label in the reader's language, else in the other one; a name
    dpportal made (the stored label is the English name of the statistic's parts, or
    there is none) is made again in the reader's language, with each column's title
    (`titles`: name -> the owner's label in the reader's language) in place of its
    name.
    """
    parts = {"kind": kind, "category": category or "", "quantiles": quantiles}
    made = statistic_default_label(columns=columns, groups=groups, **parts)
    if not (label_zh or "").strip() and (not label or label == made):
        shown = titles or {}
        return statistic_default_label(
            columns=[shown.get(c) or c for c in columns],
            groups=[shown.get(g) or g for g in groups],
            translate=True,
            **parts,
        )
    if label == made:
        # a made English name beside an owner's Chinese one: English readers see it made
        # from the column titles too
        label = statistic_default_label(
            columns=[(titles or {}).get(c) or c for c in columns],
            groups=[(titles or {}).get(g) or g for g in groups],
            translate=True,
            **parts,
        )
    return Bilingual(en=label or "", zh=label_zh or "").show(language)


def release_title(*, title: str, title_zh: str = "", language: str | None = None) -> str:
    """A release's title in the reader's language; dpportal's "Untitled release"
    translated."""
    if not (title_zh or "").strip() and (not title or title == UNTITLED_RELEASE):
        return gettext(UNTITLED_RELEASE)
    return Bilingual(en=title or "", zh=title_zh or "").show(language)


def cell_name(cell: str) -> str:
    """The one cell of a statistic over every row in the reader's language ("All rows");
    call it only on a cell that is not a declared category."""
    return gettext(ALL_ROWS) if cell == ALL_ROWS else cell


def _get(obj: object, key: str, default: object = None) -> object:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _column_parts(columns: object) -> tuple[list[str], dict[str, str]]:
    """Names and titles (in the reader's language) of columns given as models, frozen
    domains ({"name", "label": {"en", "zh-hans"}}) or plain names."""
    names, titles = [], {}
    for column in columns or ():  # type: ignore[attr-defined]
        if column is None:
            continue
        if isinstance(column, str):
            names.append(column)
            continue
        name = str(_get(column, "name", "") or "")
        names.append(name)
        if isinstance(column, Mapping):
            title = json_text(column.get("label"))
        else:
            title = Bilingual.of(column, "label").show()
        if title:
            titles[name] = title
    return names, titles


def label_of(stat: object, *, titles: Mapping[str, str] | None = None) -> str:
    """`statistic_label` of a Statistic model, or of a mapping with the same keys
    (label, label_zh, kind, columns, group_columns or groups, category, quantiles)."""
    if isinstance(stat, Mapping):
        columns, own = _column_parts(stat.get("columns"))
        groups, group_titles = _column_parts(stat.get("group_columns") or stat.get("groups"))
    else:
        columns, own = _column_parts([_get(stat, "column"), _get(stat, "column2")])
        groups, group_titles = _column_parts(
            [_get(stat, "group_column"), _get(stat, "group_column2")]
        )
    return statistic_label(
        label=str(_get(stat, "label", "") or ""),
        label_zh=str(_get(stat, "label_zh", "") or ""),
        kind=str(_get(stat, "kind", "") or ""),
        columns=columns,
        groups=groups,
        category=str(_get(stat, "category", "") or ""),
        quantiles=[str(q) for q in (_get(stat, "quantiles") or [])],  # type: ignore[attr-defined]
        titles={**own, **group_titles, **(titles or {})},
    )


def title_of(obj: object) -> str:
    """`release_title` of a release (model or mapping) or of a budget request (its
    frozen summary holds the Chinese title)."""
    zh = _get(obj, "title_zh")
    if zh is None and isinstance(obj, Mapping) and isinstance(obj.get("title_i18n"), Mapping):
        both = Bilingual.from_json(obj["title_i18n"])
        return release_title(title=both.en, title_zh=both.zh)
    if zh is None:
        summary = _get(obj, "summary")
        zh = summary.get("title_zh") if isinstance(summary, Mapping) else ""
    return release_title(title=str(_get(obj, "title", "") or ""), title_zh=str(zh or ""))


def texts_of(obj: object, field: str) -> Bilingual:
    """`field` and its `_zh` twin of a model or of a mapping."""
    return Bilingual(en=str(_get(obj, field, "") or ""), zh=str(_get(obj, field + "_zh", "") or ""))
