"""Drafts: list, create, read and replace a release with its statistics (owners edit)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.selectors import project_get_for_member
from dpportal.api import (
    MEMBER_ERRORS,
    PAGINATION_PARAMETERS,
    ApiView,
    BilingualTextField,
    error_responses,
    paginated,
    paginated_response,
    validated_input,
)
from releases import selectors, services
from releases.api.common import (
    OWNER,
    ReleaseDetailOutputSerializer,
    ReleaseOutputSerializer,
    release_detail,
)
from releases.models import Release, Statistic


class StatisticInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Statistic.Kind.values)
    label = BilingualTextField(max_length=200, required=False, default="")
    description = BilingualTextField(max_length=5000, required=False, default="")
    column = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="Column name (count of one category, histogram, sum, mean, argmax).",
    )  # fmt: skip
    column2 = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="Second column of a 2-D histogram.",
    )  # fmt: skip
    category = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="Count only: count the rows in this declared category.",
    )  # fmt: skip
    lower = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Sum/mean: clipping bound (public); default: the column's declared bound.",
    )  # fmt: skip
    upper = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None
    )
    cap = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Rows per person: the most rows per person to resolve (default 1000; "
        "persons with more are counted together). Stored and returned as `upper`.",
    )  # fmt: skip
    weight = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Share of the epsilon left after held and targeted statistics.",
    )  # fmt: skip
    hold = serializers.BooleanField(required=False, default=False)
    epsilon = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Held statistics: their own epsilon.",
    )  # fmt: skip
    target_halfwidth = serializers.FloatField(
        required=False, allow_null=True, default=None,
        help_text="Solve this statistic's epsilon for a per-cell half-width (quantiles: a "
        "rank error, in ranks).",
    )  # fmt: skip
    n_guess = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=10**12,
        help_text="Mean, grouped mean (smallest group's rows), standard deviation, variance: "
        "a planning guess of n, used for the preview only. Quantiles (optional): the rows "
        "with a value, to state their accuracy in the data's units beside the rank error.",
    )  # fmt: skip
    group_by = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="Grouped sum/mean (required), standard deviation/variance (optional): a "
        "declared categorical or binned column to group by.",
    )  # fmt: skip
    group_by2 = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="A second grouping column (optional).",
    )  # fmt: skip
    quantiles = serializers.ListField(
        child=serializers.CharField(max_length=32), required=False, default=list, max_length=20,
        help_text='Quantiles only: e.g. ["0.25", "0.5", "0.75"] (each strictly between 0 and 1).',
    )  # fmt: skip
    step = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Quantiles only: step of the candidate grid within [lower, upper]; empty: "
        "the column's declared bin edges are the candidates.",
    )  # fmt: skip
    columns = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list, max_length=10,
        help_text="Cross-tabulation only: 1 to 10 declared columns (categorical with "
        "categories, or numeric or date with bin edges), in the order their tables list them.",
    )  # fmt: skip
    way = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=3,
        help_text="Cross-tabulation: publish every table of up to this many of its columns "
        "(1, 2 or 3); or give `marginals` instead.",
    )  # fmt: skip
    marginals = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(max_length=200), max_length=3),
        required=False, default=list, max_length=200,
        help_text='Cross-tabulation: the tables to publish, each a list of its columns, e.g. '
        '[["age", "sex"], ["region"]]; or give `way` instead.',
    )  # fmt: skip
    total = serializers.BooleanField(
        required=False, default=False,
        help_text="Cross-tabulation: publish the total count too.",
    )  # fmt: skip
    ends = serializers.ChoiceField(
        choices=["both", "upper", "lower"], required=False, default="both",
        help_text="Private bounds only: which bounds to search.",
    )  # fmt: skip
    outside = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=10**9,
        help_text="Private bounds only: values allowed beyond each bound (default 5).",
    )  # fmt: skip
    centre = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Private bounds only: the search's public start point, a value known to lie "
        "inside the data's range without looking at the data (default 0).",
    )  # fmt: skip
    unit = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Private bounds only: the search's smallest step (default 1).",
    )  # fmt: skip
    limit = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True, default=None,
        help_text="Private bounds only: the largest distance searched (default 10^12).",
    )  # fmt: skip
    keys_per_person = serializers.IntegerField(
        required=False, default=1, min_value=1, max_value=100,
        help_text="Categories found in the data: at most this many distinct keys of one person "
        "are counted (at most the contribution bound L; 1 without a person column).",
    )  # fmt: skip
    with_counts = serializers.BooleanField(
        required=False, default=True,
        help_text="Categories found in the data: publish each key's noisy count (else keys only).",
    )  # fmt: skip
    max_keys = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1,
        help_text="Categories found in the data: the most keys to publish "
        "(default and limit: the setting RELEASE_KEYS_MAX_SHOWN).",
    )  # fmt: skip


class ReleaseInputSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(help_text="A ready, declared dataset of the project.")
    title = BilingualTextField(max_length=200, required=False, default="")
    description = BilingualTextField(max_length=5000, required=False, default="")
    mechanism = serializers.ChoiceField(choices=Release.Mechanism.choices, default="laplace")
    confidence = serializers.ChoiceField(choices=["0.90", "0.95", "0.99"], default="0.95")
    epsilon = serializers.CharField(max_length=64, help_text="Total epsilon (exact decimal).")
    delta = serializers.CharField(
        max_length=64, required=False, default="0", help_text="Gaussian only: total delta."
    )
    statistics = serializers.ListField(
        child=StatisticInputSerializer(), min_length=1, max_length=services.MAX_STATISTICS
    )


def release_input(request: Request) -> dict[str, Any]:
    """The release definition in the request body, checked, as the builder takes it."""
    validated = validated_input(ReleaseInputSerializer, request)
    return {**validated, "statistics": [dict(s) for s in validated["statistics"]]}


class ReleaseListApi(ApiView):
    @extend_schema(
        operation_id="releases_list",
        summary="The project's releases (members)",
        parameters=PAGINATION_PARAMETERS,
        responses={200: paginated(ReleaseOutputSerializer), **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user)
        return paginated_response(
            serializer_class=ReleaseOutputSerializer,
            queryset=selectors.release_list_for_project(project=project).select_related("project"),
            request=request,
            view=self,
        )


class ReleaseCreateApi(ApiView):
    @extend_schema(
        operation_id="releases_create",
        summary="Create a draft release with its statistics (owners)",
        description="Validated as a whole (including that its cost fits the remaining "
        "budget); on any problem nothing is written.",
        request=ReleaseInputSerializer,
        responses={201: ReleaseDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user, roles=OWNER)
        release = services.release_save_draft(
            project=project, actor=request.user, data=release_input(request)
        )
        return Response(release_detail(release), status=status.HTTP_201_CREATED)


class ReleaseDetailApi(ApiView):
    @extend_schema(
        operation_id="releases_retrieve",
        summary="A release: parameters, statistics, status and history (members)",
        responses={200: ReleaseDetailOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def get(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(release_id=release_id, user=request.user)
        return Response(release_detail(release))


class ReleaseUpdateApi(ApiView):
    @extend_schema(
        operation_id="releases_update",
        summary="Replace a draft's parameters and statistics (owners; drafts only)",
        request=ReleaseInputSerializer,
        responses={200: ReleaseDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def put(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(
            release_id=release_id, user=request.user, roles=OWNER
        )
        release = services.release_save_draft(
            project=release.project,
            actor=request.user,
            data=release_input(request),
            release=release,
        )
        return Response(release_detail(release))


class ReleaseCloneApi(ApiView):
    @extend_schema(
        operation_id="releases_clone",
        summary="Clone a rejected or withdrawn release into a new draft (owners)",
        description="The new draft has the same dataset, parameters and statistics and goes "
        "through the same validation as any draft (the dataset must still be usable and the "
        "cost fit the remaining budget); on any problem nothing is written.",
        request=None,
        responses={201: ReleaseDetailOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def post(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(
            release_id=release_id, user=request.user, roles=OWNER
        )
        clone = services.release_clone(release=release, actor=request.user)
        return Response(release_detail(clone), status=status.HTTP_201_CREATED)
