"""The review document's sentences: each statistic's parameters in words and numbers.

Pure functions of the frozen public parameters (a StatisticPlan holding the
frozen domains). How values outside a domain and missing values are handled is
stated as releases.compute.readers does it: a categorical column's other values
go to "Other", a numeric histogram clamps into its edge bins, sums and means clip
to [lower, upper] and drop missing values whatever the column's missing policy;
a histogram's missing values go to "Missing" or are dropped, per column.
Every number goes through dpportal.formatting.
"""

from __future__ import annotations

from fractions import Fraction

from django.utils.translation import gettext, ngettext

from datasets.models import Column, Dataset
from dpportal import formatting
from dpportal.bilingual import EN, ZH
from releases.kinds.bounds import extrapolated_text
from releases.services.plan import StatisticPlan


def _public(value: object) -> str:
    """A declared bound, bin edge or grid step, exact and grouped ("150,000", "0.0625").

    Declared numbers have at most 30 significant digits (NUMERIC(30, 10), or edges
    validated on declaration), so 30 significant digits are the exact value.
    """
    return formatting.significant(value, 30)


def grid_text(granularity: Fraction) -> str:
    """The public grid step: a power of two written as one ("2^-14, about 0.000061")."""
    g = Fraction(granularity)
    if g.numerator == 1 and g.denominator > 1 and g.denominator & (g.denominator - 1) == 0:
        return gettext("2^-%(power)s (about %(value)s)") % {
            "power": g.denominator.bit_length() - 1,
            "value": formatting.scale(g),
        }
    if g.denominator == 1:
        return formatting.integer(g.numerator)
    return gettext("about %(value)s") % {"value": formatting.scale(g)}


def _rows(n: int) -> str:
    return ngettext("%(n)s row", "%(n)s rows", n) % {"n": formatting.integer(n)}


def value_unit(stat: StatisticPlan) -> str:
    """The unit of the released value: rows for counts, the column's units for sums and means."""
    if stat.kind in ("sum", "mean") and stat.column is not None:
        return gettext("units of %(name)s") % {"name": stat.column.name}
    if stat.kind == "rows_per_person":
        return gettext("persons")
    return gettext("rows")


def kind_text(stat: StatisticPlan) -> str:
    if stat.kind == "count":
        return gettext("Count of rows in one category") if stat.column else gettext("Count of rows")
    if stat.kind == "histogram":
        if stat.column2 is not None:
            return gettext("Two-way histogram (a cross-table of two columns)")
        if stat.column.kind == Column.Kind.CATEGORICAL:
            return gettext("Histogram over declared categories")
        return gettext("Histogram over declared bins")
    return {
        "sum": gettext("Sum of a numeric column, clipped to a range"),
        "mean": gettext("Mean of a numeric column, clipped to a range"),
        "argmax": gettext("Most common category (Report Noisy Max)"),
        "rows_per_person": gettext("Histogram of the number of rows each person has"),
    }[stat.kind]


def estimates_text(stat: StatisticPlan, *, bound: int) -> str:
    """What true value the statistic estimates."""
    kept = (
        gettext(", after keeping at most %(rows)s per person") % {"rows": _rows(bound)}
        if bound > 1
        else ""
    )
    name = stat.column.name if stat.column else ""
    values = {"name": name, "kept": kept, "category": stat.category}
    if stat.kind == "count":
        if stat.column:
            return gettext("The number of rows whose %(name)s is “%(category)s”%(kept)s.") % values
        return gettext("The number of rows%(kept)s.") % values
    if stat.kind == "histogram":
        values["name"] = gettext(" and ").join(c.name for c in stat.columns)
        return gettext("The number of rows in each cell of %(name)s%(kept)s.") % values
    if stat.kind == "rows_per_person":
        return gettext(
            "The number of persons with 1, 2, …, 16 rows, then in ranges growing by about "
            "19%% each up to %(cap)s rows, and above it; all of each person's rows are "
            "counted, before the limit per person. One person changes one count by 1, "
            "whatever the limit: the noise does not grow with it."
        ) % {"cap": formatting.integer(int(stat.upper or 1000))}
    if stat.kind == "sum":
        return (
            gettext("The sum of %(name)s over all rows, each value clipped to the range%(kept)s.")
            % values
        )
    if stat.kind == "mean":
        return (
            gettext(
                "The mean of %(name)s: a noisy sum of the clipped values divided by a noisy "
                "count of the rows that have a value%(kept)s."
            )
            % values
        )
    return (
        gettext(
            "Which declared category of %(name)s has the most rows%(kept)s. Only its name is "
            "released, not the counts."
        )
        % values
    )


