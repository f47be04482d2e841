"""What every dataset endpoint shares: the output serializers, the detail and the owners' gate.

Reviewers see declared (public) domains only; the profile computed from the data
is for the project's owners. Errors are mapped in dpportal.api.
"""

from __future__ import annotations

from collections.abc import Callable

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.models import Membership
from datasets import selectors
from datasets.models import Column, Dataset
from dpportal.api import AmountField, FailureReasonField, WarningsField, validated_input

OWNER = {Membership.Role.OWNER.value}


class ColumnOutputSerializer(serializers.Serializer):
    """A column's declared PUBLIC domain (never anything computed from the data)."""

    name = serializers.CharField()
    position = serializers.IntegerField()
    suggested_type = serializers.ChoiceField(choices=Column.Type.choices)
    kind = serializers.ChoiceField(choices=Column.Kind.choices)
    categories = serializers.ListField(child=serializers.CharField(allow_blank=True))
    lower = AmountField(allow_null=True)
    upper = AmountField(allow_null=True)
    bin_edges = serializers.ListField(child=serializers.CharField())
    missing = serializers.ChoiceField(choices=Column.Missing.choices)
    missing_codes = serializers.ListField(
        child=serializers.CharField(), help_text="Public values that count as missing."
    )
    date = serializers.DictField(
        child=serializers.CharField(),
        help_text="A date column (its kind is categorical over the bins): bin, format, lower, "
        "upper. Empty for other columns.",
    )
    derived_from_data = serializers.ListField(
        child=serializers.ChoiceField(choices=Column.Derived.choices),
        help_text="Parts of the declared domain filled in from the data's private profile "
        "(and confirmed by an owner for publication): 'categories', 'bounds'.",
    )
    category_labels = serializers.DictField(
        child=serializers.DictField(child=serializers.CharField(allow_blank=True)),
        help_text='The public labels of the declared categories: code -> {"en": ..., '
        '"zh-hans": ...} (either may be empty; a code without a label is shown as the code).',
    )


class DatasetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=Dataset.Status.choices)
    progress = serializers.FloatField(help_text="Fraction of the upload ingested (0 to 1).")
    failure_reason = FailureReasonField()
    uploaded_by = serializers.CharField(source="uploaded_by.username")
    uploaded_at = serializers.DateTimeField()
    declared = serializers.BooleanField()
    id_column = serializers.CharField(help_text="Empty: the privacy unit is one row.")
    contribution_bound = serializers.IntegerField(help_text="Rows kept per person (L).")
    unit_confirmed = serializers.SerializerMethodField(
        help_text="An owner confirmed the privacy unit (needed before any release)."
    )
    unit_confirmed_at = serializers.DateTimeField(allow_null=True)
    warnings = WarningsField(
        help_text="Things to check about the upload that did not refuse it "
        "(e.g. a first line that looks like data rather than a header), in the client's "
        "language (Accept-Language; English by default)."
    )
    read_options = serializers.DictField(
        help_text="How the CSV is (to be) read: encoding, delimiter, quote_char, "
        "decimal_comma, header, thousands."
    )
    failed_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the ingest failed; the failed upload is removed after the retention "
        "period (its file at once).",
    )

    def get_unit_confirmed(self, dataset) -> bool:
        if isinstance(dataset, dict):
            return bool(dataset.get("unit_confirmed"))
        return dataset.unit_confirmed_at is not None


class DatasetDetailOutputSerializer(DatasetOutputSerializer):
    frozen = serializers.BooleanField(help_text="A submitted release uses the declaration.")
    usable = serializers.BooleanField(
        help_text="Ready, every column declared and the privacy unit confirmed: releases may "
        "use it."
    )
    usability_problem = serializers.CharField(help_text="Why it is not usable; empty if it is.")
    columns = ColumnOutputSerializer(many=True)


def detail(dataset: Dataset) -> dict:
    problem = selectors.dataset_usability_problem(dataset=dataset)
    return DatasetDetailOutputSerializer(
        {
            **{
                f: getattr(dataset, f)
                for f in DatasetOutputSerializer().fields
                if f not in ("project", "unit_confirmed")
            },
            "project": dataset.project,
            "failure_record": dataset.failure_record,
            "uploaded_by": dataset.uploaded_by,
            "unit_confirmed": dataset.unit_confirmed_at is not None,
            "frozen": selectors.dataset_is_frozen(dataset=dataset),
            "usable": problem is None,
            "usability_problem": problem or "",
            "columns": list(dataset.columns.order_by("position")),
        }
    ).data


def owner_dataset(request: Request, dataset_id: int) -> Dataset:
    """The dataset, if the requesting user owns its project (else the mapped 404/403)."""
    return selectors.dataset_get_for_member(dataset_id=dataset_id, user=request.user, roles=OWNER)


def owner_dataset_change(
    request: Request,
    dataset_id: int,
    input_serializer: type[serializers.Serializer],
    change: Callable[[Dataset, dict], Dataset],
) -> Response:
    """An owner's change of one dataset: validate the input, apply it, answer the new detail."""
    dataset = owner_dataset(request, dataset_id)
    data = validated_input(input_serializer, request)
    return Response(detail(change(dataset, data)))
