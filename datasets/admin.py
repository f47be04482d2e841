from django.contrib import admin

from datasets.models import Column, Dataset


class ColumnInline(admin.TabularInline):
    model = Column
    extra = 0
    fields = ["position", "name", "suggested_type", "kind", "lower", "upper", "missing"]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "uploaded_by", "uploaded_at"]
    list_filter = ["status"]
    readonly_fields = ["dispatched_at", "heartbeat_at", "ingest_attempts"]
    inlines = [ColumnInline]


@admin.register(Column)
class ColumnAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "kind", "suggested_type"]
