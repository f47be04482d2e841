"""What each public statistic estimates, in plain language (issue 11, point 5).

A noisy value estimates a number computed from the data AFTER the release's
rules were applied: at most L records per person kept, numeric values clamped
into the first and last bins, sums and means clipped to public bounds, values
outside the declared categories counted as "Other", missing values counted as
"Missing" or left out. Readers must be told, or an interval that misses the raw
total looks like a broken promise. Everything here comes from the release's
frozen specification (the owner's public declarations), never from the data.
"""

from __future__ import annotations

from typing import Any

from dpportal import formatting
from releases import stats_results

# The names compute gives these cells (releases.compute.readers.OTHER / MISSING).
OTHER = "Other"
MISSING = "Missing"

# Shown beside counts unless the reader chose the rounded, clamped display.
NEGATIVE_COUNTS = (
    "Noise can make a count negative, or not a possible count: counts are shown as drawn "
    "unless you choose “show counts rounded and clamped at zero” above."
)


def _plural(n: int, one: str, many: str) -> str:
    return f"{formatting.integer(n)} {one if n == 1 else many}"


def unit_note(*, id_column: str | None, bound: int) -> str:
    """The person-level limit, or that every row counts as its own unit."""
    if id_column:
        return (
            f"At most {_plural(bound, 'record', 'records')} per person (people are identified "
            f"by the column “{id_column}”) were kept: of a person with more, "
            f"{formatting.integer(bound)} were chosen at random and the rest left out, so totals "
            "can fall short of the raw data."
        )
    return "Every row counts on its own: no rows were left out for having the same person."


def _missing_note(domain: dict[str, Any], *, counted: bool) -> str:
    name = domain["name"]
    if counted and domain.get("missing") == "category":
        return f"“{MISSING}” counts the records with no value for {name}."
    return f"Records with no value for {name} are left out."


def axis_notes(domain: dict[str, Any]) -> list[str]:
    """How one column's values were put into cells: Other, Missing, edge bins."""
    name = domain["name"]
    notes = []
    if domain.get("kind") == "categorical":
        n = len(domain.get("categories") or [])
        notes.append(
            f"“{OTHER}” counts the records whose {name} is none of the "
            f"{_plural(n, 'declared category', 'declared categories')}."
        )
    else:
        edges = domain.get("bin_edges") or []
        if len(edges) >= 2:
            first, last = formatting.exact(edges[0]), formatting.exact(edges[-1])
            notes.append(
                f"Values of {name} below {first} are counted in the first bin and values above "
                f"{last} in the last bin. A bin holds values from its lower edge up to, but not "
                "including, its upper edge; the last bin includes its upper edge."
            )
    notes.append(_missing_note(domain, counted=True))
    return notes


def _clip_note(name: str, lower: Any, upper: Any, *, what: str) -> str:
    lo, hi = formatting.exact(lower), formatting.exact(upper)
    return (
        f"Before the {what}, each value of {name} was clipped to the public range from {lo} to "
        f"{hi}: values below {lo} count as {lo}, values above {hi} as {hi}."
    )


def statistic_notes(*, entry: dict[str, Any], spec: dict[str, Any] | None, unit: str) -> list[str]:
    """The rules behind one published statistic, one sentence each.

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
            notes.append(f"It counts the records whose {domains[0]['name']} is “{category}”.")
            if category in (OTHER, MISSING):
                notes.extend(axis_notes(domains[0]))
        else:
            notes.append("It counts every record kept.")
    elif kind == "histogram":
        for domain in domains:
            notes.extend(axis_notes(domain))
    elif kind in ("sum", "mean"):
        name = domains[0]["name"] if domains else ", ".join(entry.get("columns") or [])
        if spec and spec.get("lower") is not None:
            what = "sum" if kind == "sum" else "mean was taken"
            notes.append(_clip_note(name, spec["lower"], spec["upper"], what=what))
        if kind == "sum" and spec and spec.get("granularity"):
            notes.append(
                "Each clipped value was then rounded to the public grid the noise is drawn on "
                f"(steps of {formatting.scale(spec['granularity'])}, rounded here)."
            )
        notes.append(f"Records with no value for {name} are left out.")
    elif kind in stats_results.NEW_KINDS:
        notes.extend(stats_results.statistic_notes(entry, spec, _clip_note))
        for domain in (spec or {}).get("groups") or []:
            notes.extend(axis_notes(domain))
    elif kind == "argmax":
        n = len(entry.get("cells") or [])
        notes.append(
            f"Only the {_plural(n, 'declared category', 'declared categories')} compete; "
            "values outside them and missing values are never chosen."
        )
    return notes
