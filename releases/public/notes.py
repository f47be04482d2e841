"""What each public statistic estimates, in plain language.

A noisy value estimates a number computed from the data AFTER the release's
rules were applied: at most L records per person kept, numeric values clamped
into the first and last bins, sums and means clipped to public bounds, values
outside the declared categories counted as "Other", missing values counted as
"Missing" or left out. Readers must be told, or an interval that misses the raw
total looks like a broken promise. Everything here comes from the release's
frozen specification (the owner's public declarations), never from the data.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext, gettext_noop

from dpportal import formatting, words
from releases import kinds

# The names compute gives these cells (releases.compute.readers.OTHER / MISSING).
OTHER = "Other"
MISSING = "Missing"

# Shown beside counts unless the reader chose the rounded, clamped display.
NEGATIVE_COUNTS = gettext_noop(
    "Noise can make a count negative, or not a possible count: counts are shown as drawn "
    "unless you choose “show counts rounded and clamped at zero” above."
)

# Shown instead of the value of a cell its kind flags uninformative (kinds.base.uninformative).
TOO_FEW = gettext_noop("too few records to estimate")

#: What an uninformative cell shows where its interval's ends and half-width would be.
NO_NUMBER = "—"


def too_few() -> str:
    """The words an uninformative cell shows instead of its value, in the active language."""
    return gettext(TOO_FEW)


#: A note as a message record: [English msgid, {placeholder: value}]. The release's public
#: data is cached once for every language and shared with the API and downloads, so notes
#: are kept as records there and put into words by `english` (downloads, the API) or
#: translated where a page is rendered (releases.templatetags.public_notes).
Record = list


def note(msgid: str, **params: Any) -> Record:
    return [msgid, params]


def english(record: Record) -> str:
    msgid, params = record
    return msgid % params if params else msgid


#: parameters of a note that hold a number written by dpportal.formatting (bounds, edges,
#: grid steps), and what such a number looks like: it takes the reader's separators
NUMBER_PARAMS = frozenset({"first", "last", "lower", "upper", "step"})
_NUMBER = re.compile(r"^-?\d{1,3}(,\d{3})*(\.\d+)?$|^-?\d+(\.\d+)?$")


def translated(record: Record) -> str:
    """The record in the active language (gettext now), filled in; its numbers in the
    reader's separators (dpportal.words)."""
    msgid, params = record
    text = gettext(msgid)
    if not params:
        return text
    params = {
        key: words.number_text(value)
        if key in NUMBER_PARAMS and isinstance(value, str) and _NUMBER.match(value)
        else value
        for key, value in params.items()
    }
    return text % params


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def unit_note(*, id_column: str | None, bound: int) -> Record:
    """The person-level limit, or that every row counts as its own unit."""
    if id_column:
        return note(
            _plural(
                bound,
                gettext_noop(
                    "At most %(bound)s record per person (people are identified by the column "
                    "“%(column)s”) were kept: of a person with more, %(bound)s were chosen at "
                    "random and the rest left out, so totals can fall short of the raw data."
                ),
                gettext_noop(
                    "At most %(bound)s records per person (people are identified by the column "
                    "“%(column)s”) were kept: of a person with more, %(bound)s were chosen at "
                    "random and the rest left out, so totals can fall short of the raw data."
                ),
            ),
            bound=formatting.integer(bound),
            column=id_column,
        )
    return note(
        gettext_noop(
            "Every row counts on its own: no rows were left out for having the same person."
        )
    )


def _missing_note(domain: dict[str, Any], *, counted: bool) -> Record:
    name = domain["name"]
    if counted and domain.get("missing") == "category":
        return note(
            gettext_noop("“%(missing)s” counts the records with no value for %(name)s."),
            missing=MISSING,
            name=name,
        )
    return note(gettext_noop("Records with no value for %(name)s are left out."), name=name)


