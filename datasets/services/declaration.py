"""The declaration of a dataset's PUBLIC domains and of its privacy unit."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from datasets.models import Column, Dataset
from datasets.selectors import dataset_is_frozen
from datasets.services.common import require_owner
from dpportal.errors import InvalidTransition, ValidationFailed

logger = logging.getLogger(__name__)

MAX_CATEGORIES = 1000
MAX_CATEGORY_LENGTH = 200
MAX_CONTRIBUTION_BOUND = 10_000


def _number(value: object, *, label: str, errors: list[str]) -> Decimal | None:
    text = str(value if value is not None else "").strip()
    if not text:
        errors.append(f"{label} is required.")
        return None
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        errors.append(f"{label} must be a number.")
        return None
    if not number.is_finite():
        errors.append(f"{label} must be a finite number.")
        return None
    if abs(number) >= Decimal("1e20") or number.as_tuple().exponent < -10:  # type: ignore[operator]
        errors.append(f"{label} must be below 10^20 with at most 10 decimal places.")
        return None
    return number


def _lines(value: object, *, separator: str) -> list[str]:
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        items = str(value or "").replace("\r", "").split(separator)
    return [item.strip() for item in items if item.strip()]


def _declare_column(column: Column, spec: Mapping[str, object]) -> list[str]:
    """Validate `spec` and set the column's public domain; returns the problems found."""
    errors: list[str] = []
    kind = str(spec.get("kind") or "").strip()
    missing = str(spec.get("missing") or Column.Missing.DROP).strip()
    if kind not in (Column.Kind.CATEGORICAL, Column.Kind.NUMERIC, Column.Kind.EXCLUDED):
        return ["choose categorical, numeric or excluded."]
    if missing not in Column.Missing.values:
        errors.append("choose what happens to missing values.")
    column.kind, column.missing = kind, missing
    column.categories, column.lower, column.upper, column.bin_edges = [], None, None, []
    if kind == Column.Kind.CATEGORICAL:
        if column.suggested_type == Column.Type.FLOAT:
            errors.append(
                "this column holds decimal numbers: declare it numeric (with bin edges) instead."
            )
        categories = _lines(spec.get("categories"), separator="\n")
        if not categories:
            errors.append("list at least one category, one per line.")
        if len(categories) > MAX_CATEGORIES:
            errors.append(f"at most {MAX_CATEGORIES} categories are allowed.")
        if column.suggested_type == Column.Type.INTEGER:
            normalized = []
            for category in categories:
                try:
                    normalized.append(str(int(category)))
                except ValueError:
                    errors.append(f"category '{category}' is not a whole number.")
            categories = normalized
        long = [c for c in categories if len(c) > MAX_CATEGORY_LENGTH]
        if long:
            errors.append(f"categories must be at most {MAX_CATEGORY_LENGTH} characters.")
        duplicates = sorted({c for c in categories if categories.count(c) > 1})
        if duplicates:
            errors.append("categories are listed twice: " + ", ".join(duplicates) + ".")
        column.categories = categories
    elif kind == Column.Kind.NUMERIC:
        if column.suggested_type == Column.Type.STRING:
            errors.append("this column holds text: declare it categorical or excluded.")
        lower = _number(spec.get("lower"), label="the lower bound", errors=errors)
        upper = _number(spec.get("upper"), label="the upper bound", errors=errors)
        if lower is not None and upper is not None and lower >= upper:
            errors.append("the lower bound must be below the upper bound.")
        column.lower, column.upper = lower, upper
        edges_text = _lines(spec.get("bin_edges"), separator=",")
        edges = [_number(e, label=f"bin edge '{e}'", errors=errors) for e in edges_text]
        if edges and None not in edges:
            if len(edges) < 2:
                errors.append("give at least two bin edges, or none.")
            if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
                errors.append("bin edges must be strictly increasing.")
            if lower is not None and upper is not None and (edges[0] < lower or edges[-1] > upper):
                errors.append("bin edges must lie within [lower, upper].")
            column.bin_edges = [str(e) for e in edges]
    return errors


@transaction.atomic
def dataset_declare(
    *,
    dataset: Dataset,
    actor: AbstractBaseUser,
    columns: Mapping[str, Mapping[str, object]],
    id_column: str = "",
    contribution_bound: object = 1,
) -> Dataset:
    """Declare every column's PUBLIC domain and the privacy unit, all or nothing.

    `columns` maps each column's name to {"kind": categorical|numeric|excluded,
    "categories": list or one per line, "lower", "upper", "bin_edges": list or comma
    separated, "missing": drop|category}. The privacy unit is one row (no
    `id_column`) or one person identified by `id_column` (declared excluded) with at
    most `contribution_bound` rows kept. Raises ValidationFailed with
    extra={"errors": {column name or "__all__": [messages]}}; nothing is saved then.
    """
    require_owner(project=dataset.project, user=actor)
    # Lock the dataset so two owners' declarations cannot interleave.
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    if dataset.status != Dataset.Status.READY:
        raise InvalidTransition("Only a ready dataset can be declared.")
    if dataset_is_frozen(dataset=dataset):
        raise InvalidTransition(
            "A release using this dataset has been submitted: its declaration is frozen."
        )
    errors: dict[str, list[str]] = {}
    all_columns = list(dataset.columns.order_by("position"))
    for column in all_columns:
        problems = _declare_column(column, columns.get(column.name) or {})
        if problems:
            errors[column.name] = problems
    general: list[str] = []
    id_column = (id_column or "").strip()
    by_name = {c.name: c for c in all_columns}
    if id_column:
        if id_column not in by_name:
            general.append("the ID column must be one of the dataset's columns.")
        elif by_name[id_column].kind != Column.Kind.EXCLUDED:
            general.append(
                f"declare the ID column '{id_column}' excluded: its values are never published."
            )
        try:
            bound = int(str(contribution_bound).strip())
        except ValueError:
            bound = 0
        if not 1 <= bound <= MAX_CONTRIBUTION_BOUND:
            general.append(
                f"rows kept per person must be a whole number from 1 to {MAX_CONTRIBUTION_BOUND}."
            )
    else:
        bound = 1
    if general:
        errors["__all__"] = general
    if errors:
        count = sum(len(v) for v in errors.values())
        raise ValidationFailed(
            f"The declaration has {count} problem{'s' if count != 1 else ''}; nothing was saved.",
            extra={"errors": errors},
        )
    Column.objects.bulk_update(
        all_columns, ["kind", "categories", "lower", "upper", "bin_edges", "missing"]
    )
    dataset.id_column = id_column
    dataset.contribution_bound = bound
    dataset.declared = True
    dataset.save(update_fields=["id_column", "contribution_bound", "declared"])
    logger.info("dataset %s declared by user %s", dataset.pk, actor.pk)
    return dataset
