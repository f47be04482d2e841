"""REST API of a dataset's declaration: public domains, privacy unit, its confirmation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from datasets import services
from datasets.api.common import (
    DatasetDetailOutputSerializer,
    owner_dataset,
    owner_dataset_change,
)
from datasets.domains import DATE_BINS, DATE_FORMATS
from datasets.models import Column
from dpportal.api import MEMBER_ERRORS, ApiView, error_responses


class ColumnDeclarationInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["categorical", "numeric", "date", "excluded"],
        help_text="Any kind whatever the stored type (the type override): a text column "
        "declared numeric counts cells that are not finite numbers as missing.",
    )
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
    missing_codes = serializers.ListField(
        child=serializers.CharField(max_length=50), required=False, default=list,
        max_length=20, help_text="Public values meaning 'missing' (e.g. '-9', '999'): every "
        "release computation treats them as missing.",
    )  # fmt: skip
    date_lower = serializers.CharField(
        max_length=10, required=False, allow_blank=True, default="",
        help_text="Date: the public first date, YYYY-MM-DD.",
    )  # fmt: skip
    date_upper = serializers.CharField(
        max_length=10, required=False, allow_blank=True, default="",
        help_text="Date: the public last date, YYYY-MM-DD.",
    )  # fmt: skip
    date_bin = serializers.ChoiceField(
        choices=list(DATE_BINS), required=False, allow_blank=True, default="",
        help_text="Date: the bins (the column's categories are the bins of the range).",
    )  # fmt: skip
    date_format = serializers.ChoiceField(
        choices=list(DATE_FORMATS), default="YYYY-MM-DD",
        help_text="Date: how the cells write a date (a time after it is ignored).",
    )  # fmt: skip
    category_labels = serializers.DictField(
        child=serializers.JSONField(), required=False, default=dict,
        help_text='Categorical, optional: public labels of the declared categories, code -> '
        'a label (English) or {"en": ..., "zh-hans": ...}. At most 200 characters each; two '
        "codes may not share one label in a language; a label only for a declared code.",
    )  # fmt: skip
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


def id_column_field(help_text: str) -> serializers.CharField:
    """The optional name of the column identifying a person (empty: the unit is one row)."""
    return serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text=help_text
    )


def contribution_bound_field(help_text: str) -> serializers.IntegerField:
    """L, the rows kept per person (1 for a row unit)."""
    return serializers.IntegerField(min_value=1, max_value=10_000, default=1, help_text=help_text)


class DatasetDeclareApi(ApiView):
    @extend_schema_serializer(component_name="DatasetDeclareInput")
    class InputSerializer(serializers.Serializer):
        columns = serializers.DictField(
            child=ColumnDeclarationInputSerializer(),
            help_text="Column name -> its declaration (every column must be declared).",
        )
        id_column = id_column_field(
            "Name of the (excluded) column identifying a person; empty: one row."
        )
        contribution_bound = contribution_bound_field("Rows kept per person (L).")
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
        return owner_dataset_change(
            request,
            dataset_id,
            self.InputSerializer,
            lambda dataset, data: services.dataset_declare(
                dataset=dataset,
                actor=request.user,
                columns=data["columns"],
                id_column=data["id_column"],
                contribution_bound=data["contribution_bound"],
                unit=data["privacy_unit"],
                exclude_rest=data["exclude_rest"],
            ),
        )


class DatasetConfirmUnitApi(ApiView):
    @extend_schema_serializer(component_name="DatasetConfirmUnitInput")
    class InputSerializer(serializers.Serializer):
        privacy_unit = serializers.ChoiceField(
            choices=["row", "person"], help_text="The unit you confirm, as declared."
        )
        id_column = id_column_field("Person: the declared ID column.")
        contribution_bound = contribution_bound_field("Person: the declared L.")

    @extend_schema(
        operation_id="datasets_confirm_unit",
        summary="Confirm the dataset's declared privacy unit (owners; needed before a release)",
        description="What you send must be the declared unit: a unit that changed meanwhile "
        "is refused, never confirmed unseen. Allowed on a frozen declaration.",
        request=InputSerializer,
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        return owner_dataset_change(
            request,
            dataset_id,
            self.InputSerializer,
            lambda dataset, data: services.dataset_confirm_unit(
                dataset=dataset,
                actor=request.user,
                unit=data["privacy_unit"],
                id_column=data["id_column"],
                contribution_bound=data["contribution_bound"],
            ),
        )


class DatasetCodebookApi(ApiView):
    @extend_schema_serializer(component_name="DatasetCodebook")
    class CodebookSerializer(serializers.Serializer):
        codebook = serializers.CharField(
            max_length=2 << 20,
            trim_whitespace=False,
            help_text="The codebook CSV (header: column,kind,categories,lower,upper,bin_edges,"
            "missing_codes,missing,date_lower,date_upper,date_bin,date_format,"
            "category_labels,category_labels_zh; only column and kind required; lists "
            "separated by '|'; the labels in the order of the categories).",
        )

    @extend_schema(
        operation_id="datasets_codebook_export",
        summary="The current declaration as a codebook CSV (owners)",
        responses={200: CodebookSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = owner_dataset(request, dataset_id)
        return Response({"codebook": services.export_codebook(dataset=dataset)})

    @extend_schema(
        operation_id="datasets_codebook_import",
        summary="Declare the columns a codebook lists (owners; all or nothing)",
        description="On any problem nothing is saved and error.details.errors['__all__'] "
        "names each problem with its line. Columns left out keep their declaration; the "
        "privacy unit is unchanged.",
        request=CodebookSerializer,
        responses={200: DatasetDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        def change(dataset, data):
            content = data["codebook"].encode("utf-8")
            services.dataset_import_codebook(dataset=dataset, actor=request.user, content=content)
            dataset.refresh_from_db()
            return dataset

        return owner_dataset_change(request, dataset_id, self.CodebookSerializer, change)
