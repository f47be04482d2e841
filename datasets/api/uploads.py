"""REST API of datasets: list, upload, detail, ingest status and progress, delete."""

from __future__ import annotations

import logging

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.selectors import project_get_for_member
from datasets import selectors, services
from datasets.api.common import (
    OWNER,
    DatasetDetailOutputSerializer,
    DatasetOutputSerializer,
    detail,
    owner_dataset,
)
from datasets.api.reading import (
    ReadingOutputSerializer,
    ReadOptionsInputSerializer,
    read_options,
    reading,
)
from datasets.models import Dataset
from datasets.upload_limits import (
    declared_length_over_limit,
    limit_upload_size,
    upload_too_large_message,
)
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    ApiView,
    FailureReasonField,
    error_responses,
    paginated,
    paginated_response,
    validated_input,
)
from dpportal.errors import UploadTooLarge

logger = logging.getLogger(__name__)


class DatasetListApi(ApiView):
    @extend_schema(
        operation_id="datasets_list",
        summary="The project's datasets (members)",
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(DatasetOutputSerializer), **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user)
        return paginated_response(
            serializer_class=DatasetOutputSerializer,
            queryset=selectors.dataset_list_for_project(project=project).select_related(
                "project", "uploaded_by"
            ),
            request=request,
            view=self,
        )


class DatasetUploadApi(ApiView):
    parser_classes = [MultiPartParser]

    @extend_schema_serializer(component_name="DatasetUploadInput")
    class InputSerializer(ReadOptionsInputSerializer):
        file = serializers.FileField(
            allow_empty_file=True,
            help_text="A table with a header: CSV or TSV (any offered encoding and dialect; "
            "a TSV's delimiter preset to tab), Excel .xlsx, Parquet, Stata .dta, "
            "SPSS .sav/.zsav, SAS .sas7bdat/.xpt; each plain, gzip (.gz) or alone in a "
            ".zip. The type is told by the file's extension and checked against its bytes.",
        )
        name = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="",
            help_text="Defaults to the file's name.",
        )  # fmt: skip
        sheet = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="",
            help_text="Excel only: the sheet to read, by name or by number from 1 (the first "
            "one if blank; a sheet whose name is the number wins). Refused for other formats.",
        )  # fmt: skip
        review = serializers.BooleanField(
            required=False, default=False,
            help_text="CSV and TSV only: wait for a confirmation (datasets_reading_confirm) even "
            "when the detection is plain or options are given.",
        )  # fmt: skip

    @extend_schema_serializer(component_name="DatasetUploadOutput")
    class OutputSerializer(DatasetDetailOutputSerializer):
        reading = ReadingOutputSerializer(
            allow_null=True,
            help_text="What was detected and the first rows read that way (null for other "
            "formats than CSV, or when the file's start is unreadable: the ingest then "
            "refuses it with the reason).",
        )

    def initialize_request(self, request: HttpRequest, *args, **kwargs) -> Request:
        # Before anything (the session's CSRF check included) reads the body.
        self.upload_limit = limit_upload_size(request)
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="datasets_upload",
        summary="Upload a data file (multipart); it is ingested by a worker (owners)",
        description="Other formats than CSV and TSV are queued at once. For a CSV or TSV "
        "(plain or gzip) the encoding, delimiter, quote, decimal mark and header are detected; "
        "given options override the detection. A plain upload (UTF-8, comma or a TSV's "
        "tab, header) or one with options given is queued at once: poll the dataset's "
        "status until it is 'ready' (or 'failed' with a reason). Otherwise (or with "
        "review=true) its status is 'awaiting': check `reading` and confirm with "
        "datasets_reading_confirm.",
        request={"multipart/form-data": InputSerializer},
        responses={201: OutputSerializer, **error_responses(*MEMBER_ERRORS, 413)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user, roles=OWNER)
        if declared_length_over_limit(request):  # refuse before reading the body
            raise UploadTooLarge(upload_too_large_message())
        request.data  # noqa: B018 (parsed here: the upload handler stops a file over the limit)
        if self.upload_limit.exceeded:
            raise UploadTooLarge(self.upload_limit.message())
        data = validated_input(self.InputSerializer, request)
        dataset = services.dataset_create(
            project=project,
            name=data["name"],
            uploaded_file=data["file"],
            uploaded_by=request.user,
            sheet=data["sheet"],
            read_options=read_options(data),
            review=data["review"],
        )
        return Response(created_body(dataset, request.user), status=status.HTTP_201_CREATED)


def created_body(dataset: Dataset, user) -> dict:
    """The 201 body of an upload, which cannot fail: the dataset is committed by now, so
    an error here would answer 500 for a change that was made. The preview reads the
    upload, which a fast worker may already have ingested and removed; a failed preview
    is `reading: null`, and a failed detail (the database away) the dataset's id,
    name and status as known here (both logged by type only: texts may quote data)."""
    try:
        body = detail(dataset)
    except Exception as exc:
        logger.warning("dataset %s: created; detail not read (%s)", dataset.pk, type(exc).__name__)
        body = {"id": dataset.pk, "name": dataset.name, "status": dataset.status}
    body["reading"] = None
    if dataset.source_file and dataset.read_options:
        try:
            preview = services.dataset_read_preview(dataset=dataset, actor=user)
            body["reading"] = reading(preview)
        except Exception as exc:
            logger.warning(
                "dataset %s: created; preview not read (%s)", dataset.pk, type(exc).__name__
            )
    return body


class DatasetDetailApi(ApiView):
    @extend_schema(
        operation_id="datasets_retrieve",
        summary="A dataset: status, privacy unit and declared public domains (members)",
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(dataset_id=dataset_id, user=request.user)
        return Response(detail(dataset))


class DatasetStatusApi(ApiView):
    @extend_schema_serializer(component_name="DatasetStatusOutput")
    class OutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=Dataset.Status.choices)
        progress = serializers.FloatField()
        failure_reason = FailureReasonField()

    @extend_schema(
        operation_id="datasets_status",
        summary="Ingest status and progress (members)",
        responses={200: OutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(dataset_id=dataset_id, user=request.user)
        return Response(self.OutputSerializer(dataset).data)


class DatasetDeleteApi(ApiView):
    @extend_schema(
        operation_id="datasets_delete",
        summary="Delete a dataset and its files, or dismiss a failed upload (owners; refused "
        "once a release uses it)",
        request=None,
        responses={204: None, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = owner_dataset(request, dataset_id)
        services.dataset_delete(dataset=dataset, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
