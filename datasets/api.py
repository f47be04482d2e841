"""REST API of datasets: upload, status and progress, the declaration, the owners' profile.

Reviewers see declared (public) domains only; the profile computed from the data
is for the project's owners. Errors are mapped in dpportal.api.
"""

from __future__ import annotations

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.models import Membership
from budgets.selectors import project_get_for_member
from datasets import selectors, services
from datasets.models import Column, Dataset
from datasets.upload_limits import (
    declared_length_over_limit,
    limit_upload_size,
    upload_too_large_message,
)
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    AmountField,
    ApiView,
    error_responses,
    paginated,
    paginated_response,
    validated_input,
)
from dpportal.errors import UploadTooLarge

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
    derived_from_data = serializers.ListField(
        child=serializers.ChoiceField(choices=Column.Derived.choices),
        help_text="Parts of the declared domain filled in from the data's private profile "
        "(and confirmed by an owner for publication): 'categories', 'bounds'.",
    )


class DatasetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=Dataset.Status.choices)
    progress = serializers.FloatField(help_text="Fraction of the upload ingested (0 to 1).")
    failure_reason = serializers.CharField()
    uploaded_by = serializers.CharField(source="uploaded_by.username")
    uploaded_at = serializers.DateTimeField()
    declared = serializers.BooleanField()
    id_column = serializers.CharField(help_text="Empty: the privacy unit is one row.")
    contribution_bound = serializers.IntegerField(help_text="Rows kept per person (L).")
    unit_confirmed = serializers.SerializerMethodField(
        help_text="An owner confirmed the privacy unit (needed before any release)."
    )
    unit_confirmed_at = serializers.DateTimeField(allow_null=True)
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="Things to check about the upload that did not refuse it "
        "(e.g. a first line that looks like data rather than a header).",
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


def _detail(dataset: Dataset) -> dict:
    problem = selectors.dataset_usability_problem(dataset=dataset)
    return DatasetDetailOutputSerializer(
        {
            **{
                f: getattr(dataset, f)
                for f in DatasetOutputSerializer().fields
                if f not in ("project", "unit_confirmed")
            },
            "project": dataset.project,
            "uploaded_by": dataset.uploaded_by,
            "unit_confirmed": dataset.unit_confirmed_at is not None,
            "frozen": selectors.dataset_is_frozen(dataset=dataset),
            "usable": problem is None,
            "usability_problem": problem or "",
            "columns": list(dataset.columns.order_by("position")),
        }
    ).data


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
    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(
            allow_empty_file=True, help_text="CSV with a header line, UTF-8, plain or gzip."
        )
        name = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="",
            help_text="Defaults to the file's name.",
        )  # fmt: skip

    def initialize_request(self, request: HttpRequest, *args, **kwargs) -> Request:
        # Before anything (the session's CSRF check included) reads the body.
        self.upload_limit = limit_upload_size(request)
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="datasets_upload",
        summary="Upload a CSV (multipart); it is ingested by a worker (owners)",
        description="Poll the dataset's status until it is 'ready' (or 'failed' with a reason).",
        request={"multipart/form-data": InputSerializer},
        responses={201: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 413)},
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
        )
        return Response(_detail(dataset), status=status.HTTP_201_CREATED)


class DatasetDetailApi(ApiView):
    @extend_schema(
        operation_id="datasets_retrieve",
        summary="A dataset: status, privacy unit and declared public domains (members)",
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(dataset_id=dataset_id, user=request.user)
        return Response(_detail(dataset))


class DatasetStatusApi(ApiView):
    @extend_schema_serializer(component_name="DatasetStatusOutput")
    class OutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=Dataset.Status.choices)
        progress = serializers.FloatField()
        failure_reason = serializers.CharField()

    @extend_schema(
        operation_id="datasets_status",
        summary="Ingest status and progress (members)",
        responses={200: OutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(dataset_id=dataset_id, user=request.user)
        return Response(self.OutputSerializer(dataset).data)


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


def _profile(column: Column) -> dict:
    stored = column.profile or {}
    return {
        "type_": stored.get("type", column.suggested_type),
        "values": [str(v) for v in stored.get("values") or []],
        "more_values": bool(stored.get("more_values")),
        "range": stored.get("range") or None,
        "unreadable": stored.get("unreadable"),
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
        dataset = selectors.dataset_get_for_member(
            dataset_id=dataset_id, user=request.user, roles=OWNER
        )
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


class ColumnDeclarationInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["categorical", "numeric", "excluded"])
    categories = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list,
        max_length=1000, help_text="Categorical: the declared categories.",
    )  # fmt: skip
    lower = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Numeric: the public lower bound (exact decimal).",
    )  # fmt: skip
    upper = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Numeric: the public upper bound (exact decimal).",
    )  # fmt: skip
    bin_edges = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list,
        max_length=1000, help_text="Numeric: public histogram bin edges, increasing.",
    )  # fmt: skip
    missing = serializers.ChoiceField(choices=Column.Missing.values, default="drop")
    derived_from_data = serializers.ListField(
        child=serializers.ChoiceField(choices=Column.Derived.values), required=False,
        default=list, help_text="The parts you filled in from the private profile: "
        "'categories', 'bounds'. They need confirm_derived, and are shown as data-derived.",
    )  # fmt: skip
    confirm_derived = serializers.BooleanField(
        default=False,
        help_text="Confirm publishing the data-derived parts: a published value reveals that "
        "the data holds it (a rare category reveals that someone has it).",
    )