def axis_notes(domain: dict[str, Any]) -> list[Record]:
    """How one column's values were put into cells: Other, Missing, edge bins."""
    name = domain["name"]
    notes = []
    source = domain.get("categories_source") or {}
    if domain.get("kind") == "categorical" and source:
        notes.append(
            note(
                gettext_noop(
                    "The categories of %(name)s are those published by release “%(title)s” "
                    "(partition selection at ε = %(epsilon)s, δ = %(delta)s): values found in "
                    "the data, never read from it again."
                ),
                name=name,
                title=str(source.get("title") or ""),
                epsilon=formatting.budget(source.get("epsilon") or 0),
                delta=formatting.budget(source.get("delta") or 0),
            )
        )
    if domain.get("kind") == "categorical":
        n = len(domain.get("categories") or [])
        notes.append(
            note(
                _plural(
                    n,
                    gettext_noop(
                        "“%(other)s” counts the records whose %(name)s is none of the %(n)s "
                        "declared category."
                    ),
                    gettext_noop(
                        "“%(other)s” counts the records whose %(name)s is none of the %(n)s "
                        "declared categories."
                    ),
                ),
                other=OTHER,
                name=name,
                n=formatting.integer(n),
            )
        )
    else:
        edges = domain.get("bin_edges") or []
        if len(edges) >= 2:
            notes.append(
                note(
                    gettext_noop(
                        "Values of %(name)s below %(first)s are counted in the first bin and "
                        "values above %(last)s in the last bin. A bin holds values from its "
                        "lower edge up to, but not including, its upper edge; the last bin "
                        "includes its upper edge."
                    ),
                    name=name,
                    first=formatting.exact(edges[0], group=True),
                    last=formatting.exact(edges[-1], group=True),
                )
            )
    notes.append(_missing_note(domain, counted=True))
    return notes


CLIP_NOTES = {
    "sum": gettext_noop(
        "Before the sum, each value of %(name)s was clipped to the public range from %(lower)s "
        "to %(upper)s: values below %(lower)s count as %(lower)s, values above %(upper)s as "
        "%(upper)s."
    ),
    "mean was taken": gettext_noop(
        "Before the mean was taken, each value of %(name)s was clipped to the public range "
        "from %(lower)s to %(upper)s: values below %(lower)s count as %(lower)s, values above "
        "%(upper)s as %(upper)s."
    ),
    "spread": gettext_noop(
        "Before the spread, each value of %(name)s was clipped to the public range from "
        "%(lower)s to %(upper)s: values below %(lower)s count as %(lower)s, values above "
        "%(upper)s as %(upper)s."
    ),
}


def _clip_note(name: str, lower: Any, upper: Any, *, what: str) -> Record:
    return note(
        CLIP_NOTES[what],
        name=name,
        lower=formatting.exact(lower, group=True),
        upper=formatting.exact(upper, group=True),
    )


def statistic_notes(
    *, entry: dict[str, Any], spec: dict[str, Any] | None, unit: Record
) -> list[Record]:
    """The rules behind one published statistic, one sentence (record) each.

    `entry` is the stored result entry, `spec` the statistic's frozen
    specification (None for a release stored without one: then only what the
    result itself says), `unit` the note from `unit_note`.
    """
    kind = entry["kind"]
    domains = list((spec or {}).get("columns") or [])
    notes = [unit]
    if kind == "count":
        category = entry.get("category")
        if domains and category:
            notes.append(
                note(
                    gettext_noop("It counts the records whose %(name)s is “%(category)s”."),
                    name=domains[0]["name"],
                    category=category,
                )
            )
            if category in (OTHER, MISSING):
                notes.extend(axis_notes(domains[0]))
        else:
            notes.append(note(gettext_noop("It counts every record kept.")))
    elif kind in ("histogram", "crosstab"):
        for domain in domains:
            notes.extend(axis_notes(domain))
    elif kind == "rows_per_person":
        notes.append(
            note(
                gettext_noop(
                    "It counts persons by how many rows each has: all of a person's rows, "
                    "before the limit per person. Persons with more than %(cap)s rows are in "
                    "the last bar; rows without a person are not counted. One person changes "
                    "one bar by 1, so the noise does not depend on that limit."
                ),
                cap=formatting.integer(entry.get("cap")),
            )
        )
    elif kind in ("sum", "mean"):
        name = domains[0]["name"] if domains else ", ".join(entry.get("columns") or [])
        if spec and spec.get("lower") is not None:
            what = "sum" if kind == "sum" else "mean was taken"
            notes.append(_clip_note(name, spec["lower"], spec["upper"], what=what))
        if kind == "sum" and spec and spec.get("granularity"):
            notes.append(
                note(
                    gettext_noop(
                        "Each clipped value was then rounded to the public grid the noise is "
                        "drawn on (steps of %(step)s, rounded here)."
                    ),
                    step=formatting.scale(spec["granularity"]),
                )
            )
        notes.append(
            note(gettext_noop("Records with no value for %(name)s are left out."), name=name)
        )
    elif kinds.get(kind).fields == "grouped":
        notes.extend(_grouped_kind_notes(entry, spec))
        for domain in (spec or {}).get("groups") or []:
            notes.extend(axis_notes(domain))
    elif kinds.get(kind).fields == "keys":
        notes.extend(keys_notes(entry))
    elif kind == "argmax":
        n = len(entry.get("cells") or [])
        notes.append(
            note(
                _plural(
                    n,
                    gettext_noop(
                        "Only the %(n)s declared category compete; values outside them and "
                        "missing values are never chosen."
                    ),
                    gettext_noop(
                        "Only the %(n)s declared categories compete; values outside them and "
                        "missing values are never chosen."
                    ),
                ),
                n=formatting.integer(n),
            )
        )
    notes.extend(estimated_bounds_notes(spec))
    return notes


