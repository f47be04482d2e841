"""Admin for datasets: read-only wherever a change would bypass the services.

The privacy unit, the declared domains, the status and the files move only
through datasets.services (validation, the owner's confirmation of the unit, the
freeze once a release is submitted); an admin form that could set them would
rewrite the stated privacy unit of published releases. So those fields are always
read-only here, columns are never edited here, and a dataset that any release uses
is read-only as a whole and cannot be deleted.
"""

from django.contrib import admin

from datasets.models import Column, Dataset

#: fields of a Dataset that only the services write
SERVICE_FIELDS = (
    "project",
    "uploaded_by",
    "uploaded_at",
    "source_file",
    "parquet_file",
    "external_kind",
    "external_location",
    "status",
    "progress",
    "failure_reason",
    "failed_at",
    "warnings",
    "dispatched_at",
    "heartbeat_at",
    "ingest_attempts",
    "id_column",
    "contribution_bound",
    "declared",
    "unit_confirmed_at",
    "unit_confirmed_by",
)

COLUMN_FIELDS = (
    "position",
    "name",
    "suggested_type",
    "kind",
    "categories",
    "lower",
    "upper",
    "bin_edges",
    "missing",
    "derived_from_data",
    "profile",
)


def _used(dataset: Dataset | None) -> bool:
    return dataset is not None and dataset.releases.exists()


class ColumnInline(admin.TabularInline):
    model = Column
    extra = 0
    fields = COLUMN_FIELDS
    readonly_fields = COLUMN_FIELDS

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "declared", "uploaded_by", "uploaded_at"]
    list_filter = ["status", "declared", "compute_backend"]
    readonly_fields = SERVICE_FIELDS
    inlines = [ColumnInline]

    def has_add_permission(self, request) -> bool:
        return False  # datasets are uploaded through the services

    def has_change_permission(self, request, obj=None) -> bool:
        return not _used(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return not _used(obj) and super().has_delete_permission(request, obj)


@admin.register(Column)
class ColumnAdmin(admin.ModelAdmin):
    """Read-only: a column's public domain is declared through the declaration page."""

    list_display = ["name", "dataset", "kind", "suggested_type"]
    readonly_fields = ("dataset", *COLUMN_FIELDS)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
