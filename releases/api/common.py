"""What the release API modules share: the release's detail and its data at a confidence."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from budgets.models import Membership
from dpportal.api import (
    AmountField,
    BilingualOutputField,
    FailureReasonField,
)
from releases.models import Release, Statistic
from releases.public import data as public_data
from releases.public import downloads
from releases.public import options as public_options
from releases.services.plan_crosstab import crosstab_input

OWNER = {Membership.Role.OWNER.value}


CONFIDENCE_PARAMETER = OpenApiParameter(
    "confidence",
    OpenApiTypes.STR,
    enum=list(public_options.CONFIDENCE_LEVELS),
    description="Confidence level of the intervals (default 0.95).",
)


class CrosstabOutputSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField())
    way = serializers.IntegerField(
        allow_null=True, help_text="Every table of up to this many columns; null: `marginals`."
    )
    marginals = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The tables listed, each a list of column names (empty with `way`).",
    )
    total = serializers.BooleanField(help_text="The total count is published too.")


class KeysOutputSerializer(serializers.Serializer):
    keys_per_person = serializers.IntegerField(help_text="Distinct keys of one person counted.")
    with_counts = serializers.BooleanField(help_text="Noisy counts are published with the keys.")
    max_keys = serializers.IntegerField(help_text="The most keys published.")


class StatisticOutputSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Statistic.Kind.choices)
    label = serializers.CharField()
    label_i18n = BilingualOutputField("label")
    description_i18n = BilingualOutputField("description")
    column = serializers.CharField(source="column.name", allow_null=True, default=None)
    column2 = serializers.CharField(source="column2.name", allow_null=True, default=None)
    category = serializers.CharField()
    lower = AmountField(allow_null=True)
    upper = AmountField(allow_null=True)
    weight = AmountField()
    hold = serializers.BooleanField()
    epsilon = AmountField(allow_null=True)
    delta = AmountField(allow_null=True)
    target_halfwidth = serializers.FloatField(allow_null=True)
    n_guess = serializers.IntegerField(allow_null=True)
    group_by = serializers.CharField(source="group_column.name", allow_null=True, default=None)
    group_by2 = serializers.CharField(source="group_column2.name", allow_null=True, default=None)
    quantiles = serializers.ListField(child=serializers.CharField())
    step = AmountField(allow_null=True)
    search = serializers.JSONField(
        help_text="Private bounds only (else {}): ends, outside, centre, unit, limit."
    )
    crosstab = serializers.SerializerMethodField(
        help_text="Cross-tabulation only (else null): its columns and the tables it publishes, "
        "as the input takes them."
    )

    keys = serializers.SerializerMethodField(
        help_text="Categories found in the data only (else null): its parameters."
    )

    @extend_schema_field(KeysOutputSerializer(allow_null=True))
    def get_keys(self, obj: Statistic) -> dict | None:
        return dict(obj.keys) if obj.keys else None

    @extend_schema_field(CrosstabOutputSerializer(allow_null=True))
    def get_crosstab(self, obj: Statistic) -> dict | None:
        if not obj.crosstab:
            return None
        given = crosstab_input(obj.crosstab)
        return {**given, "way": given["way"] or None}


class ReleaseEventOutputSerializer(serializers.Serializer):
    from_status = serializers.CharField()
    to_status = serializers.CharField()
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    comment = serializers.CharField()
    created_at = serializers.DateTimeField()


class ReleaseOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    dataset = serializers.IntegerField(source="dataset_id")
    title = serializers.CharField()
    title_i18n = BilingualOutputField("title")
    description = serializers.CharField()
    description_i18n = BilingualOutputField("description")
    status = serializers.ChoiceField(choices=Release.Status.choices)
    mechanism = serializers.ChoiceField(choices=Release.Mechanism.choices)
    confidence = AmountField()
    epsilon = AmountField(help_text="Total cost of the release.")
    delta = AmountField()
    progress = serializers.FloatField()
    failure_reason = FailureReasonField()
    budget_request = serializers.IntegerField(source="budget_request_id", allow_null=True)
    spec_hash = serializers.CharField()
    created_at = serializers.DateTimeField()
    computed_at = serializers.DateTimeField(allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)


class ReleaseDetailOutputSerializer(ReleaseOutputSerializer):
    statistics = StatisticOutputSerializer(many=True)
    events = ReleaseEventOutputSerializer(many=True)


def release_detail(release: Release) -> dict:
    release = Release.objects.select_related("project").get(pk=release.pk)
    return ReleaseDetailOutputSerializer(
        {
            **{
                f: getattr(release, f)
                for f in ReleaseOutputSerializer().fields
                if not f.endswith("_i18n")
            },
            "title_zh": release.title_zh,
            "description_zh": release.description_zh,
            "project": release.project,
            "failure_record": release.failure_record,
            "dataset_id": release.dataset_id,
            "budget_request_id": release.budget_request_id,
            "statistics": release.statistics.select_related(
                "column", "column2", "group_column", "group_column2"
            ),
            "events": release.events.select_related("actor"),
        }
    ).data


class ReleaseDataOutputSerializer(serializers.Serializer):
    """Noisy values with their intervals at one confidence level (never a true aggregate)."""

    release = serializers.DictField()
    confidence = serializers.CharField()
    interval_note = serializers.CharField()
    statistics = serializers.ListField(child=serializers.DictField())


def release_data(release: Release, *, confidence: str) -> dict:
    data = public_data.release_public_data(release=release, levels=(confidence,))
    return ReleaseDataOutputSerializer(
        downloads.release_download_data(data=data, confidence=confidence)
    ).data
