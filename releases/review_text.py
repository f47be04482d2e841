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

from datasets.models import Column, Dataset
from dpportal import formatting
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
        return f"2^-{g.denominator.bit_length() - 1} (about {formatting.scale(g)})"
    if g.denominator == 1:
        return formatting.integer(g.numerator)
    return f"about {formatting.scale(g)}"


def _rows(n: int) -> str:
    return f"{formatting.integer(n)} row{'' if n == 1 else 's'}"


def value_unit(stat: StatisticPlan) -> str:
    """The unit of the released value: rows for counts, the column's units for sums and means."""
    if stat.kind in ("sum", "mean") and stat.column is not None:
        return f"units of {stat.column.name}"
    return "rows"


def kind_text(stat: StatisticPlan) -> str:
    if stat.kind == "count":
        return "Count of rows in one category" if stat.column else "Count of rows"
    if stat.kind == "histogram":
        if stat.column2 is not None:
            return "Two-way histogram (a cross-table of two columns)"
        if stat.column.kind == Column.Kind.CATEGORICAL:
            return "Histogram over declared categories"
        return "Histogram over declared bins"
    return {
        "sum": "Sum of a numeric column, clipped to a range",
        "mean": "Mean of a numeric column, clipped to a range",
        "argmax": "Most common category (Report Noisy Max)",
    }[stat.kind]


def estimates_text(stat: StatisticPlan, *, bound: int) -> str:
    """What true value the statistic estimates."""
    kept = f", after keeping at most {_rows(bound)} per person" if bound > 1 else ""
    name = stat.column.name if stat.column else ""
    if stat.kind == "count":
        if stat.column:
            return f"The number of rows whose {name} is “{stat.category}”{kept}."
        return f"The number of rows{kept}."
    if stat.kind == "histogram":
        names = " and ".join(c.name for c in stat.columns)
        return f"The number of rows in each cell of {names}{kept}."
    if stat.kind == "sum":
        return f"The sum of {name} over all rows, each value clipped to the range{kept}."
    if stat.kind == "mean":
        return (
            f"The mean of {name}: a noisy sum of the clipped values divided by a noisy count "
            f"of the rows that have a value{kept}."
        )
    return (
        f"Which declared category of {name} has the most rows{kept}. Only its name is "
        "released, not the counts."
    )


def domain_text(column: Column) -> str:
    """A column's declared public domain in words, saying what was filled in from the data."""
    return _domain(column) + _codes(column) + _derived(column)


def _codes(column: Column) -> str:
    codes = column.missing_codes or []
    if not codes:
        return ""
    return "; missing-value codes (counted as missing): " + ", ".join(codes)


def _derived(column: Column) -> str:
    labels = dict(Column.Derived.choices)
    parts = [labels[p] for p in column.derived_from_data or [] if p in labels]
    if not parts:
        return ""
    return (
        f". Data-derived: {' and '.join(parts)} were filled in from the data itself; the "
        "owner confirmed publishing them (a value taken from the data reveals that the data "
        "holds it: a category that few rows have reveals that someone has it)"
    )


def _domain(column: Column) -> str:
    date = column.date or {}
    if date:
        n = len(column.categories)
        return (
            f"dates from {date.get('lower')} to {date.get('upper')} (written "
            f"{date.get('format')}) in {n} bin{'' if n == 1 else 's'} by {date.get('bin')}: "
            + ", ".join(column.categories)
        )
    if column.kind == Column.Kind.CATEGORICAL:
        n = len(column.categories)
        return f"{n} declared categor{'y' if n == 1 else 'ies'}: " + ", ".join(column.categories)
    parts = []
    edges = column.bin_edges
    if len(edges) >= 2:
        bins = len(edges) - 1
        parts.append(
            "bin edges " + ", ".join(_public(e) for e in edges) + f" ({bins} bin"
            f"{'' if bins == 1 else 's'}, each from its lower edge up to but not including its "
            "upper edge; the last bin includes its upper edge)"
        )
    if column.lower is not None and column.upper is not None:
        parts.append(f"declared range {_public(column.lower)} to {_public(column.upper)}")
    return "; ".join(parts) or "numeric, no range or bins declared"


def clip_text(stat: StatisticPlan, *, granularity: Fraction) -> str:
    if stat.kind not in ("sum", "mean"):
        return "Not applicable: counts need no clipping."
    lo, hi = _public(stat.lower), _public(stat.upper)
    column = stat.column
    declared = ""
    if column.lower is not None and column.upper is not None:
        if (column.lower, column.upper) == (stat.lower, stat.upper):
            declared = " (the column's declared range)"
        else:
            declared = (
                f" (narrower than the column's declared range "
                f"{_public(column.lower)} to {_public(column.upper)})"
            )
    return (
        f"{lo} to {hi}{declared}; values are rounded to a public grid of "
        f"{grid_text(granularity)} before summing."
    )


