"""The step between "file received" and "ingest queued": how the upload is read.

An owner sees the detected encoding, delimiter, quote, decimal mark and header
with the first rows decoded that way, may change each and preview again (GET,
no side effect), and confirms (POST), which queues the ingest.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views import View

from budgets.models import Membership
from datasets import reading_words as words
from datasets.ingest.common import DELIMITERS, QUOTE_CHARS, CsvDialect
from datasets.ingest.decoding import ENCODINGS
from datasets.ingest.numbers import THOUSANDS
from datasets.models import Dataset
from datasets.selectors import dataset_get_for_member
from datasets.services import dataset_confirm_reading, dataset_read_preview
from dpportal.errors import ApplicationError

OWNER = {Membership.Role.OWNER.value}


def _options(data) -> dict | None:
    """The options submitted by the form (None when it was not submitted)."""
    if data.get("shown") != "1":
        return None
    options = {k: data.get(k, "") for k in ("encoding", "delimiter", "quote_char")}
    options["thousands"] = data.get("thousands") or "none"
    options["decimal_comma"] = "true" if data.get("decimal_comma") else "false"
    options["header"] = "true" if data.get("header") else "false"
    return options


class DatasetReadingView(View):
    template_name = "datasets/reading.html"

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        if dataset.status != Dataset.Status.AWAITING:
            return redirect("datasets:detail", pk)
        return self._render(request, dataset, _options(request.GET))

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        dataset = dataset_get_for_member(dataset_id=pk, user=request.user, roles=OWNER)
        options = _options(request.POST) or {}
        try:
            dataset_confirm_reading(dataset=dataset, actor=request.user, options=options)
        except ApplicationError as exc:
            if dataset.status != Dataset.Status.AWAITING:
                messages.error(request, exc.reader_message())
                return redirect("datasets:detail", pk)
            return self._render(request, dataset, options, error=exc.reader_message(), status=400)
        messages.success(request, gettext("Confirmed. The file is being checked and converted."))
        return redirect("datasets:detail", pk)

    def _render(self, request, dataset, options, *, error: str = "", status: int = 200):
        try:
            preview = dataset_read_preview(dataset=dataset, actor=request.user, options=options)
        except ApplicationError as exc:
            error = error or exc.reader_message()
            status = 400
            preview = dataset_read_preview(dataset=dataset, actor=request.user)
        dialect: CsvDialect = preview.dialect
        context = {
            "dataset": dataset,
            "project": dataset.project,
            "preview": preview,
            "dialect": dialect,
            "error": error,
            "encodings": [(code, words.encoding_label(code)) for code in ENCODINGS],
            "delimiters": [(n, words.separator_label(n)) for n in DELIMITERS.values()],
            "quotes": [(char, words.quote_label(char)) for char in QUOTE_CHARS],
            "thousands_choices": [
                (n, words.separator_label(n)) for n in ["none", *THOUSANDS.values()]
            ],
            "thousands_name": THOUSANDS.get(dialect.thousands, "none"),
            "thousands_words": words.separator_label(THOUSANDS.get(dialect.thousands, "none")),
            "encoding_label": words.encoding_label(dialect.encoding),
            "delimiter_label": DELIMITERS[dialect.delimiter],
            "delimiter_words": words.separator_label(DELIMITERS[dialect.delimiter]),
            "awaiting_hours": settings.DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS,
        }
        return render(request, self.template_name, context, status=status)