def domain_text(column: Column) -> str:
    """A column's declared public domain in words, saying what was filled in from the data."""
    return _domain(column) + _codes(column) + _derived(column) + estimated_text(column)


def estimated_text(column: Column) -> str:
    """Bounds found by a private estimate, said so (they are not the owner's knowledge)."""
    estimate = column.bounds_estimate or {}
    if not estimate:
        return ""
    return gettext(". Bounds estimated privately at ε = %(epsilon)s (release «%(title)s»)") % {
        "epsilon": formatting.epsilon(estimate.get("epsilon")),
        "title": estimate.get("title", ""),
    } + extrapolated_text(estimate)


def _codes(column: Column) -> str:
    codes = column.missing_codes or []
    if not codes:
        return ""
    return gettext("; missing-value codes (counted as missing): %(codes)s") % {
        "codes": ", ".join(codes)
    }


def _published_source(column: Column) -> str:
    """Categories declared from the keys a release published (partition selection)."""
    source = column.categories_source or {}
    if not source:
        return ""
    return gettext(
        ". Categories published by release «%(title)s» (partition selection at ε = "
        "%(epsilon)s, δ = %(delta)s): the published values, never read from the data again"
    ) % {
        "title": str(source.get("title") or ""),
        "epsilon": formatting.budget(source.get("epsilon") or 0),
        "delta": formatting.budget(source.get("delta") or 0),
    }


def _derived(column: Column) -> str:
    labels = dict(Column.Derived.choices)
    parts = [labels[p] for p in column.derived_from_data or [] if p in labels]
    if not parts:
        return _published_source(column)
    return _published_source(column) + gettext(
        ". Data-derived: %(parts)s were filled in from the data itself; the owner confirmed "
        "publishing them (a value taken from the data reveals that the data holds it: a "
        "category that few rows have reveals that someone has it)"
    ) % {"parts": gettext(" and ").join(str(p) for p in parts)}


def _labelled(column: Column, code: str) -> str:
    """A category with the labels the owner publishes for it: '1 = Male / 男'."""
    entry = (column.category_labels or {}).get(str(code)) or {}
    texts = [t for t in (entry.get(EN), entry.get(ZH)) if t]
    return f"{code} = {' / '.join(texts)}" if texts else str(code)


def _domain(column: Column) -> str:
    date = column.date or {}
    if date:
        n = len(column.categories)
        return ngettext(
            "dates from %(lower)s to %(upper)s (written %(layout)s) in %(n)s bin by %(bin)s: "
            "%(bins)s",
            "dates from %(lower)s to %(upper)s (written %(layout)s) in %(n)s bins by %(bin)s: "
            "%(bins)s",
            n,
        ) % {
            "lower": date.get("lower"),
            "upper": date.get("upper"),
            "layout": date.get("format"),
            "n": n,
            "bin": date.get("bin"),
            "bins": ", ".join(column.categories),
        }
    if column.kind == Column.Kind.CATEGORICAL:
        n = len(column.categories)
        return ngettext(
            "%(n)s declared category: %(categories)s",
            "%(n)s declared categories: %(categories)s",
            n,
        ) % {"n": n, "categories": ", ".join(_labelled(column, c) for c in column.categories)}
    parts = []
    edges = column.bin_edges
    if len(edges) >= 2:
        bins = len(edges) - 1
        parts.append(
            ngettext(
                "bin edges %(edges)s (%(n)s bin, each from its lower edge up to but not "
                "including its upper edge; the last bin includes its upper edge)",
                "bin edges %(edges)s (%(n)s bins, each from its lower edge up to but not "
                "including its upper edge; the last bin includes its upper edge)",
                bins,
            )
            % {"edges": ", ".join(_public(e) for e in edges), "n": bins}
        )
    if column.lower is not None and column.upper is not None:
        parts.append(
            gettext("declared range %(lower)s to %(upper)s")
            % {"lower": _public(column.lower), "upper": _public(column.upper)}
        )
    return "; ".join(parts) or gettext("numeric, no range or bins declared")


