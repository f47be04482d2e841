"""The accuracy preview: of a definition not yet saved, or of a saved release."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from budgets.selectors import project_get_for_member
from dpportal.api import (
    MEMBER_ERRORS,
    ApiView,
    error_responses,
)
from dpportal.errors import InvalidTransition
from releases import selectors, services
from releases.api.common import OWNER
from releases.api.drafts import ReleaseInputSerializer, release_input
from releases.models import Release, Statistic


class PreviewStatisticSerializer(serializers.Serializer):
    position = serializers.IntegerField(required=False)
    kind = serializers.ChoiceField(required=False, choices=Statistic.Kind.choices)
    label = serializers.CharField(required=False)
    columns = serializers.ListField(required=False, child=serializers.CharField())
    category = serializers.CharField(required=False, allow_null=True)
    epsilon = serializers.CharField(required=False)
    delta = serializers.CharField(required=False)
    hold = serializers.BooleanField(required=False)
    target_halfwidth = serializers.FloatField(required=False, allow_null=True)
    cells = serializers.IntegerField(required=False, help_text="Number of cells (values).")
    halfwidth = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Per-cell half-width at the confidence level, value units.",
    )
    halfwidth_simultaneous = serializers.FloatField(
        required=False, allow_null=True, help_text="Half-width holding for all cells at once."
    )
    epsilon_text = serializers.CharField(required=False, help_text="For people.")
    delta_text = serializers.CharField(required=False, help_text="For people.")
    cells_text = serializers.CharField(required=False, help_text="For people.")
    halfwidth_text = serializers.CharField(required=False, help_text="For people.")
    halfwidth_simultaneous_text = serializers.CharField(required=False, help_text="For people.")
    n_guess = serializers.IntegerField(required=False, allow_null=True)
    candidates = serializers.IntegerField(
        required=False, help_text="Quantiles: the number of candidates of the public grid."
    )
    rank_error = serializers.FloatField(
        required=False, help_text="Quantiles: rank-error bound of each quantile (ranks)."
    )
    rank_error_simultaneous = serializers.FloatField(
        required=False, help_text="Quantiles: rank-error bound holding for all quantiles at once."
    )
    value_error = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Quantiles: a planning figure of the rank error in the data's units, if the "
        "n_guess values were spread evenly over the grid (null without n_guess).",
    )
    value_error_simultaneous = serializers.FloatField(
        required=False, allow_null=True, help_text="Quantiles: the same for all at once."
    )
    interval_rank_reach = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Quantiles: a planning figure of how far, in ranks, the ends of each "
        "quantile's confidence interval lie from it.",
    )
    interval_value_reach = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Quantiles: the same in the data's units, if the n_guess values were spread "
        "evenly over the grid (null without n_guess, or on an open grid).",
    )
    open_grid = serializers.BooleanField(
        required=False, help_text="Quantiles: whether the grid is open (no upper bound)."
    )
    accuracy_text = serializers.CharField(
        required=False, help_text="Quantiles: the accuracy in words (data units and ranks)."
    )
    accuracy_simultaneous_text = serializers.CharField(
        required=False, help_text="Quantiles: the same for all quantiles at once."
    )


class PreviewOutputSerializer(serializers.Serializer):
    """The accuracy preview: computed from public parameters only, never from data.

    A submitted release's preview is the record frozen in its budget request; fields
    a record lacks are left out rather than invented.
    """

    dataset = serializers.IntegerField(required=False)
    mechanism = serializers.CharField(required=False)
    confidence = serializers.CharField(required=False)
    epsilon = serializers.CharField(required=False)
    delta = serializers.CharField(required=False)
    privacy_unit = serializers.DictField(required=False)
    statistics = PreviewStatisticSerializer(many=True, required=False)
    cost = serializers.DictField(required=False, child=serializers.CharField())
    budget = serializers.JSONField(
        required=False,
        help_text="Remaining budget now and after (only for unsubmitted previews), by the "
        "stated spend: epsilon_remaining, epsilon_remaining_after: the epsilon cap minus the "
        "tight loss at the cap's delta (the spend's epsilon), now and with this release, never "
        "negative when fits; delta_remaining, delta_remaining_after: the basic sums of deltas, "
        "at least 0 when fits; *_text for people; basic: the plain sums (basic composition), "
        "exact and signed: epsilon_remaining, delta_remaining, epsilon_remaining_after, "
        "delta_remaining_after.",
    )
    fits = serializers.BooleanField(
        required=False,
        help_text="The release fits under the project's cap: by the basic sums, or (with "
        "spend) by tight accounting, the rule approval applies.",
    )
    spend = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="The project's privacy loss before and after this release at the cap's "
        "delta (only for unsubmitted previews): before/after each with epsilon (the tightest "
        "bound), pld_epsilon (privacy loss distributions), rdp_epsilon (Renyi DP), "
        "basic_epsilon and basic_delta (plain sums), exact strings (null: no finite epsilon) "
        "and *_text for people; within, within_pld, within_rdp, within_basic; fit: how many "
        "releases like this one, this one included, fit under the cap. null when the "
        "ledger could not be accounted.",
    )
    tradeoff = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="With ?chart=1: accuracy against total epsilon. epsilons: totals (exact "
        "strings, log-spaced); series: per statistic its per-cell half-width at each total "
        "(value units; null where the mechanisms refuse the parameters); current: this "
        "release's total; remaining: the largest total of this release that still fits "
        "under the cap (null: none), remaining_at_limit: the search stopped at its limit.",
    )


def _frozen_preview(summary: object) -> dict[str, Any]:
    """The preview stored with a budget request, without any part not in the documented shape."""
    if not isinstance(summary, dict):
        return {}
    record = dict(summary)
    statistics = record.get("statistics")
    if not isinstance(statistics, list) or not all(isinstance(s, dict) for s in statistics):
        record.pop("statistics", None)
    for key in ("privacy_unit", "cost", "budget"):
        if not isinstance(record.get(key, {}), dict):
            record.pop(key)
    return record


CHART = OpenApiParameter(
    "chart",
    str,
    required=False,
    enum=["1"],
    description="1: add the accuracy-versus-epsilon chart's data (tradeoff).",
)


def _chart(request: Request) -> bool:
    return request.query_params.get("chart") == "1"


class ReleasePreviewApi(ApiView):
    @extend_schema(
        operation_id="releases_preview",
        summary="The accuracy preview of a release definition, without saving it (owners)",
        request=ReleaseInputSerializer,
        parameters=[CHART],
        responses={200: PreviewOutputSerializer, **error_responses(*MEMBER_ERRORS)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = project_get_for_member(slug=slug, user=request.user, roles=OWNER)
        preview = services.release_preview(
            project=project, data=release_input(request), chart=_chart(request)
        )
        return Response(PreviewOutputSerializer(preview).data)


class ReleaseSavedPreviewApi(ApiView):
    @extend_schema(
        operation_id="releases_preview_retrieve",
        summary="The accuracy preview of a saved release (members)",
        description="A draft's preview is computed now; a submitted release's is the one "
        "frozen in its budget request.",
        parameters=[CHART],
        responses={200: PreviewOutputSerializer, **error_responses(*MEMBER_ERRORS, 409)},
    )
    def get(self, request: Request, release_id: int) -> Response:
        release = selectors.release_get_for_member(release_id=release_id, user=request.user)
        if release.budget_request_id is not None:
            preview = _frozen_preview(release.budget_request.summary)
        elif release.status == Release.Status.DRAFT:
            preview = services.release_preview(
                project=release.project,
                data=services.release_form_data(release=release),
                chart=_chart(request),
            )
        else:
            raise InvalidTransition(
                gettext("This release is %(status)s: it has no preview.")
                % {"status": release.get_status_display().lower()}
            )
        return Response(PreviewOutputSerializer(preview).data)
