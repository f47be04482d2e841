"""Pages for datasets: thin interfaces over datasets.services and datasets.selectors.

Owners upload, see the private profile, confirm the privacy unit, delete (or
dismiss a failed upload). Reviewers see declared domains only. Non-members and
anonymous users get 404. The declaration page: datasets.declare_views.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _
from django.views import View
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from budgets.models import Membership
from budgets.selectors import project_get_for_member, project_roles
from datasets.ingest import human_size
from datasets.models import Column, Dataset
from datasets.selectors import (
    dataset_get_for_member,
    dataset_get_shape,
    dataset_is_frozen,
    dataset_list_for_project,
    dataset_usability_problem,
)
from datasets.services import (
    dataset_confirm_unit,
    dataset_create,
    dataset_delete,
    dataset_texts_update,
    failed_upload_retention,
)
from datasets.upload_limits import (
    LimitedUploadHandler,
    declared_length_over_limit,
    limit_upload_size,
    upload_too_large_message,
)
from dpportal.errors import ApplicationError
from dpportal.messages import reader_text

OWNER = {Membership.Role.OWNER.value}


class DatasetUploadForm(forms.Form):
    name = forms.CharField(
        label=_("Name"), max_length=200, required=False, help_text=_("Defaults to the file's name.")
    )
    file = forms.FileField(
        label=_("File"),
        allow_empty_file=True,
        help_text=_(
            "A table with a header line: CSV or TSV (any common encoding), Excel .xlsx, "
            "Parquet, Stata .dta, SPSS .sav, SAS .sas7bdat or .xpt; plain, gzip or alone in a zip."
        ),
    )
    name_zh = forms.CharField(
        label=_("Name in Chinese"),
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"lang": "zh-Hans"}),
    )
    description = forms.CharField(
        label=_("Description"),
        max_length=5000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("What the data is (public)."),
    )
    description_zh = forms.CharField(
        label=_("Description in Chinese"),
        max_length=5000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "lang": "zh-Hans"}),
    )
    sheet = forms.CharField(
        max_length=200,
        required=False,
        label=_("Sheet (Excel only)"),
        help_text=_("The sheet to read, by name or by number from 1; blank reads the first sheet."),
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
                sheet=form.cleaned_data["sheet"],
            )
        except ApplicationError as exc:
            return self._render(
                request, project, form, status=exc.status_code, error=exc.reader_message()
            )
        texts = {f: form.cleaned_data[f] for f in ("name_zh", "description", "description_zh")}
        if any(texts.values()):
            try:
                dataset = dataset_texts_update(
                    dataset=dataset, actor=request.user, name=dataset.name, **texts
                )
            except ApplicationError as exc:
                messages.error(request, exc.message)
        if dataset.status == Dataset.Status.AWAITING:
            messages.success(
                request, gettext("Uploaded. Check how the file is read, then confirm.")
            )
            return redirect("datasets:reading", pk=dataset.pk)
        messages.success(request, gettext("Uploaded. The file is being checked and converted."))
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
        problem = dataset_usability_problem(dataset=dataset)
        # the rows and empty shares are private, like the profile: owners only
        shape = dataset_get_shape(dataset=dataset) if is_owner else None
        columns = list(dataset.columns.order_by("position"))
        separator = pgettext("list separator", ", ")
        for column in columns:
            column.empty_share = shape.empty_share.get(column.name) if shape else None
            column.derived_text = separator.join(
                str(Column.Derived(p).label)
                for p in column.derived_from_data or []
                if p in Column.Derived.values
            )
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "columns": columns,
            "shape": shape,
            "is_owner": is_owner,
            "frozen": dataset_is_frozen(dataset=dataset),
            "usable": problem is None,
            "problem": problem,
            "confirm_unit": is_owner
            and dataset.declared
            and dataset.status == Dataset.Status.READY
            and dataset.unit_confirmed_at is None,
            "retention_days": failed_upload_retention().days,
            "removal_at": dataset.failed_at + failed_upload_retention()
            if dataset.failed_at
            else None,
            "in_progress": dataset.status in (Dataset.Status.UPLOADED, Dataset.Status.INGESTING),
            "texts_form": DatasetTextsForm(
                initial={
                    f: getattr(dataset, f)
                    for f in ("name", "name_zh", "description", "description_zh")
                }
            )
            if is_owner
            else None,
        }
        return render(request, "datasets/detail.html", context)


class DatasetConfirmUnitView(View):
    """An owner confirms the privacy unit shown on the dataset's page (posted back as read)."""

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        # the form lives on the dataset's page; others get the same 404 as for that page
        dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        return redirect("datasets:detail", pk)

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        data = request.POST
        try:
            dataset_confirm_unit(
                dataset=dataset,
                actor=request.user,
                unit=data.get("unit", ""),
                id_column=data.get("id_column", ""),
                contribution_bound=data.get("contribution_bound", "1"),
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, gettext("The privacy unit is confirmed."))
        return redirect("datasets:detail", pk=dataset.pk)


class DatasetTextsForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200, required=False)
    name_zh = DatasetUploadForm.base_fields["name_zh"]
    description = DatasetUploadForm.base_fields["description"]
    description_zh = DatasetUploadForm.base_fields["description_zh"]


class DatasetTextsView(View):
    """An owner names and describes the dataset for readers, in English and Chinese."""

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        return redirect("datasets:detail", pk)

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        form = DatasetTextsForm(request.POST)
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            messages.error(request, f"{form.fields[field].label}: {errors[0]}")
            return redirect("datasets:detail", pk=dataset.pk)
        try:
            dataset_texts_update(dataset=dataset, actor=request.user, **form.cleaned_data)
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, gettext("The dataset's name and description are saved."))
        return redirect("datasets:detail", pk=dataset.pk)


class DatasetStatusView(View):
    """The small JSON the detail page polls while the dataset is ingesting."""

    def get(self, request: HttpRequest, pk: int) -> JsonResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user)
        return JsonResponse(
            {
                "status": dataset.status,
                "status_display": dataset.get_status_display(),
                "progress": round(dataset.progress, 3),
                "failure_reason": reader_text(
                    dataset.failure_record, fallback=dataset.failure_reason
                ),
            }
        )


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
        if dataset.status == Dataset.Status.FAILED:
            messages.success(
                request,
                gettext("The failed upload “%(name)s” is dismissed.") % {"name": dataset.name},
            )
        else:
            messages.success(
                request,
                gettext("The dataset “%(name)s” and its files are deleted.")
                % {"name": dataset.name},
            )
        return redirect(reverse("datasets:list", kwargs={"project_slug": dataset.project.slug}))