ESTIMATED_BOUNDS = gettext_noop(
    "The bounds of %(name)s were not known in advance: they were estimated privately at "
    "ε = %(epsilon)s (release «%(title)s»), and that estimate's cost is in the project's "
    "registry."
)


EXTRAPOLATED_BOUND = gettext_noop(
    "The upper bound of %(name)s was extrapolated under a log-normal tail model: if the "
    "column's upper tail is not log-normal, more values than intended may have been clipped."
)


def estimated_bounds_notes(spec: dict[str, Any] | None) -> list[Record]:
    """One note per column whose declared bounds a private estimate gave (frozen with the
    specification): readers must not take them for the owner's knowledge."""
    out = []
    for domain in (spec or {}).get("columns") or []:
        estimate = domain.get("bounds_estimate") if isinstance(domain, dict) else None
        if isinstance(estimate, dict) and estimate.get("release") is not None:
            out.append(
                note(
                    ESTIMATED_BOUNDS,
                    name=str(domain.get("name")),
                    epsilon=formatting.epsilon(estimate.get("epsilon")),
                    title=str(estimate.get("title") or ""),
                )
            )
            if estimate.get("model") == "lognormal":
                out.append(note(EXTRAPOLATED_BOUND, name=str(domain.get("name"))))
    return out


def keys_notes(entry: dict[str, Any]) -> list[Record]:
    """The rules behind the categories found in the data: who counts, the threshold, and
    that a key not shown may still be in the data."""
    explanation = entry.get("explanation") or {}
    found = entry.get("keys") or {}
    out = [
        note(
            gettext_noop(
                "Each key is a value of %(name)s found in the data; a person counts once in a "
                "key however many of their records hold it, and in at most %(k)s keys."
            ),
            name=", ".join(entry.get("columns") or []),
            k=formatting.integer(int(explanation.get("keys_per_person") or 1)),
        ),
        note(
            gettext_noop(
                "A key is shown only when its noisy count of persons reaches the public "
                "threshold %(threshold)s: keys held by fewer persons are not shown, and a "
                "key's absence says nothing certain about the data (it may be held by a few "
                "persons, or by none)."
            ),
            threshold=formatting.integer(int(explanation.get("threshold") or 0)),
        ),
    ]
    if found.get("capped"):
        out.append(
            note(
                gettext_noop(
                    "%(passed)s keys passed the threshold; %(shown)s are shown (the most "
                    "this statistic publishes)."
                ),
                passed=formatting.integer(int(found.get("passed") or 0)),
                shown=formatting.integer(len(entry.get("cells") or [])),
            )
        )
    return out


def _grouped_kind_notes(entry: dict[str, Any], spec: dict[str, Any] | None) -> list:
    """The rules behind a grouped, quantile or spread statistic (after the privacy unit's
    note), one message record each."""
    kind, spec = entry["kind"], spec or {}
    name = ", ".join(entry.get("columns") or [])
    notes = []
    if kind == "quantiles":
        grid = spec.get("grid") or {}
        if "step" in grid:
            notes.append(
                note(
                    gettext_noop(
                        "Each value was chosen among public candidates (every %(step)s from "
                        "%(lower)s to %(upper)s) by a randomised selection that favours "
                        "candidates near the quantile; the rank error says how far, in records, "
                        "the chosen value's rank may lie from the quantile's."
                    ),
                    step=formatting.exact(grid["step"], group=True),
                    lower=formatting.exact(grid["lower"], group=True),
                    upper=formatting.exact(grid["upper"], group=True),
                )
            )
        else:
            notes.append(
                note(
                    gettext_noop(
                        "Each value was chosen among public candidates (the declared bin edges) "
                        "by a randomised selection that favours candidates near the quantile; "
                        "the rank error says how far, in records, the chosen value's rank may "
                        "lie from the quantile's."
                    )
                )
            )
    elif spec.get("lower") is not None:
        what = {"grouped_sum": "sum", "grouped_mean": "mean was taken"}.get(kind, "spread")
        notes.append(_clip_note(name, spec["lower"], spec["upper"], what=what))
    if kinds.get(kind).aggregate == "spread":
        notes.append(
            note(
                gettext_noop(
                    "It is the population spread (dividing by the number of records) of the "
                    "clipped values; a noisy variance below zero is shown as zero."
                )
            )
        )
    notes.append(note(gettext_noop("Records with no value for %(name)s are left out."), name=name))
    return notes
