"""Pages for datasets: thin interfaces over datasets.services and datasets.selectors.

Owners upload, see the private profile, declare, delete. Reviewers see declared
domains only. Non-members and anonymous users get 404.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from budgets.models import Membership
from budgets.selectors import project_get_for_member, project_roles
from datasets.ingest import human_size
from datasets.models import Column, Dataset
from datasets.selectors import (
    dataset_get_for_member,
    dataset_is_frozen,
    dataset_is_usable,
    dataset_list_for_project,
)
from datasets.services import dataset_create, dataset_declare, dataset_delete
from datasets.upload_limits import (
    LimitedUploadHandler,
    declared_length_over_limit,
    limit_upload_size,
    upload_too_large_message,
)
from dpportal.errors import ApplicationError

OWNER = {Membership.Role.OWNER.value}


class DatasetUploadForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file's name.")
    file = forms.FileField(
        allow_empty_file=True, help_text="CSV with a header line, UTF-8, plain or gzip."
    )


# CSRF is checked in post(), once the size-limiting upload handler is installed: the
# check reads the form, which parses the upload (datasets.upload_limits).
@method_decorator(csrf_exempt, name="dispatch")
class DatasetUploadView(View):
    template_name = "datasets/upload.html"

    def get(self, request: HttpRequest, project_slug: str) -> HttpResponse:
        project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
        return self._render(request, project, DatasetUploadForm())

    def post(self, request: HttpRequest, project_slug: str) -> HttpResponse:
        project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
        if declared_length_over_limit(request):
            return self._render(
                request, project, DatasetUploadForm(), status=413, error=upload_too_large_message()
            )
        handler = limit_upload_size(request)
        return self._upload(request, project, handler)

    @method_decorator(csrf_protect)
    def _upload(self, request: HttpRequest, project, handler: LimitedUploadHandler) -> HttpResponse:
        form = DatasetUploadForm(request.POST, request.FILES)
        if handler.exceeded:
            return self._render(request, project, form, status=413, error=handler.message())
        if not form.is_valid():
            return self._render(request, project, form, status=400)
        try:
            dataset = dataset_create(
                project=project,
                name=form.cleaned_data["name"],
                uploaded_file=form.cleaned_data["file"],
                uploaded_by=request.user,
            )
        except ApplicationError as exc:
            return self._render(request, project, form, status=exc.status_code, error=exc.message)
        messages.success(request, "Uploaded. The file is being checked and converted.")
        return redirect("datasets:detail", pk=dataset.pk)

    def _render(self, request, project, form, status: int = 200, error: str = "") -> HttpResponse:
        context = {
            "project": project,
            "form": form,
            "error": error,
            "max_upload": human_size(settings.DPPORTAL_MAX_UPLOAD_BYTES),
            "max_decompressed": human_size(settings.DPPORTAL_MAX_DECOMPRESSED_BYTES),
            "max_columns": settings.DPPORTAL_MAX_COLUMNS,
        }
        return render(request, self.template_name, context, status=status)


class DatasetListView(View):
    def get(self, request: HttpRequest, project_slug: str) -> HttpResponse:
        project = project_get_for_member(slug=project_slug, user=request.user)
        context = {
            "project": project,
            "datasets": dataset_list_for_project(project=project),
            "is_owner": Membership.Role.OWNER in project_roles(project=project, user=request.user),
        }
        return render(request, "datasets/list.html", context)


class DatasetDetailView(View):
    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user)
        roles = project_roles(project=dataset.project, user=request.user)
        is_owner = Membership.Role.OWNER in roles
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "columns": list(dataset.columns.order_by("position")),
            "is_owner": is_owner,
            "frozen": dataset_is_frozen(dataset=dataset),
            "usable": dataset_is_usable(dataset=dataset),
            "in_progress": dataset.status in (Dataset.Status.UPLOADED, Dataset.Status.INGESTING),
        }
        return render(request, "datasets/detail.html", context)


class DatasetStatusView(View):
    """The small JSON the detail page polls while the dataset is ingesting."""

    def get(self, request: HttpRequest, pk: int) -> JsonResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user)
        return JsonResponse(
            {
                "status": dataset.status,
                "status_display": dataset.get_status_display(),
                "progress": round(dataset.progress, 3),
                "failure_reason": dataset.failure_reason,
            }
        )


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
            }
        else:
            declared = column.kind != Column.Kind.UNDECLARED
            values = {
                "kind": column.kind if declared else "",
                "categories": "\n".join(column.categories),
                "lower": _plain(column.lower),
                "upper": _plain(column.upper),
                "bin_edges": ", ".join(str(edge) for edge in column.bin_edges),
                "missing": column.missing,
            }
        profile = column.profile or {}
        rows.append(
            {
                "column": column,
                "key": key,
                "values": values,
                "errors": (errors or {}).get(column.name, []),
                "fill": {
                    "categories": "\n".join(profile.get("distinct") or []),
                    "range": profile.get("range") or ["", ""],
                },
            }
        )
    return rows


def _plain(value) -> str:
    if value is None:
        return ""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


class DatasetDeclareView(View):
    template_name = "datasets/declare.html"

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        columns = list(dataset.columns.order_by("position"))
        return self._render(
            request,
            dataset,
            _column_rows(columns),
            id_column=dataset.id_column,
            bound=dataset.contribution_bound,
        )

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        columns = list(dataset.columns.order_by("position"))
        data = request.POST
        spec = {
            c.name: {
                "kind": data.get(f"kind-{c.position}", ""),
                "categories": data.get(f"categories-{c.position}", ""),
                "lower": data.get(f"lower-{c.position}", ""),
                "upper": data.get(f"upper-{c.position}", ""),
                "bin_edges": data.get(f"bins-{c.position}", ""),
                "missing": data.get(f"missing-{c.position}", ""),
            }
            for c in columns
        }
        unit = data.get("unit", "row")
        id_column = data.get("id_column", "") if unit == "person" else ""
        bound = data.get("contribution_bound", "1") if unit == "person" else 1
        try:
            dataset_declare(
                dataset=dataset,
                actor=request.user,
                columns=spec,
                id_column=id_column,
                contribution_bound=bound,
            )
        except ApplicationError as exc:
            errors = exc.extra.get("errors", {})
            return self._render(
                request,
                dataset,
                _column_rows(columns, data, errors),
                id_column=id_column,
                bound=data.get("contribution_bound", "1"),
                error=exc.message,
                general=errors.get("__all__", []),
                unit=unit,
                status=exc.status_code,
            )
        messages.success(request, "The public domains are declared.")
        return redirect("datasets:detail", pk=dataset.pk)

    def _render(self, request, dataset, rows, *, id_column, bound, error="", general=(),
                unit=None, status=200):  # fmt: skip
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "rows": rows,
            "id_column": id_column,
            "bound": bound,
            "unit": unit or ("person" if id_column else "row"),
            "error": error,
            "general": general,
            "frozen": dataset_is_frozen(dataset=dataset),
            "kinds": [
                (Column.Kind.CATEGORICAL, "Categorical"),
                (Column.Kind.NUMERIC, "Numeric"),
                (Column.Kind.EXCLUDED, "Excluded"),
            ],
            "missing_choices": Column.Missing.choices,
            "fills": {row["key"]: row["fill"] for row in rows},
        }
        return render(request, self.template_name, context, status=status)


class DatasetDeleteView(View):
    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        return render(request, "datasets/delete.html", {"dataset": dataset})

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        try:
            dataset_delete(dataset=dataset, actor=request.user)
        except ApplicationError as exc:
            messages.error(request, exc.message)
            return redirect("datasets:detail", pk=dataset.pk)
        messages.success(request, f"The dataset '{dataset.name}' and its files are deleted.")
        return redirect(reverse("datasets:list", kwargs={"project_slug": dataset.project.slug}))
