"""Parsing helpers shared by the plan parsers (releases.services.plan, plan_stats)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from budgets.services import _parse_decimal
from datasets.models import Column, Dataset
from dpportal import formatting
from dpportal.errors import ValidationFailed


def _text(value: object, *, field: str, max_length: int, required: bool = False) -> str:
    text = "" if value is None else str(value).strip()
    if required and not text:
        raise ValidationFailed(f"Please give the {field}.")
    if len(text) > max_length:
        raise ValidationFailed(f"The {field} may be at most {max_length} characters.")
    return text


def _optional_decimal(value: object, *, field: str) -> Decimal | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _parse_decimal(value, field=field)
    if abs(number) >= Decimal("1e20"):
        raise ValidationFailed(f"The {field} is too large.")
    return number


def _bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _column(dataset: Dataset, columns: dict[str, Column], name: object, *, what: str) -> Column:
    name = "" if name is None else str(name).strip()
    if not name:
        raise ValidationFailed(f"The {what} needs a column.")
    column = columns.get(name)
    if column is None:
        raise ValidationFailed(f"The dataset has no column named '{name}'.")
    if column.kind == Column.Kind.EXCLUDED:
        raise ValidationFailed(f"Column '{name}' is excluded: it cannot be used in a statistic.")
    if column.kind == Column.Kind.UNDECLARED:
        raise ValidationFailed(
            f"Column '{name}' has no declared public domain yet: declare it before using it."
        )
    return column


def _check_histogram_column(column: Column) -> None:
    if column.kind == Column.Kind.CATEGORICAL:
        if not column.categories:
            raise ValidationFailed(f"Column '{column.name}' declares no categories.")
        return
    if len(column.bin_edges or []) < 2:
        raise ValidationFailed(
            f"A histogram of numeric column '{column.name}' needs declared bin edges."
        )


_RANGE_OF = {
    "mean": "A mean",
    "grouped_mean": "A mean",
    "quantiles": "The candidate grid",
    "stddev": "A standard deviation",
    "variance": "A variance",
}


def _clip_bounds(plan: Any, column: Column) -> None:
    lower = plan.lower if plan.lower is not None else column.lower
    upper = plan.upper if plan.upper is not None else column.upper
    if column.kind != Column.Kind.NUMERIC:
        raise ValidationFailed(f"A {plan.kind} needs a numeric column; '{column.name}' is not.")
    if lower is None or upper is None:
        raise ValidationFailed(
            f"{_RANGE_OF.get(plan.kind, 'A sum')} of '{column.name}' needs a declared "
            "range: declare the column's lower and upper bounds (or give them here)."
        )
    if lower > upper:
        raise ValidationFailed(
            f"The lower bound ({formatting.exact(lower)}) is above the upper bound "
            f"({formatting.exact(upper)})."
        )
    if lower == upper:
        raise ValidationFailed("The lower and upper bounds must differ.")
    plan.lower, plan.upper = Decimal(lower), Decimal(upper)
