from django.contrib import admin

from releases.models import Release, ReleaseEvent, ReleaseResult, Statistic


class StatisticInline(admin.TabularInline):
    model = Statistic
    extra = 0


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "status", "mechanism", "epsilon", "delta", "created_at"]
    list_filter = ["status", "mechanism"]
    inlines = [StatisticInline]


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