def clip_text(stat: StatisticPlan, *, granularity: Fraction) -> str:
    if stat.kind not in ("sum", "mean"):
        return gettext("Not applicable: counts need no clipping.")
    lo, hi = _public(stat.lower), _public(stat.upper)
    column = stat.column
    declared = ""
    if column.lower is not None and column.upper is not None:
        if (column.lower, column.upper) == (stat.lower, stat.upper):
            declared = gettext(" (the column's declared range)")
        else:
            declared = gettext(
                " (narrower than the column's declared range %(lower)s to %(upper)s)"
            ) % {"lower": _public(column.lower), "upper": _public(column.upper)}
    return gettext(
        "%(lower)s to %(upper)s%(declared)s; values are rounded to a public grid of %(grid)s "
        "before summing."
    ) % {"lower": lo, "upper": hi, "declared": declared, "grid": grid_text(granularity)}


def out_of_range_text(stat: StatisticPlan) -> str:
    """How values outside the declared domain are handled, as the compute readers do."""
    if stat.kind == "count" and not stat.column:
        return gettext("Not applicable: every row is counted.")
    if stat.kind == "rows_per_person":
        return gettext(
            "Persons with more than %(cap)s rows are counted together in the last cell."
        ) % {"cap": formatting.integer(int(stat.upper or 1000))}
    name = stat.column.name
    if stat.kind == "count":
        return gettext("Only rows whose %(name)s is exactly “%(category)s” are counted.") % {
            "name": name,
            "category": stat.category,
        }
    if stat.kind == "argmax":
        n = len(stat.column.categories)
        return gettext(
            "Only the %(n)s declared categories of %(name)s compete; rows with any other value "
            "are not counted."
        ) % {"n": n, "name": name}
    if stat.kind in ("sum", "mean"):
        lo, hi = _public(stat.lower), _public(stat.upper)
        return gettext(
            "Values of %(name)s below %(lower)s count as %(lower)s and values above %(upper)s "
            "count as %(upper)s (clipped), then each is rounded to the public grid."
        ) % {"name": name, "lower": lo, "upper": hi}
    sentences = []
    for column in stat.columns:
        if column.kind == Column.Kind.CATEGORICAL:
            sentences.append(
                gettext(
                    "Values of %(name)s that are not a declared category are counted in "
                    "the “Other” cell."
                )
                % {"name": column.name}
            )
        else:
            first, last = (
                _public(column.bin_edges[0]),
                _public(column.bin_edges[-1]),
            )
            sentences.append(
                gettext(
                    "Values of %(name)s below %(first)s are counted in the first bin and values "
                    "above %(last)s in the last bin (clamped into the edge bins)."
                )
                % {"name": column.name, "first": first, "last": last}
            )
    return " ".join(sentences)


