"""REST API of a dataset's PRIVATE column profile (owners only; never public)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from datasets.api.common import owner_dataset
from datasets.models import Column, Dataset
from dpportal.api import MEMBER_ERRORS, ApiView, error_responses


class ProfileSerializer(serializers.Serializer):
    """The private profile: only what an owner needs to declare (datasets.ingest.profile)."""

    type = serializers.CharField(source="type_", help_text="Suggested type.")
    values = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        help_text="Frequent values (rare ones are never suggested), at most a few dozen.",
    )
    more_values = serializers.BooleanField(help_text="Other values exist and are not listed.")
    range = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="Numeric: [lo, hi] rounded outward, extremes left out; null if none.",
    )
    unreadable = serializers.BooleanField(
        allow_null=True, help_text="Numeric: some cells could not be read as numbers (yes/no)."
    )
    value_labels = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(allow_blank=True)),
        help_text="Stata/SPSS: [code, label] pairs the file declares for this column, a "
        "suggested set of categories (the owner confirms); empty for other files.",
    )
    unreadable_share = serializers.CharField(
        allow_null=True,
        help_text="Numeric, or text holding mostly numbers (it may be declared numeric): the "
        "share of non-empty cells that are not finite numbers, rounded to a percent "
        "(exact decimal text, e.g. '0.14'); null when not applicable.",
    )


def _profile(column: Column) -> dict:
    stored = column.profile or {}
    return {
        "type_": stored.get("type", column.suggested_type),
        "values": [str(v) for v in stored.get("values") or []],
        "more_values": bool(stored.get("more_values")),
        "range": stored.get("range") or None,
        "unreadable": stored.get("unreadable"),
        "value_labels": [[str(c), str(t)] for c, t in stored.get("value_labels") or []],
        "unreadable_share": stored.get("unreadable_share"),
    }


class DatasetProfileApi(ApiView):
    @extend_schema_serializer(component_name="DatasetProfileColumnProfile")
    class ColumnProfileSerializer(serializers.Serializer):
        name = serializers.CharField()
        position = serializers.IntegerField()
        suggested_type = serializers.ChoiceField(choices=Column.Type.choices)
        profile = ProfileSerializer(help_text="Private suggestions computed from the data.")

    @extend_schema_serializer(component_name="DatasetProfileOutput")
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.ChoiceField(choices=Dataset.Status.choices)
        columns = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="datasets_profile",
        summary="The PRIVATE column profile, to help declare domains (owners only)",
        description="Suggestions computed from the data: never public, never a release input.",
        responses={200: OutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = owner_dataset(request, dataset_id)
        columns = self.ColumnProfileSerializer(
            [
                {
                    "name": c.name,
                    "position": c.position,
                    "suggested_type": c.suggested_type,
                    "profile": _profile(c),
                }
                for c in dataset.columns.order_by("position")
            ],
            many=True,
        )
        return Response(
            self.OutputSerializer(
                {"id": dataset.pk, "status": dataset.status, "columns": columns.data}
            ).data
        )
