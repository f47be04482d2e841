"""REST API of how an upload is read: the detection preview and its confirmation.

The preview's rows are private cells of the upload, answered to the project's
owners only and never stored.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from datasets import services
from datasets.api.common import DatasetDetailOutputSerializer, detail, owner_dataset
from datasets.ingest import Preview
from datasets.ingest.common import DELIMITERS, QUOTE_CHARS
from datasets.ingest.decoding import ENCODINGS
from datasets.services.reading import OPTION_NAMES
from dpportal import messages
from dpportal.api import MEMBER_ERRORS, ApiView, error_responses, validated_input


class ReadOptionsInputSerializer(serializers.Serializer):
    """How to read the CSV; an absent, blank or 'auto' option keeps the detected value."""

    encoding = serializers.CharField(
        required=False, allow_blank=True, max_length=40,
        help_text="One of: " + ", ".join(ENCODINGS) + " (other spellings Python knows too).",
    )  # fmt: skip
    delimiter = serializers.CharField(
        required=False, allow_blank=True, max_length=10, trim_whitespace=False,
        help_text="',', ';', '|', a tab, or comma / semicolon / tab / pipe.",
    )  # fmt: skip
    quote_char = serializers.CharField(
        required=False, allow_blank=True, max_length=1, trim_whitespace=False,
        help_text="'\"' (default) or \"'\".",
    )  # fmt: skip
    decimal_comma = serializers.CharField(
        required=False, allow_blank=True, max_length=5, help_text="true or false."
    )
    thousands = serializers.CharField(
        required=False, allow_blank=True, max_length=10, trim_whitespace=False,
        help_text="The thousands separator: ',', '.', ' ', \"'\", comma / period / space / "
        "apostrophe, or none (default). It must differ from the decimal mark.",
    )  # fmt: skip
    header = serializers.CharField(
        required=False, allow_blank=True, max_length=5,
        help_text="true: the first line names the columns; false: it is data "
        "(columns are named column_1, column_2, ...).",
    )  # fmt: skip


def read_options(data: dict) -> dict:
    return {k: data[k] for k in OPTION_NAMES if k in data}


@extend_schema_serializer(component_name="DatasetReadingOutput")
class ReadingOutputSerializer(serializers.Serializer):
    encoding = serializers.CharField()
    encoding_label = serializers.CharField()
    delimiter = serializers.CharField()
    delimiter_name = serializers.ChoiceField(choices=list(DELIMITERS.values()))
    quote_char = serializers.ChoiceField(choices=list(QUOTE_CHARS))
    decimal_comma = serializers.BooleanField()
    thousands = serializers.CharField(
        allow_blank=True, help_text="The thousands separator ('' for none)."
    )
    header = serializers.BooleanField()
    columns = serializers.ListField(child=serializers.CharField(allow_blank=True))
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(allow_blank=True)),
        help_text="The first rows decoded and split this way (private: owners only).",
    )
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(
        allow_blank=True, help_text="Why the ingest would refuse the file read this way."
    )


def reading(preview: Preview) -> dict:
    dialect = preview.dialect
    return ReadingOutputSerializer(
        {
            **dialect.to_dict(),
            "encoding_label": ENCODINGS.get(dialect.encoding, dialect.encoding),
            "delimiter_name": DELIMITERS[dialect.delimiter],
            "columns": preview.columns,
            "rows": preview.rows,
            "warnings": [messages.warning_text(w) for w in preview.warnings],
            "error": preview.error,
        }
    ).data


class DatasetReadingApi(ApiView):
    @extend_schema(
        operation_id="datasets_reading",
        summary="How the upload is read: detected options and the first rows (owners)",
        description="Query parameters override the stored (detected) options for this preview.",
        parameters=[
            OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, required=False)
            for name in OPTION_NAMES
        ],
        responses={200: ReadingOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = owner_dataset(request, dataset_id)
        data = validated_input_from(ReadOptionsInputSerializer, request.query_params)
        preview = services.dataset_read_preview(
            dataset=dataset, actor=request.user, options=read_options(data)
        )
        return Response(reading(preview))

    @extend_schema(
        operation_id="datasets_reading_confirm",
        summary="Confirm how an awaiting upload is read, and queue its ingest (owners)",
        request=ReadOptionsInputSerializer,
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = owner_dataset(request, dataset_id)
        data = validated_input(ReadOptionsInputSerializer, request)
        dataset = services.dataset_confirm_reading(
            dataset=dataset, actor=request.user, options=read_options(data)
        )
        return Response(detail(dataset))


def validated_input_from(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
