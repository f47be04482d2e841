"""Serializers of the review document (releases.review.types.ReviewDocument).

Exact values as strings (AmountField for Decimals, ExactNumberField for the
math's Fractions and floats), next to the `*_text` fields written for people
with dpportal.formatting. Never a float in JSON, never a Python repr.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from budgets import selectors
from dpportal import formatting
from dpportal.api import AmountField
from dpportal.privacy.params import exact_str


@extend_schema_field(OpenApiTypes.STR)
class ExactNumberField(serializers.Field):
    """An exact number as a string: a Decimal or float as plain digits, a Fraction as
    a finite decimal or "p/q" (e.g. a Laplace scale of 10/3). Never a float in JSON."""

    def to_representation(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, Fraction):
            return exact_str(value)
        return formatting.exact(value)


class BudgetStandingSerializer(serializers.Serializer):
    """The budget before and after the request; a decided one as it stood at the decision."""

    moment = serializers.ChoiceField(
        choices=["now", "approval", "rejection", "withdrawn"],
        help_text="now: a pending request; approval: just before its cost was reserved; "
        "rejection: at the rejection; withdrawn: withdrawn before any decision.",
    )
    at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField()
    before_label = serializers.CharField()
    after_label = serializers.CharField()
    epsilon_cost = AmountField()
    delta_cost = AmountField()
    epsilon_cap = AmountField()
    delta_cap = AmountField()
    epsilon_before = AmountField(help_text="Remaining epsilon before, by the basic sums.")
    delta_before = AmountField(help_text="Remaining delta before, by the basic sums.")
    epsilon_after = AmountField(help_text="Remaining epsilon after, by the basic sums.")
    delta_after = AmountField(help_text="Remaining delta after, by the basic sums.")
    tight_epsilon_before = AmountField(
        allow_null=True,
        help_text="Remaining epsilon before by the stated spend: the cap minus the tight loss "
        "at the cap's delta, at least 0 (null: not accounted).",
    )
    tight_epsilon_after = AmountField(
        allow_null=True,
        help_text="The same after the request; never negative when fits (null: not accounted).",
    )
    fits = serializers.BooleanField()
    text = serializers.SerializerMethodField()

    def get_text(self, obj: selectors.BudgetStanding) -> str:
        def pair(eps: Decimal, delta: Decimal) -> str:
            return f"epsilon {formatting.budget(eps)}, delta {formatting.budget(delta)}"

        basic = (
            f"{obj.before_label}: {pair(obj.epsilon_before, obj.delta_before)}. "
            f"{obj.after_label}: {pair(obj.epsilon_after, obj.delta_after)}."
        )
        if obj.tight_epsilon_before is None or obj.tight_epsilon_after is None:
            return basic
        return (
            f"Tight accounting at delta {formatting.budget(obj.delta_cap)}: "
            f"{obj.before_label}: epsilon {formatting.budget(obj.tight_epsilon_before)}. "
            f"{obj.after_label}: epsilon {formatting.budget(obj.tight_epsilon_after)}. "
            f"By the basic sums: {basic}"
        )


class SpendStandingSerializer(serializers.Serializer):
    """The project's privacy loss before and after the request under tight accounting.

    epsilon_*: the tightest valid bound at the cap's delta; pld_epsilon_*: the tight
    bound, privacy loss distributions or Renyi DP whichever is smaller
    (dpportal.privacy.pld, Spend.tight_epsilon; within_pld likewise); basic_*: the plain
    sums. null: no finite epsilon at that delta. fit: how many releases like this one
    (this one included) fit under the cap by any bound.
    """

    moment = serializers.ChoiceField(choices=["now", "approval", "rejection", "withdrawn"])
    at = serializers.DateTimeField(allow_null=True)
    before_label = serializers.CharField()
    after_label = serializers.CharField()
    epsilon_cap = AmountField()
    delta_cap = AmountField()
    epsilon_before = ExactNumberField(allow_null=True)
    epsilon_after = ExactNumberField(allow_null=True)
    pld_epsilon_before = ExactNumberField(allow_null=True)
    pld_epsilon_after = ExactNumberField(allow_null=True)
    basic_epsilon_before = ExactNumberField()
    basic_delta_before = ExactNumberField()
    basic_epsilon_after = ExactNumberField()
    basic_delta_after = ExactNumberField()
    within = serializers.BooleanField()
    within_pld = serializers.BooleanField()
    within_basic = serializers.BooleanField()
    fit = serializers.IntegerField(allow_null=True)
    fit_at_least = serializers.BooleanField()
    text = serializers.SerializerMethodField()

    def get_text(self, obj: selectors.SpendStanding) -> str:
        def eps(value: float | None) -> str:
            return "unbounded" if value is None else formatting.budget(value)

        fit = (
            f" {obj.fit_text} releases like this one fit under the cap (this one included)."
            if obj.fit is not None
            else ""
        )
        return (
            f"Tight accounting at delta {formatting.budget(obj.delta_cap)}: "
            f"{obj.before_label}: epsilon {eps(obj.epsilon_before)} "
            f"(basic sum {formatting.budget(obj.basic_epsilon_before)}). "
            f"{obj.after_label}: epsilon {eps(obj.epsilon_after)} "
            f"(basic sum {formatting.budget(obj.basic_epsilon_after)}).{fit}"
        )


class StatisticLineSerializer(serializers.Serializer):
    """One statistic of the request's recorded preview (exact values as strings)."""

    number = serializers.IntegerField()
    label = serializers.CharField()
    kind = serializers.CharField()
    kind_text = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    epsilon = AmountField(allow_null=True)
    delta = AmountField(allow_null=True)
    halfwidth = AmountField(allow_null=True)
    halfwidth_simultaneous = AmountField(allow_null=True)


class ColumnReviewSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    categories = serializers.ListField(child=serializers.CharField())
    lower = AmountField(allow_null=True)
    upper = AmountField(allow_null=True)
    bin_edges = serializers.ListField(child=ExactNumberField())
    missing = serializers.CharField()
    derived_from_data = serializers.ListField(
        child=serializers.CharField(),
        help_text="Parts of the domain filled in from the data (categories, bounds).",
    )
    domain_text = serializers.CharField()


class NoiseReviewSerializer(serializers.Serializer):
    part = serializers.CharField(help_text="'' for one noise draw; 'sum' or 'count' for a mean.")
    distribution = serializers.CharField()
    parameter = serializers.CharField()
    scale = ExactNumberField(help_text="Laplace scale b or Gaussian sigma, in the data's units.")
    unit = serializers.CharField()
    l1_sensitivity = ExactNumberField()
    l2_sensitivity = ExactNumberField()
    granularity = ExactNumberField()
    epsilon = ExactNumberField()
    delta = ExactNumberField()
    scale_text = serializers.CharField()
    sensitivity_text = serializers.CharField()


class StatisticReviewSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    label = serializers.CharField()
    kind = serializers.CharField()
    kind_text = serializers.CharField()
    estimates_text = serializers.CharField()
    columns = ColumnReviewSerializer(many=True)
    category = serializers.CharField()
    clip_lower = AmountField(allow_null=True)
    clip_upper = AmountField(allow_null=True)
    clip_text = serializers.CharField()
    cells = serializers.IntegerField()
    out_of_range_text = serializers.CharField()
    missing_text = serializers.CharField()
    mechanism = serializers.CharField()
    mechanism_text = serializers.CharField()
    epsilon = AmountField()
    delta = AmountField()
    noise = NoiseReviewSerializer(many=True)
    unit = serializers.CharField()
    n_guess = serializers.IntegerField(allow_null=True)
    halfwidth = ExactNumberField(allow_null=True)
    halfwidth_simultaneous = ExactNumberField(allow_null=True)
    halfwidth_text = serializers.CharField()
    halfwidth_simultaneous_text = serializers.CharField()


class PrivacyUnitReviewSerializer(serializers.Serializer):
    id_column = serializers.CharField()
    contribution_bound = serializers.IntegerField()
    text = serializers.CharField()
    project_text = serializers.CharField()


class EarlierReleaseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.CharField()
    status_text = serializers.CharField()
    epsilon = AmountField()
    delta = AmountField()
    requested_at = serializers.DateTimeField(allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)


class ReviewDocumentSerializer(serializers.Serializer):
    """What a reviewer judges: releases.review.types.ReviewDocument."""

    dataset = serializers.CharField(source="dataset_name")
    mechanism = serializers.CharField()
    mechanism_text = serializers.CharField()
    confidence = AmountField(allow_null=True)
    confidence_text = serializers.CharField()
    privacy_unit = PrivacyUnitReviewSerializer(allow_null=True)
    notice = serializers.CharField()
    statistics = StatisticReviewSerializer(many=True)
    preview = StatisticLineSerializer(source="preview_lines", many=True)
    budget = BudgetStandingSerializer()
    spend = SpendStandingSerializer(allow_null=True)
    earlier_releases = EarlierReleaseSerializer(many=True)
    earlier_epsilon_spent = AmountField()
    earlier_delta_spent = AmountField()