class DatasetDeclareApi(ApiView):
    @extend_schema_serializer(component_name="DatasetDeclareInput")
    class InputSerializer(serializers.Serializer):
        columns = serializers.DictField(
            child=ColumnDeclarationInputSerializer(),
            help_text="Column name -> its declaration (every column must be declared).",
        )
        id_column = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="",
            help_text="Name of the (excluded) column identifying a person; empty: one row.",
        )  # fmt: skip
        contribution_bound = serializers.IntegerField(
            min_value=1, max_value=10_000, default=1, help_text="Rows kept per person (L)."
        )
        privacy_unit = serializers.ChoiceField(
            choices=["row", "person"], required=False, allow_null=True, default=None,
            help_text="Your explicit choice of the privacy unit; giving it confirms the unit. "
            "Without it the unit is saved unconfirmed and no release may use the dataset.",
        )  # fmt: skip
        exclude_rest = serializers.BooleanField(
            default=False, help_text="Declare every column given no kind excluded."
        )

    @extend_schema(
        operation_id="datasets_declare",
        summary="Declare every column's PUBLIC domain and the privacy unit (owners)",
        description="All or nothing: on any problem nothing is saved and "
        "error.details.errors names the problems per column ('__all__' for general ones).",
        request=InputSerializer,
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(
            dataset_id=dataset_id, user=request.user, roles=OWNER
        )
        data = validated_input(self.InputSerializer, request)
        dataset = services.dataset_declare(
            dataset=dataset,
            actor=request.user,
            columns=data["columns"],
            id_column=data["id_column"],
            contribution_bound=data["contribution_bound"],
            unit=data["privacy_unit"],
            exclude_rest=data["exclude_rest"],
        )
        return Response(_detail(dataset))


class DatasetConfirmUnitApi(ApiView):
    @extend_schema_serializer(component_name="DatasetConfirmUnitInput")
    class InputSerializer(serializers.Serializer):
        privacy_unit = serializers.ChoiceField(
            choices=["row", "person"], help_text="The unit you confirm, as declared."
        )
        id_column = serializers.CharField(
            max_length=200, required=False, allow_blank=True, default="",
            help_text="Person: the declared ID column.",
        )  # fmt: skip
        contribution_bound = serializers.IntegerField(
            min_value=1, max_value=10_000, default=1, help_text="Person: the declared L."
        )

    @extend_schema(
        operation_id="datasets_confirm_unit",
        summary="Confirm the dataset's declared privacy unit (owners; needed before a release)",
        description="What you send must be the declared unit: a unit that changed meanwhile "
        "is refused, never confirmed unseen. Allowed on a frozen declaration.",
        request=InputSerializer,
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(
            dataset_id=dataset_id, user=request.user, roles=OWNER
        )
        data = validated_input(self.InputSerializer, request)
        dataset = services.dataset_confirm_unit(
            dataset=dataset,
            actor=request.user,
            unit=data["privacy_unit"],
            id_column=data["id_column"],
            contribution_bound=data["contribution_bound"],
        )
        return Response(_detail(dataset))


class DatasetDeleteApi(ApiView):
    @extend_schema(
        operation_id="datasets_delete",
        summary="Delete a dataset and its files, or dismiss a failed upload (owners; refused "
        "once a release uses it)",
        request=None,
        responses={204: None, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = selectors.dataset_get_for_member(
            dataset_id=dataset_id, user=request.user, roles=OWNER
        )
        services.dataset_delete(dataset=dataset, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
