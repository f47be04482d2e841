"""The page registering existing Parquet in place (owners with datasets.register_external).

A thin interface over datasets.services.dataset_register_external: the same checks
as the API; a refusal shows its reason and creates nothing. Non-members get 404
(as every dataset page); an owner without the permission is told who can grant it.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views import View

from budgets.models import Membership
from budgets.selectors import project_get_for_member
from datasets.services import dataset_register_external, user_may_register_external
from dpportal.errors import ApplicationError

OWNER = {Membership.Role.OWNER.value}


class DatasetRegisterForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    location = forms.CharField(
        label=_("Location"),
        max_length=900,
        help_text=_(
            "s3://bucket/prefix/ (or one file's key), or a folder or file on the "
            "server under the folders the administrator allows."
        ),
    )


class DatasetRegisterView(View):
    template_name = "datasets/register.html"

    def get(self, request: HttpRequest, project_slug: str) -> HttpResponse:
        project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
        return self._render(request, project, DatasetRegisterForm())

    def post(self, request: HttpRequest, project_slug: str) -> HttpResponse:
        project = project_get_for_member(slug=project_slug, user=request.user, roles=OWNER)
        form = DatasetRegisterForm(request.POST)
        if not form.is_valid():
            return self._render(request, project, form, status=400)
        try:
            dataset = dataset_register_external(
                project=project,
                name=form.cleaned_data["name"],
                location=form.cleaned_data["location"],
                registered_by=request.user,
            )
        except ApplicationError as exc:
            return self._render(
                request, project, form, status=exc.status_code, error=exc.reader_message()
            )
        messages.success(request, gettext("Registered. The workers are profiling the data."))
        return redirect("datasets:detail", pk=dataset.pk)

    def _render(self, request, project, form, status: int = 200, error: str = "") -> HttpResponse:
        context = {
            "project": project,
            "form": form,
            "error": error,
            "allowed": user_may_register_external(user=request.user),
        }
        return render(request, self.template_name, context, status=status)
