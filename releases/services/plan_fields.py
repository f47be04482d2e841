"""Parsing helpers shared by the plan parsers (releases.services.plan, plan_stats)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from budgets.services import _parse_decimal
from datasets.models import Column, Dataset
from dpportal import formatting
from dpportal.bidi import bidi_controls_in
from dpportal.bilingual import EN, SUFFIX, ZH
from dpportal.errors import ValidationFailed

#: what a statistic's column is for, by statistic kind ("grouping": a grouping column), in
#: the messages below; lazy, so each message is worded in the language active when raised
COLUMN_USES = {
    "count": pgettext_lazy("statistic", "count"),
    "histogram": pgettext_lazy("statistic", "histogram"),
    "sum": pgettext_lazy("statistic", "sum"),
    "mean": pgettext_lazy("statistic", "mean"),
    "argmax": pgettext_lazy("statistic", "most common category"),
    "grouped_sum": pgettext_lazy("statistic", "grouped sum"),
    "grouped_mean": pgettext_lazy("statistic", "grouped mean"),
    "quantiles": pgettext_lazy("statistic", "quantile"),
    "stddev": pgettext_lazy("statistic", "standard deviation"),
    "variance": pgettext_lazy("statistic", "variance"),
    "crosstab": pgettext_lazy("statistic", "cross-tabulation"),
    "bounds": pgettext_lazy("statistic", "private bounds"),
    "keys": pgettext_lazy("statistic", "categories found in the data"),
    "rows_per_person": pgettext_lazy("statistic", "rows per person"),
    "grouping": pgettext_lazy("statistic", "grouping"),
}


def _text(value: object, *, field: str, max_length: int, required: bool = False) -> str:
    text = "" if value is None else str(value).strip()
    if required and not text:
        raise ValidationFailed(gettext("Please give the %(field)s.") % {"field": field})
    if len(text) > max_length:
        raise ValidationFailed(
            gettext("The %(field)s may be at most %(max_length)s characters.")
            % {"field": field, "max_length": max_length}
        )
    controls = bidi_controls_in(text)
    if controls:
        raise ValidationFailed(
            gettext(
                "The %(field)s holds the invisible direction control %(controls)s, which "
                "changes how the text around it is displayed: remove it."
            )
            % {"field": field, "controls": ", ".join(controls)}
        )
    return text


def _texts(raw: dict, key: str, *, field: str, max_length: int) -> tuple[str, str]:
    """(plain, Chinese) text of `key`: given as {"en": ..., "zh-hans": ...}, or as a string
    with its Chinese twin under `key`_zh (dpportal.bilingual); each checked as _text."""
    value = raw.get(key)
    if isinstance(value, dict):
        plain, chinese = value.get(EN), value.get(ZH)
    else:
        plain, chinese = value, raw.get(key + SUFFIX)
    return (
        _text(plain, field=field, max_length=max_length),
        _text(chinese, field=field, max_length=max_length),
    )


def _optional_decimal(value: object, *, field: str) -> Decimal | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _parse_decimal(value, field=field)
    if abs(number) >= Decimal("1e20"):
        raise ValidationFailed(gettext("The %(field)s is too large.") % {"field": field})
    return number


def _bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _column(dataset: Dataset, columns: dict[str, Column], name: object, *, what: str) -> Column:
    """The declared column named `name`; `what` is a key of COLUMN_USES."""
    name = "" if name is None else str(name).strip()
    if not name:
        raise ValidationFailed(
            gettext("The %(what)s needs a column.") % {"what": COLUMN_USES[what]}
        )
    column = columns.get(name)
    if column is None:
        raise ValidationFailed(
            gettext("The dataset has no column named '%(name)s'.") % {"name": name}
        )
    if column.kind == Column.Kind.EXCLUDED:
        raise ValidationFailed(
            gettext("Column '%(name)s' is excluded: it cannot be used in a statistic.")
            % {"name": name}
        )
    if column.kind == Column.Kind.UNDECLARED:
        raise ValidationFailed(
            gettext(
                "Column '%(name)s' has no declared public domain yet: declare it before using it."
            )
            % {"name": name}
        )
    return column


def _check_histogram_column(column: Column, *, grouping: bool = False) -> None:
    """A histogram's (or, `grouping`, a grouping) column: declared categories or bin edges."""
    if column.kind == Column.Kind.CATEGORICAL:
        if not column.categories:
            raise ValidationFailed(
                gettext("Column '%(name)s' declares no categories.") % {"name": column.name}
            )
        return
    if len(column.bin_edges or []) < 2:
        message = (
            gettext("Grouping by numeric column '%(name)s' needs declared bin edges.")
            if grouping
            else gettext("A histogram of numeric column '%(name)s' needs declared bin edges.")
        )
        raise ValidationFailed(message % {"name": column.name})


_RANGE_OF = {
    "mean": gettext_noop(
        "A mean of '%(name)s' needs a declared range: declare the column's lower and upper "
        "bounds (or give them here)."
    ),
    "grouped_mean": gettext_noop(
        "A mean of '%(name)s' needs a declared range: declare the column's lower and upper "
        "bounds (or give them here)."
    ),
    "quantiles": gettext_noop(
        "The candidate grid of '%(name)s' needs a declared range: declare the column's lower "
        "and upper bounds (or give them here)."
    ),
    "stddev": gettext_noop(
        "A standard deviation of '%(name)s' needs a declared range: declare the column's "
        "lower and upper bounds (or give them here)."
    ),
    "variance": gettext_noop(
        "A variance of '%(name)s' needs a declared range: declare the column's lower and "
        "upper bounds (or give them here)."
    ),
}
_RANGE_OF_SUM = gettext_noop(
    "A sum of '%(name)s' needs a declared range: declare the column's lower and upper bounds "
    "(or give them here)."
)


def _clip_bounds(plan: Any, column: Column) -> None:
    lower = plan.lower if plan.lower is not None else column.lower
    upper = plan.upper if plan.upper is not None else column.upper
    if column.kind != Column.Kind.NUMERIC:
        raise ValidationFailed(
            gettext("A %(what)s needs a numeric column; '%(name)s' is not.")
            % {"what": COLUMN_USES.get(plan.kind, plan.kind), "name": column.name}
        )
    if lower is None or upper is None:
        raise ValidationFailed(
            gettext(_RANGE_OF.get(plan.kind, _RANGE_OF_SUM)) % {"name": column.name}
        )
    if lower > upper:
        raise ValidationFailed(
            gettext("The lower bound (%(lower)s) is above the upper bound (%(upper)s).")
            % {"lower": formatting.exact(lower), "upper": formatting.exact(upper)}
        )
    if lower == upper:
        raise ValidationFailed(gettext("The lower and upper bounds must differ."))
    plan.lower, plan.upper = Decimal(lower), Decimal(upper)
