"""The declaration page: every column's PUBLIC domain and the privacy unit (owners only).

A thin interface over datasets.services.dataset_declare. The privacy unit radio
has no default until an owner has confirmed a unit: saving the page with a unit
chosen is that confirmation. "Fill in from profile" (static/js/dataset-declare.js)
marks what it filled in a hidden `derived-<position>` field; the service records
those parts as data-derived and refuses them without the column's confirmation
box ticked.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, pgettext
from django.views import View

from budgets.models import Membership
from datasets.domains import DATE_BINS, DATE_FORMATS
from datasets.models import Column
from datasets.selectors import dataset_get_for_member, dataset_is_frozen
from datasets.services import dataset_declare
from datasets.services.category_labels import labels_as_lines, value_label_lines
from datasets.services.declaration import DERIVED_CONFIRMATION
from datasets.services.declaration_columns import DATE, column_kind
from dpportal.bilingual import EN, ZH
from dpportal.errors import ApplicationError

DATE_BIN_LABELS = {
    "year": gettext_lazy("year"),
    "quarter": gettext_lazy("quarter"),
    "month": gettext_lazy("month"),
    "day": gettext_lazy("day"),
}

OWNER = {Membership.Role.OWNER.value}

#: the part of a declaration each kind may take from the profile (a date's bins never do)
DERIVED_PART_OF_KIND = {
    Column.Kind.CATEGORICAL.value: Column.Derived.CATEGORIES.value,
    Column.Kind.NUMERIC.value: Column.Derived.BOUNDS.value,
}


def _column_rows(columns: list[Column], data=None, errors=None) -> list[dict]:
    """Per column: its profile and the declaration inputs (posted values win)."""
    rows = []
    for column in columns:
        key = str(column.position)
        if data is not None:
            values = {
                "kind": data.get(f"kind-{key}", ""),
                "categories": data.get(f"categories-{key}", ""),
                "lower": data.get(f"lower-{key}", ""),
                "upper": data.get(f"upper-{key}", ""),
                "bin_edges": data.get(f"bins-{key}", ""),
                "missing": data.get(f"missing-{key}", Column.Missing.DROP),
                "missing_codes": data.get(f"codes-{key}", ""),
                "date_lower": data.get(f"date-lower-{key}", ""),
                "date_upper": data.get(f"date-upper-{key}", ""),
                "date_bin": data.get(f"date-bin-{key}", ""),
                "date_format": data.get(f"date-format-{key}", ""),
                "derived": data.get(f"derived-{key}", "").split(),
                "confirm_derived": bool(data.get(f"confirm-derived-{key}")),
                "labels": {
                    "en": data.get(f"labels-{key}", ""),
                    "zh": data.get(f"labels-zh-{key}", ""),
                },
                "label": data.get(f"label-{key}", ""),
                "label_zh": data.get(f"label-zh-{key}", ""),
            }
        else:
            declared = column.kind != Column.Kind.UNDECLARED
            date = column.date or {}
            values = {
                "kind": column_kind(column) if declared else "",
                "categories": "" if date else "\n".join(column.categories),
                "lower": _plain(column.lower),
                "upper": _plain(column.upper),
                "bin_edges": ", ".join(str(edge) for edge in column.bin_edges),
                "missing": column.missing,
                "missing_codes": ", ".join(column.missing_codes or []),
                "date_lower": date.get("lower", ""),
                "date_upper": date.get("upper", ""),
                "date_bin": date.get("bin", ""),
                "date_format": date.get("format", ""),
                "derived": list(column.derived_from_data or []),
                "confirm_derived": bool(column.derived_from_data),
                "labels": _labels_shown(column),
                "label": column.label,
                "label_zh": column.label_zh,
            }
        profile = column.profile or {}
        # the badge names only what the chosen kind takes from the profile
        shown = [p for p in values["derived"] if p == DERIVED_PART_OF_KIND.get(values["kind"])]
        rows.append(
            {
                "column": column,
                "key": key,
                "values": values,
                "derived_text": " ".join(values["derived"]),
                "derived_shown": shown,
                "derived_labels": pgettext("list separator", ", ").join(
                    str(Column.Derived(p).label) for p in shown
                ),
                "errors": (errors or {}).get(column.name, []),
                "fill": {
                    "categories": "\n".join(profile.get("values") or []),
                    "range": profile.get("range") or ["", ""],
                    "kind": _suggested_kind(column),
                    "labels": _label_fill(profile),
                },
            }
        )
    return rows


def _label_fill(profile: dict) -> dict | None:
    """What "Use the value labels" fills: the labelled codes (a Stata or SPSS file's
    metadata) as categories, marked data-derived like any suggestion until confirmed."""
    labels = profile.get("value_labels") or []
    if not labels:
        return None
    boxes = value_label_lines(labels)
    return {
        "kind": Column.Kind.CATEGORICAL,
        "categories": "\n".join(c for c, _ in labels),
        "label_lines": {"en": boxes[EN], "zh": boxes[ZH]},
    }


def _labels_shown(column: Column) -> dict[str, str]:
    """The column's stored category labels as the page's two boxes ("code = label")."""
    boxes = labels_as_lines(column.category_labels, [str(c) for c in column.categories])
    return {"en": boxes[EN], "zh": boxes[ZH]}


def _suggested_kind(column: Column) -> str:
    """The kind "Fill in from profile" sets: numeric for numbers (and mostly-number text)."""
    profile = column.profile or {}
    if column.suggested_type == Column.Type.INTEGER and profile.get("values"):
        if not profile.get("more_values"):
            return Column.Kind.CATEGORICAL  # a few codes, each held by many rows
    if column.suggested_type in (Column.Type.INTEGER, Column.Type.FLOAT):
        return Column.Kind.NUMERIC if profile.get("range") else ""
    if profile.get("unreadable_share"):
        return Column.Kind.NUMERIC
    return Column.Kind.CATEGORICAL if profile.get("values") else ""


def _plain(value) -> str:
    if value is None:
        return ""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _spec(columns: list[Column], data) -> dict[str, dict]:
    return {
        c.name: {
            "kind": data.get(f"kind-{c.position}", ""),
            "categories": data.get(f"categories-{c.position}", ""),
            "lower": data.get(f"lower-{c.position}", ""),
            "upper": data.get(f"upper-{c.position}", ""),
            "bin_edges": data.get(f"bins-{c.position}", ""),
            "missing": data.get(f"missing-{c.position}", ""),
            "missing_codes": data.get(f"codes-{c.position}", ""),
            "date_lower": data.get(f"date-lower-{c.position}", ""),
            "date_upper": data.get(f"date-upper-{c.position}", ""),
            "date_bin": data.get(f"date-bin-{c.position}", ""),
            "date_format": data.get(f"date-format-{c.position}", ""),
            "derived_from_data": data.get(f"derived-{c.position}", ""),
            "confirm_derived": bool(data.get(f"confirm-derived-{c.position}")),
            "category_labels_lines": {
                EN: data.get(f"labels-{c.position}", ""),
                ZH: data.get(f"labels-zh-{c.position}", ""),
            },
            "label": data.get(f"label-{c.position}", ""),
            "label_zh": data.get(f"label-zh-{c.position}", ""),
        }
        for c in columns
    }


def _suggested_bound(request: HttpRequest) -> int | None:
    """An L the owner chose from a rows-per-person result ("?contribution_bound=k"): it
    only fills the field in; the owner still confirms the unit by submitting the form."""
    raw = request.GET.get("contribution_bound", "")
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= 10**9 else None


class DatasetDeclareView(View):
    template_name = "datasets/declare.html"

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        columns = list(dataset.columns.order_by("position"))
        confirmed = dataset.unit_confirmed_at is not None
        return self._render(
            request,
            dataset,
            _column_rows(columns),
            id_column=dataset.id_column,
            bound=_suggested_bound(request) or dataset.contribution_bound,
            # no unit is pre-selected until one was confirmed: it is a choice, not a default
            unit=("person" if dataset.id_column else "row") if confirmed else "",
        )

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        columns = list(dataset.columns.order_by("position"))
        data = request.POST
        unit = data.get("unit", "")
        id_column = data.get("id_column", "") if unit == "person" else ""
        bound = data.get("contribution_bound", "1") if unit == "person" else 1
        try:
            dataset_declare(
                dataset=dataset,
                actor=request.user,
                columns=_spec(columns, data),
                id_column=id_column,
                contribution_bound=bound,
                unit=unit,
                exclude_rest=bool(data.get("exclude_rest")),
            )
        except ApplicationError as exc:
            errors = exc.extra.get("errors", {})
            return self._render(
                request,
                dataset,
                _column_rows(columns, data, errors),
                id_column=data.get("id_column", ""),
                bound=data.get("contribution_bound", "1"),
                error=exc.message,
                general=errors.get("__all__", []),
                unit=unit,
                exclude_rest=bool(data.get("exclude_rest")),
                status=exc.status_code,
            )
        messages.success(
            request, gettext("The public domains are declared and the privacy unit confirmed.")
        )
        return redirect("datasets:detail", pk=dataset.pk)

    def _render(self, request, dataset, rows, *, id_column, bound, unit, error="", general=(),
                exclude_rest=False, status=200):  # fmt: skip
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "rows": rows,
            "id_column": id_column,
            "bound": bound,
            "unit": unit,
            "exclude_rest": exclude_rest,
            "error": error,
            "general": general,
            "frozen": dataset_is_frozen(dataset=dataset),
            "kinds": [
                (Column.Kind.CATEGORICAL, Column.Kind.CATEGORICAL.label),
                (Column.Kind.NUMERIC, Column.Kind.NUMERIC.label),
                (DATE, gettext("Date")),
                (Column.Kind.EXCLUDED, Column.Kind.EXCLUDED.label),
            ],
            "date_bins": [(value, DATE_BIN_LABELS.get(value, value)) for value in DATE_BINS],
            "date_formats": list(DATE_FORMATS),
            "missing_choices": Column.Missing.choices,
            "derived_confirmation": DERIVED_CONFIRMATION,
            "fills": {row["key"]: row["fill"] for row in rows},
            "derived_words": {
                **{part.value: str(part.label) for part in Column.Derived},
                "separator": pgettext("list separator", ", "),
            },
        }
        return render(request, self.template_name, context, status=status)
