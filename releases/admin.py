"""Admin for releases: read-only wherever a change would bypass the lifecycle.

Statuses, frozen specifications, costs and timings move only through
releases.lifecycle and the worker (one state machine, ledger in step, noise drawn
once); an admin form that could set them would let staff re-queue, "publish" or
alter a computed release behind the ledger's back. A release that has left the
draft stage is read-only as a whole (its title and description are part of what
was reviewed and published); statistics are editable only while their release is a
draft; results and events never.
"""

from django.contrib import admin

from releases.models import Release, ReleaseEvent, ReleaseResult, Statistic

#: fields of a Release that only the lifecycle and the worker write
LIFECYCLE_FIELDS = (
    "project",
    "dataset",
    "created_by",
    "status",
    "mechanism",
    "confidence",
    "epsilon",
    "delta",
    "spec",
    "spec_hash",
    "budget_request",
    "progress",
    "dispatched_at",
    "heartbeat_at",
    "failure_reason",
    "computed_at",
    "published_at",
    "published_by",
)


def _is_draft(obj) -> bool:
    return obj is None or obj.status == Release.Status.DRAFT


class StatisticInline(admin.TabularInline):
    model = Statistic
    extra = 0

    def has_add_permission(self, request, obj=None) -> bool:
        return _is_draft(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return _is_draft(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return _is_draft(obj) and super().has_delete_permission(request, obj)


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "status", "mechanism", "epsilon", "delta", "created_at"]
    list_filter = ["status", "mechanism"]
    readonly_fields = LIFECYCLE_FIELDS
    inlines = [StatisticInline]

    def has_add_permission(self, request) -> bool:
        return False  # releases are created by the builder (releases.services)

    def has_change_permission(self, request, obj=None) -> bool:
        return _is_draft(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the ledger and the registry refer to them


@admin.register(ReleaseEvent)
class ReleaseEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "release", "from_status", "to_status", "actor"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ReleaseResult)
class ReleaseResultAdmin(admin.ModelAdmin):
    """Results are immutable: viewable, never editable."""

    list_display = ["release", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
