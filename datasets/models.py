"""Uploaded datasets, their columnar copies and the public domains declared for them.

What is private: the uploaded file, the Parquet copy, and each column's profile
(suggestions computed from the data, shown to the project's owners only).
What is public: the declared domain of each column and the privacy unit. No
aggregate of the data (not even its row count) is stored here.

A dataset is usable in a release only once every column is declared AND an owner
has confirmed its privacy unit (`unit_confirmed_at`): the unit is a declaration,
never a default (see datasets.selectors.dataset_usability_problem).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from budgets.models import Project


class Dataset(models.Model):
    class Status(models.TextChoices):
        AWAITING = "awaiting", _("Waiting for you to confirm how to read it")
        UPLOADED = "uploaded", pgettext_lazy("status", "Uploaded")
        INGESTING = "ingesting", _("Ingesting")
        READY = "ready", _("Ready")
        FAILED = "failed", _("Failed")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200, blank=True, help_text="The name in Chinese.")
    description = models.TextField(blank=True, help_text="What the data is (public).")
    description_zh = models.TextField(blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)
    source_file = models.CharField(max_length=500, blank=True, help_text="Path under MEDIA_ROOT.")
    parquet_file = models.CharField(max_length=500, blank=True, help_text="Path under MEDIA_ROOT.")
    sheet = models.CharField(
        max_length=200, blank=True, help_text="The sheet of a workbook to read (first if blank)."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UPLOADED)
    # How the CSV is read (datasets.ingest.CsvDialect.to_dict): detected at upload,
    # confirmed or overridden by an owner before the ingest runs.
    read_options = models.JSONField(default=dict, blank=True)
    progress = models.FloatField(default=0.0, help_text="Fraction of the upload's bytes ingested.")
    failure_reason = models.TextField(blank=True)
    # The failure reason as message records (dpportal.messages), translated when shown;
    # empty for rows failed before records were kept (failure_reason is shown then).
    failure_record = models.JSONField(default=list, blank=True)
    # Delivery and liveness of the ingest (see datasets.services.ingesting).
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When the ingest task was last sent."
    )
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the running ingest."
    )
    ingest_attempts = models.PositiveIntegerField(
        default=0, help_text="Ingest runs started (a restart after a dead worker counts)."
    )
    # Privacy unit: one row, or one person identified by id_column with at most
    # contribution_bound rows kept per person.
    id_column = models.CharField(max_length=200, blank=True)
    contribution_bound = models.PositiveIntegerField(default=1)
    declared = models.BooleanField(default=False, help_text="Public domains have been declared.")
    # The owner's explicit confirmation of the privacy unit above; reset whenever the
    # unit changes. Datasets from before this field existed start unconfirmed.
    unit_confirmed_at = models.DateTimeField(null=True, blank=True)
    unit_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )

    class ComputeBackend(models.TextChoices):
        AUTO = "auto", _("Automatic (Spark for very large datasets when a cluster is set up)")
        LOCAL = "local", _("In the worker (DuckDB)")
        SPARK = "spark", _("Spark")

    # Where a release's true aggregates are computed (releases.compute.run): the results
    # are the same either way, so this is an operational choice, not part of a spec.
    compute_backend = models.CharField(
        max_length=8, choices=ComputeBackend.choices, default=ComputeBackend.AUTO
    )
    # Warnings about the upload that do not refuse it (e.g. a header that looks like data).
    warnings = models.JSONField(default=list, blank=True)
    failed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the ingest failed; the row is removed later."
    )
    # A dataset registered in place (datasets.external): its Parquet stays where it is
    # (read-only; deleting the dataset leaves it). kind "s3" (location "bucket/prefix/")
    # or "local" (an absolute path under DPPORTAL_EXTERNAL_ROOTS); blank for an upload.
    external_kind = models.CharField(
        max_length=8, blank=True, choices=[("s3", _("S3 bucket")), ("local", _("Local folder"))]
    )
    external_location = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ["-uploaded_at"]
        permissions = [
            ("register_external", "Can register an existing Parquet dataset in place"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(contribution_bound__gte=1), name="dataset_contribution_bound_gte_1"
            )
        ]

    def __str__(self) -> str:
        return self.name


class Column(models.Model):
    class Type(models.TextChoices):
        INTEGER = "integer", _("Integer")
        FLOAT = "float", _("Decimal number")
        STRING = "string", _("Text")

    class Kind(models.TextChoices):
        UNDECLARED = "undeclared", _("Not declared yet")
        CATEGORICAL = "categorical", _("Categorical")
        NUMERIC = "numeric", _("Numeric")
        EXCLUDED = "excluded", _("Excluded")

    class Derived(models.TextChoices):
        CATEGORIES = "categories", _("the categories")
        BOUNDS = "bounds", _("the bounds")

    class Missing(models.TextChoices):
        DROP = "drop", _("Dropped from the statistic")
        CATEGORY = "category", _("Counted in an explicit 'missing' category")

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="columns")
    name = models.CharField(max_length=200)
    # The owner's label for readers (the file's name when empty), in both languages.
    label = models.CharField(max_length=200, blank=True)
    label_zh = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField()
    suggested_type = models.CharField(max_length=16, choices=Type.choices)
    profile = models.JSONField(default=dict, help_text="Private suggestions for the owners only.")
    # The public domain, declared by an owner.
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.UNDECLARED)
    categories = models.JSONField(default=list, blank=True)
    lower = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    upper = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    bin_edges = models.JSONField(default=list, blank=True)
    # Public labels of the declared categories: code -> {"en": ..., "zh-hans": ...}
    # (dpportal.bilingual). A code without a label is shown as the code.
    category_labels = models.JSONField(default=dict, blank=True)
    missing = models.CharField(max_length=16, choices=Missing.choices, default=Missing.DROP)
    # Public values that mean "missing" in this column (e.g. "-9", "999"), as text: every
    # release computation treats a cell equal to one of them as missing.
    missing_codes = models.JSONField(default=list, blank=True)
    # A date column: {"bin": year|quarter|month|day, "lower", "upper": ISO dates, "format"}.
    # Declared with kind "categorical": its categories are the bins of the public range.
    date = models.JSONField(default=dict, blank=True)
    # Which parts of the declared domain were filled in from the private profile
    # ("categories", "bounds"), each confirmed by the owner at declaration.
    derived_from_data = models.JSONField(default=list, blank=True)
    # the private estimate the declared bounds came from (releases.services.bounds_declare):
    # {"release", "title", "epsilon", "lower", "upper"}; empty when the owner typed them
    bounds_estimate = models.JSONField(default=dict, blank=True)
    # When the categories are the keys a release published as found in the data (partition
    # selection): {"release": id, "title": str, "statistic": position, "epsilon": str,
    # "delta": str, "mechanism": str}; empty otherwise. Public: the published values only.
    categories_source = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset", "position"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="column_unique_name"),
            models.CheckConstraint(
                condition=Q(lower__isnull=True)
                | Q(upper__isnull=True)
                | Q(lower__lte=models.F("upper")),
                name="column_lower_le_upper",
            ),
        ]

    def __str__(self) -> str:
        return self.name
