"""The declaration of a dataset's PUBLIC domains and of its privacy unit.

Two rules beyond validation:

- The privacy unit is a declaration, never a default: a release may use the
  dataset only once an owner has confirmed it (`unit` given to dataset_declare, or
  dataset_confirm_unit). Any change of the unit withdraws the confirmation.
- Values copied from the private profile are data-derived: each such part of a
  column ("categories", "bounds") is recorded in Column.derived_from_data and needs
  the owner's per-column confirmation that publishing it is intended. A part is
  data-derived when the client marks it (the page marks what "Fill in from
  profile" filled; API clients say so) or when it was derived before and is
  unchanged (then its earlier confirmation stands). Values that merely equal a
  suggestion are not marked: a public code list often matches the data's values.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext

from budgets.public_version import project_public_changed
from datasets.models import Column, Dataset
from datasets.selectors import dataset_is_frozen
from datasets.services.codebook import parse_codebook
from datasets.services.common import require_owner
from datasets.services.declaration_columns import DECLARED_FIELDS
from datasets.services.declaration_columns import declare_column as _declare_column
from datasets.services.person_rows import dataset_person_rows_after_unit
from dpportal.errors import InvalidTransition, ValidationFailed

logger = logging.getLogger(__name__)

MAX_CONTRIBUTION_BOUND = 10_000
UNITS = ("row", "person")
DERIVED_PARTS = tuple(Column.Derived.values)
DERIVED_CONFIRMATION = gettext_lazy(
    "publishing a value reveals that the data holds it: a category that few rows have "
    "reveals that someone has it"
)


def _part_values(column: Column, part: str) -> object:
    if part == Column.Derived.CATEGORIES:
        return sorted(str(c) for c in column.categories)
    return [column.lower, column.upper]


def _derived_parts(
    column: Column, spec: Mapping[str, object], before: dict[str, object], errors: list[str]
) -> None:
    """Set column.derived_from_data; add an error when a new derived part is unconfirmed."""
    marked = spec.get("derived_from_data") or []
    if isinstance(marked, str):
        marked = [p for p in marked.replace(",", " ").split() if p]
    unknown = sorted(str(p) for p in marked if p not in DERIVED_PARTS)
    if unknown:
        errors.append(
            gettext("derived_from_data may list only: %(parts)s.")
            % {"parts": ", ".join(DERIVED_PARTS)}
        )
    declared = {
        Column.Kind.CATEGORICAL: [Column.Derived.CATEGORIES],
        Column.Kind.NUMERIC: [Column.Derived.BOUNDS],
    }.get(column.kind, [])
    if column.date:
        declared = []  # a date column's bins come from its public range, never from the data
    parts, confirmed_before = [], []
    for part in declared:
        values = _part_values(column, part)
        kept = part in before and before[part] == values
        if part in marked or kept:
            parts.append(part)
            if kept:
                confirmed_before.append(part)
    column.derived_from_data = parts
    unconfirmed = [p for p in parts if p not in confirmed_before]
    if unconfirmed and not _bool(spec.get("confirm_derived")):
        what = ", ".join(str(Column.Derived(p).label) for p in unconfirmed)
        message = gettext(
            "%(what)s were filled in with the data's private profile: confirm that you mean to "
            "publish them (%(why)s), or give publicly known values instead."
        ) % {"what": what, "why": DERIVED_CONFIRMATION}
        errors.append(message)


def _bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _unit(
    *, unit: str | None, id_column: str, contribution_bound: object, by_name: dict
) -> tuple[str, int, list[str]]:
    """The privacy unit as (id_column, bound) and the problems found."""
    general: list[str] = []
    if unit is not None and unit not in UNITS:
        general.append(
            gettext("choose the privacy unit: one row, or one person identified by a column.")
        )
    if unit == "row" and id_column:
        general.append(gettext("one row is the privacy unit, so no ID column may be named."))
    if unit == "person" and not id_column:
        general.append(gettext("name the ID column that identifies a person."))
    if not id_column:
        return "", 1, general
    if id_column not in by_name:
        general.append(gettext("the ID column must be one of the dataset's columns."))
    elif by_name[id_column].kind != Column.Kind.EXCLUDED:
        general.append(
            gettext("declare the ID column '%(name)s' excluded: its values are never published.")
            % {"name": id_column}
        )
    try:
        bound = int(str(contribution_bound).strip())
    except ValueError:
        bound = 0
    if not 1 <= bound <= MAX_CONTRIBUTION_BOUND:
        general.append(
            gettext("rows kept per person must be a whole number from 1 to %(limit)s.")
            % {"limit": MAX_CONTRIBUTION_BOUND}
        )
    return id_column, bound, general


def _set_unit(*, dataset: Dataset, id_column: str, bound: int, confirm_by) -> None:
    """Set the unit; a change withdraws the confirmation, `confirm_by` gives it. A
    confirmed person-level unit asks for the person-rows copy (after the commit)."""
    changed = (dataset.id_column, dataset.contribution_bound) != (id_column, bound)
    id_column_before = dataset.id_column
    project_public_changed(slug=dataset.project.slug)  # the registry states each unit
    dataset.id_column, dataset.contribution_bound = id_column, bound
    if confirm_by is not None:
        dataset.unit_confirmed_at, dataset.unit_confirmed_by = timezone.now(), confirm_by
    elif changed:
        dataset.unit_confirmed_at, dataset.unit_confirmed_by = None, None
    dataset_person_rows_after_unit(dataset=dataset, id_column_before=id_column_before)


def _lock_declarable(*, dataset: Dataset, actor: AbstractBaseUser) -> Dataset:
    require_owner(project=dataset.project, user=actor)
    # Lock the dataset so two owners' declarations cannot interleave.
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    if dataset.status != Dataset.Status.READY:
        raise InvalidTransition(gettext("Only a ready dataset can be declared."))
    if dataset_is_frozen(dataset=dataset):
        raise InvalidTransition(
            gettext("A release using this dataset has been submitted: its declaration is frozen.")
        )
    return dataset


@transaction.atomic
def dataset_import_codebook(*, dataset: Dataset, actor: AbstractBaseUser, content: bytes) -> int:
    """Declare the columns a codebook lists (datasets.services.codebook), all or nothing.

    Columns the codebook leaves out, or gives an empty kind, keep their declaration.
    The privacy unit is not changed (its ID column must stay excluded). Raises
    ValidationFailed with extra={"errors": {"__all__": ["Line N (column 'x'): ..."]}};
    nothing is saved then. Returns the number of columns declared.
    """
    dataset = _lock_declarable(dataset=dataset, actor=actor)
    rows = parse_codebook(content)
    by_name = {c.name: c for c in dataset.columns.order_by("position")}
    problems: list[str] = []
    changed: list[Column] = []
    for line, spec in rows:
        name = str(spec["column"])
        column = by_name.get(name)
        if column is None:
            problems.append(
                gettext("Line %(line)s: the dataset has no column named '%(name)s'.")
                % {"line": line, "name": name[:100]}
            )
            continue
        if not str(spec.get("kind") or "").strip():
            continue
        before = {p: _part_values(column, p) for p in column.derived_from_data or []}
        found = _declare_column(column, spec)
        if not found:
            _derived_parts(column, {}, before, found)
        if not found and name == dataset.id_column and column.kind != Column.Kind.EXCLUDED:
            found.append(gettext("it identifies a person (the privacy unit): declare it excluded."))
        where = {"line": line, "name": name[:100]}
        problems += [
            gettext("Line %(line)s (column '%(name)s'): %(problem)s") % {**where, "problem": p}
            for p in found
        ]
        changed.append(column)
    if problems:
        left = len(problems) - 50
        more = [gettext("... and %(count)s more.") % {"count": left}] if left > 0 else []
        raise ValidationFailed(
            ngettext(
                "The codebook has %(count)s problem; nothing was saved.",
                "The codebook has %(count)s problems; nothing was saved.",
                len(problems),
            )
            % {"count": len(problems)},
            extra={"errors": {"__all__": problems[:50] + more}},
        )
    Column.objects.bulk_update(changed, DECLARED_FIELDS)
    dataset.declared = not any(c.kind == Column.Kind.UNDECLARED for c in by_name.values())
    dataset.save(update_fields=["declared"])
    logger.info("dataset %s: codebook imported by user %s", dataset.pk, actor.pk)
    return len(changed)


@transaction.atomic
def dataset_declare(
    *,
    dataset: Dataset,
    actor: AbstractBaseUser,
    columns: Mapping[str, Mapping[str, object]],
    id_column: str = "",
    contribution_bound: object = 1,
    unit: str | None = None,
    exclude_rest: bool = False,
) -> Dataset:
    """Declare every column's PUBLIC domain and the privacy unit, all or nothing.

    `columns` maps each column's name to {"kind": categorical|numeric|excluded,
    "categories": list or one per line, "lower", "upper", "bin_edges": list or comma
    separated, "missing": drop|category, "derived_from_data": parts filled in from
    the profile, "confirm_derived": the owner confirms publishing them}. With
    `exclude_rest`, columns given no kind are declared excluded. The privacy unit is
    one row (no `id_column`) or one person identified by `id_column` (declared
    excluded) with at most `contribution_bound` rows kept. `unit` ("row" or
    "person") is the owner's explicit choice and confirms the unit; without it the
    unit is saved unconfirmed (unless it is the one already confirmed). Raises
    ValidationFailed with extra={"errors": {column name or "__all__": [messages]}};
    nothing is saved then.
    """
    dataset = _lock_declarable(dataset=dataset, actor=actor)
    errors: dict[str, list[str]] = {}
    all_columns = list(dataset.columns.order_by("position"))
    for column in all_columns:
        spec = columns.get(column.name) or {}
        if exclude_rest and not str(spec.get("kind") or "").strip():
            spec = {**spec, "kind": Column.Kind.EXCLUDED}
        before = {p: _part_values(column, p) for p in column.derived_from_data or []}
        problems = _declare_column(column, spec)
        if not problems:
            _derived_parts(column, spec, before, problems)
        if problems:
            errors[column.name] = problems
    by_name = {c.name: c for c in all_columns}
    id_column, bound, general = _unit(
        unit=unit,
        id_column=(id_column or "").strip(),
        contribution_bound=contribution_bound,
        by_name=by_name,
    )
    if general:
        errors["__all__"] = general
    if errors:
        count = sum(len(v) for v in errors.values())
        raise ValidationFailed(
            ngettext(
                "The declaration has %(count)s problem; nothing was saved.",
                "The declaration has %(count)s problems; nothing was saved.",
                count,
            )
            % {"count": count},
            extra={"errors": errors},
        )
    Column.objects.bulk_update(
        all_columns,
        DECLARED_FIELDS,
    )
    _set_unit(dataset=dataset, id_column=id_column, bound=bound, confirm_by=actor if unit else None)
    dataset.declared = True
    dataset.save(
        update_fields=[
            "id_column",
            "contribution_bound",
            "declared",
            "unit_confirmed_at",
            "unit_confirmed_by",
        ]
    )
    logger.info("dataset %s declared by user %s", dataset.pk, actor.pk)
    return dataset


@transaction.atomic
def dataset_confirm_unit(
    *,
    dataset: Dataset,
    actor: AbstractBaseUser,
    unit: str,
    id_column: str = "",
    contribution_bound: object = 1,
) -> Dataset:
    """Confirm the dataset's CURRENT privacy unit, as the owner read it.

    `unit`, `id_column` and `contribution_bound` say what the owner confirms; they
    must be the declared unit (a unit changed meanwhile is refused, never confirmed
    unseen). Allowed on a frozen declaration, since nothing changes but the
    confirmation: datasets from before confirmations existed need one before their
    next release.
    """
    require_owner(project=dataset.project, user=actor)
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    if dataset.status != Dataset.Status.READY or not dataset.declared:
        raise InvalidTransition(
            gettext("Declare the dataset's columns and its privacy unit first.")
        )
    if unit not in UNITS:
        raise ValidationFailed(gettext("Choose the privacy unit: 'row' or 'person'."))
    try:
        bound = int(str(contribution_bound).strip()) if unit == "person" else 1
    except ValueError:
        bound = 0
    given = ((id_column or "").strip() if unit == "person" else "", bound)
    if given != (dataset.id_column, dataset.contribution_bound if dataset.id_column else 1):
        raise ValidationFailed(
            gettext(
                "That is not the dataset's declared privacy unit (it may have changed "
                "meanwhile): reload the page, or change the unit on the declaration page."
            )
        )
    _set_unit(dataset=dataset, id_column=given[0], bound=given[1], confirm_by=actor)
    dataset.save(update_fields=["unit_confirmed_at", "unit_confirmed_by"])
    logger.info("dataset %s: privacy unit confirmed by user %s", dataset.pk, actor.pk)
    return dataset
