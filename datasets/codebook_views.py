"""The codebook pages: import a codebook CSV, export the declaration as one (owners only).

A thin interface over datasets.services.dataset_import_codebook / export_codebook
(the format is described in datasets.services.codebook).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import ngettext
from django.views import View

from budgets.models import Membership
from datasets.selectors import dataset_get_for_member, dataset_is_frozen
from datasets.services import dataset_import_codebook, export_codebook
from datasets.services.codebook import HEADERS, MAX_CODEBOOK_BYTES
from dpportal.errors import ApplicationError

OWNER = {Membership.Role.OWNER.value}


class DatasetCodebookView(View):
    template_name = "datasets/codebook.html"

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        return self._render(request, dataset)

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        upload = request.FILES.get("codebook")
        if upload is None:
            return self._render(request, dataset, error="Choose a codebook file.", status=400)
        if upload.size > MAX_CODEBOOK_BYTES:
            return self._render(
                request, dataset, error="The codebook is larger than 2 MiB.", status=400
            )
        try:
            count = dataset_import_codebook(
                dataset=dataset, actor=request.user, content=upload.read()
            )
        except ApplicationError as exc:
            problems = exc.extra.get("errors", {}).get("__all__", [])
            return self._render(
                request, dataset, error=exc.message, problems=problems, status=exc.status_code
            )
        messages.success(
            request,
            ngettext(
                "The codebook declared %(count)s column: check it below, "
                "then save the declaration with the privacy unit.",
                "The codebook declared %(count)s columns: check them below, "
                "then save the declaration with the privacy unit.",
                count,
            )
            % {"count": count},
        )
        return redirect("datasets:declare", pk=dataset.pk)

    def _render(self, request, dataset, *, error="", problems=(), status=200) -> HttpResponse:
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "headers": HEADERS,
            "error": error,
            "problems": problems,
            "frozen": dataset_is_frozen(dataset=dataset),
        }
        return render(request, self.template_name, context, status=status)


class DatasetCodebookExportView(View):
    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        response = HttpResponse(
            export_codebook(dataset=dataset), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="codebook-{dataset.pk}.csv"'
        return response