def out_of_range_text(stat: StatisticPlan) -> str:
    """How values outside the declared domain are handled, as the compute readers do."""
    if stat.kind == "count" and not stat.column:
        return "Not applicable: every row is counted."
    name = stat.column.name
    if stat.kind == "count":
        return f"Only rows whose {name} is exactly “{stat.category}” are counted."
    if stat.kind == "argmax":
        n = len(stat.column.categories)
        return (
            f"Only the {n} declared categories of {name} compete; rows with any other value "
            "are not counted."
        )
    if stat.kind in ("sum", "mean"):
        lo, hi = _public(stat.lower), _public(stat.upper)
        return (
            f"Values of {name} below {lo} count as {lo} and values above {hi} count as {hi} "
            "(clipped), then each is rounded to the public grid."
        )
    sentences = []
    for column in stat.columns:
        if column.kind == Column.Kind.CATEGORICAL:
            sentences.append(
                f"Values of {column.name} that are not a declared category are counted in "
                "the “Other” cell."
            )
        else:
            first, last = (
                _public(column.bin_edges[0]),
                _public(column.bin_edges[-1]),
            )
            sentences.append(
                f"Values of {column.name} below {first} are counted in the first bin and values "
                f"above {last} in the last bin (clamped into the edge bins)."
            )
    return " ".join(sentences)


def missing_text(stat: StatisticPlan) -> str:
    """How missing values are handled, as the compute readers do."""
    if stat.kind == "count" and not stat.column:
        return "Not applicable: a row is counted whatever its values."
    name = stat.column.name
    if stat.kind in ("count", "argmax"):
        return f"Rows where {name} is missing are not counted."
    if stat.kind == "sum":
        return f"Rows where {name} is missing are left out of the sum."
    if stat.kind == "mean":
        return f"Rows where {name} is missing are left out of both the sum and the count."
    sentences = []
    for column in stat.columns:
        if column.missing == Column.Missing.CATEGORY:
            sentences.append(
                f"Rows where {column.name} is missing are counted in the “Missing” cell."
            )
        else:
            sentences.append(f"Rows where {column.name} is missing are dropped.")
    if stat.column2 is not None:
        sentences.append("A row dropped for either column is left out of the table.")
    return " ".join(sentences)


def mechanism_text(kind: str, mechanism: str) -> str:
    if kind == "argmax":
        return "Report Noisy Max with discrete Laplace noise (pure epsilon-differential privacy)"
    if mechanism == "gaussian":
        return (
            "Gaussian mechanism: discrete Gaussian noise, sigma from the analytic Gaussian "
            "mechanism ((epsilon, delta)-differential privacy)"
        )
    return "Laplace mechanism: discrete Laplace noise (pure epsilon-differential privacy)"


def sensitivity_text(*, l1: Fraction, l2: Fraction, unit: str, gaussian: bool, bound: int) -> str:
    """The sensitivity in the data's units, and what it means."""
    amount = f"{formatting.scale(l1)} {unit}"
    if gaussian:  # the Gaussian is calibrated to the l2 sensitivity
        amount += " (l1 and l2)" if l1 == l2 else f" (l1), {formatting.scale(l2)} {unit} (l2)"
    return (
        f"{amount}: the most that adding or removing one privacy unit "
        f"(at most {_rows(bound)}) can change it"
    )


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
        missing = "Not available: the request recorded no planning guess of the number of rows."
        return missing, missing
    per = f"±{formatting.halfwidth(per_cell)} {unit}"
    together = f"±{formatting.halfwidth(simultaneous)} {unit}"
    if stat.kind == "argmax":
        return (
            f"No interval (only the winning category is released); each noisy count is "
            f"within {per} of its true count",
            f"{together} for all {formatting.integer(cells)} counts at once",
        )
    if stat.kind == "histogram":
        return (
            f"{per} for each cell",
            f"{together} for all {formatting.integer(cells)} cells at once",
        )
    if stat.kind == "mean":
        guess = (
            f" if about {formatting.integer(stat.n_guess)} rows have a value (the owner's "
            "planning guess, not the data)"
        )
        return per + guess, together + " (one value: the same interval)"
    return per, together + " (one value: the same interval)"


def privacy_unit_text(dataset: Dataset) -> str:
    bound = dataset.contribution_bound
    if not dataset.id_column:
        return "One row of the dataset (L = 1): each row is protected."
    return (
        f"One person, identified by the column “{dataset.id_column}”: at most {_rows(bound)} "
        f"per person are kept (chosen at random) and the rest dropped, so every sensitivity "
        f"is multiplied by L = {formatting.integer(bound)}."
    )
