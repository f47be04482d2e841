"""Releases, their statistics, lifecycle events and (noisy) results.

Only noisy values are ever persisted. Results are written once, in the same
transaction that charges the ledger, and never change afterwards.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from budgets.models import DELTA_FIELD, EPSILON_FIELD, BudgetRequest, Project
from datasets.models import Column, Dataset


class Release(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        SUBMITTED = "submitted", _("Submitted for review")
        APPROVED = "approved", _("Approved")
        QUEUED = "queued", _("Queued")
        COMPUTING = "computing", _("Computing")
        COMPUTED = "computed", _("Computed")
        PUBLISHED = "published", pgettext_lazy("status", "Published")
        REJECTED = "rejected", _("Rejected")
        WITHDRAWN = "withdrawn", _("Withdrawn")
        FAILED = "failed", _("Failed")

    class Mechanism(models.TextChoices):
        LAPLACE = "laplace", _("Laplace (pure epsilon-DP)")
        GAUSSIAN = "gaussian", _("Gaussian ((epsilon, delta)-DP)")

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="releases")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="releases")
    title = models.CharField(max_length=200)
    title_zh = models.CharField(max_length=200, blank=True, help_text="The title in Chinese.")
    description = models.TextField(blank=True)
    description_zh = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    mechanism = models.CharField(max_length=16, choices=Mechanism.choices, default="laplace")
    confidence = models.DecimalField(max_digits=4, decimal_places=3, default=0.95)
    epsilon = models.DecimalField(**EPSILON_FIELD, help_text="Total epsilon of the release.")
    delta = models.DecimalField(**DELTA_FIELD, default=0)
    # Frozen at submission: the full specification and its SHA-256.
    spec = models.JSONField(null=True, blank=True)
    spec_hash = models.CharField(max_length=64, blank=True)
    budget_request = models.OneToOneField(
        BudgetRequest, on_delete=models.PROTECT, null=True, blank=True, related_name="release"
    )
    progress = models.FloatField(default=0.0, help_text="Fraction of the data's chunks done.")
    # When the compute task was last sent, and when a worker last reported progress:
    # the periodic re-dispatch uses them to find releases the broker lost.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When a worker first began reading the dataset's rows for this release: from then
    # on a failure spends the reservation (releases.lifecycle.release_fail says why).
    data_read_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    # The failure reason as message records (dpportal.messages), translated when shown;
    # empty for rows failed before records were kept (failure_reason is shown then).
    failure_record = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(epsilon__gt=0), name="release_epsilon_gt_0"),
            models.CheckConstraint(
                condition=Q(delta__gte=0) & Q(delta__lt=1), name="release_delta_in_0_1"
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Statistic(models.Model):
    class Kind(models.TextChoices):
        COUNT = "count", _("Count")
        HISTOGRAM = "histogram", _("Histogram")
        SUM = "sum", _("Clipped sum")
        MEAN = "mean", _("Mean")
        ARGMAX = "argmax", _("Most common category")
        GROUPED_SUM = "grouped_sum", _("Clipped sum by group")
        GROUPED_MEAN = "grouped_mean", _("Mean by group")
        QUANTILES = "quantiles", _("Median and quantiles")
        STDDEV = "stddev", _("Standard deviation")
        VARIANCE = "variance", _("Variance")
        CROSSTAB = "crosstab", _("Cross-tabulation")
        BOUNDS = "bounds", _("Private bounds")
        KEYS = "keys", _("Categories found in the data")
        ROWS_PER_PERSON = "rows_per_person", _("Rows per person")

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="statistics")
    position = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=200, blank=True)
    label_zh = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    description_zh = models.TextField(blank=True)
    column = models.ForeignKey(
        Column, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    column2 = models.ForeignKey(
        Column, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # grouped kinds (and optionally stddev/variance): declared categorical or binned columns
    group_column = models.ForeignKey(
        Column, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    group_column2 = models.ForeignKey(
        Column, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # quantiles only: the quantiles (exact decimal strings, ascending) and the candidate
    # grid's step within [lower, upper] (null: the column's declared bin edges)
    quantiles = models.JSONField(default=list, blank=True)
    step = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    # cross-tabulation only: {"columns": [names], "way": K or null, "marginals": [[column
    # indices], ...] (canonical, the total excluded), "total": bool}
    crosstab = models.JSONField(default=dict, blank=True)
    # private bounds only: {"ends": both|upper|lower, "outside": int, "centre", "unit",
    # "limit": exact decimal strings, "tail": "lognormal" when the upper bound is
    # extrapolated} (releases.services.plan_bounds)
    search = models.JSONField(default=dict, blank=True)
    # categories found in the data only: {"keys_per_person": k, "with_counts": bool,
    # "max_keys": the most keys published}
    keys = models.JSONField(default=dict, blank=True)
    # count of rows in one declared category (count only)
    category = models.CharField(max_length=200, blank=True)
    # clipping range of a sum or mean, narrower than the column's declared bounds
    # (public, given by the owner); null: the column's declared bounds
    lower = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    upper = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    weight = models.DecimalField(max_digits=12, decimal_places=6, default=1)
    hold = models.BooleanField(default=False)
    target_halfwidth = models.FloatField(null=True, blank=True)
    n_guess = models.PositiveBigIntegerField(null=True, blank=True, help_text="Mean planning only.")
    epsilon = models.DecimalField(**EPSILON_FIELD, null=True, blank=True)
    delta = models.DecimalField(**DELTA_FIELD, null=True, blank=True)

    class Meta:
        ordering = ["release", "position", "id"]

    def __str__(self) -> str:
        return self.label or self.kind


class ReleaseEvent(models.Model):
    """One row per lifecycle transition: who moved the release, when, from, to."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    @staticmethod
    def _label(status: str) -> str:
        """The status's label in the active language (the code itself if unknown)."""
        return str(Release.Status(status).label) if status in Release.Status.values else status

    @property
    def from_status_label(self) -> str:
        return self._label(self.from_status)

    @property
    def to_status_label(self) -> str:
        return self._label(self.to_status)


class ReleaseResult(models.Model):
    """The noisy results of a release: written once, never changed.

    `payload` is a list, one entry per statistic, each holding the statistic's
    public description (kind, columns, cell labels) and the explanation returned
    by dpportal.privacy (noisy values, mechanism, scale or sigma, sensitivity,
    epsilon, delta, granularity). It never contains a true aggregate.
    """

    release = models.OneToOneField(Release, on_delete=models.PROTECT, related_name="result")
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