def missing_text(stat: StatisticPlan) -> str:
    """How missing values are handled, as the compute readers do."""
    if stat.kind == "count" and not stat.column:
        return gettext("Not applicable: a row is counted whatever its values.")
    if stat.kind == "rows_per_person":
        return gettext("Rows without a person (a missing ID) belong to no one and are not counted.")
    name = {"name": stat.column.name}
    if stat.kind in ("count", "argmax"):
        return gettext("Rows where %(name)s is missing are not counted.") % name
    if stat.kind == "sum":
        return gettext("Rows where %(name)s is missing are left out of the sum.") % name
    if stat.kind == "mean":
        return (
            gettext("Rows where %(name)s is missing are left out of both the sum and the count.")
            % name
        )
    sentences = []
    for column in stat.columns:
        if column.missing == Column.Missing.CATEGORY:
            sentences.append(
                gettext("Rows where %(name)s is missing are counted in the “Missing” cell.")
                % {"name": column.name}
            )
        else:
            sentences.append(
                gettext("Rows where %(name)s is missing are dropped.") % {"name": column.name}
            )
    if stat.column2 is not None:
        sentences.append(gettext("A row dropped for either column is left out of the table."))
    return " ".join(sentences)


def mechanism_text(kind: str, mechanism: str) -> str:
    if kind == "argmax":
        return gettext(
            "Report Noisy Max with discrete Laplace noise (pure epsilon-differential privacy)"
        )
    if mechanism == "gaussian":
        return gettext(
            "Gaussian mechanism: discrete Gaussian noise, sigma from the analytic Gaussian "
            "mechanism ((epsilon, delta)-differential privacy)"
        )
    return gettext("Laplace mechanism: discrete Laplace noise (pure epsilon-differential privacy)")


def sensitivity_text(*, l1: Fraction, l2: Fraction, unit: str, gaussian: bool, bound: int) -> str:
    """The sensitivity in the data's units, and what it means."""
    amount = f"{formatting.scale(l1)} {unit}"
    if gaussian:  # the Gaussian is calibrated to the l2 sensitivity
        amount += (
            gettext(" (l1 and l2)")
            if l1 == l2
            else gettext(" (l1), %(l2)s %(unit)s (l2)") % {"l2": formatting.scale(l2), "unit": unit}
        )
    return gettext(
        "%(amount)s: the most that adding or removing one privacy unit (at most %(rows)s) can "
        "change it"
    ) % {"amount": amount, "rows": _rows(bound)}


def halfwidth_text(
    *,
    stat: StatisticPlan,
    unit: str,
    cells: int,
    per_cell: float | None,
    simultaneous: float | None,
) -> tuple[str, str]:
    """(per value or cell, all at once) half-widths in words."""
    if per_cell is None or simultaneous is None:
        missing = gettext(
            "Not available: the request recorded no planning guess of the number of rows."
        )
        return missing, missing
    per = f"±{formatting.halfwidth(per_cell)} {unit}"
    together = f"±{formatting.halfwidth(simultaneous)} {unit}"
    values = {"per": per, "together": together, "cells": formatting.integer(cells)}
    one_value = gettext("%(together)s (one value: the same interval)") % values
    if stat.kind == "argmax":
        return (
            gettext(
                "No interval (only the winning category is released); each noisy count is "
                "within %(per)s of its true count"
            )
            % values,
            gettext("%(together)s for all %(cells)s counts at once") % values,
        )
    if stat.kind == "histogram":
        return (
            gettext("%(per)s for each cell") % values,
            gettext("%(together)s for all %(cells)s cells at once") % values,
        )
    if stat.kind == "mean":
        guess = gettext(
            "%(per)s if about %(n)s rows have a value (the owner's planning guess, not the data)"
        ) % {"per": per, "n": formatting.integer(stat.n_guess)}
        return guess, one_value
    return per, one_value


def privacy_unit_text(dataset: Dataset) -> str:
    bound = dataset.contribution_bound
    if not dataset.id_column:
        return gettext("One row of the dataset (L = 1): each row is protected.")
    return gettext(
        "One person, identified by the column “%(column)s”: at most %(rows)s per person are "
        "kept (chosen at random) and the rest dropped, so every sensitivity is multiplied by "
        "L = %(bound)s."
    ) % {"column": dataset.id_column, "rows": _rows(bound), "bound": formatting.integer(bound)}
