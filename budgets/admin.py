from django.contrib import admin

from budgets.models import BudgetRequest, CapChange, LedgerEntry, Membership, Project
from budgets.public_version import project_public_changed


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "epsilon_cap", "delta_cap", "created_by", "created_at"]
    prepopulated_fields = {"slug": ["name"]}

    def get_readonly_fields(self, request, obj=None):
        # Caps change through the budget page only, so every change leaves a CapChange.
        return ("epsilon_cap", "delta_cap") if obj is not None else ()

    def get_prepopulated_fields(self, request, obj=None):
        return {} if obj is not None else self.prepopulated_fields

    def save_model(self, request, obj, form, change) -> None:
        """Saved as usual; the public pages of the project (under its old and new
        slug) are then renewed (budgets.public_version)."""
        before = Project.objects.filter(pk=obj.pk).values_list("slug", flat=True).first()
        super().save_model(request, obj, form, change)
        for slug in {before, obj.slug} - {None}:
            project_public_changed(slug=slug)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role"]
    list_filter = ["role"]


@admin.register(BudgetRequest)
class BudgetRequestAdmin(admin.ModelAdmin):
    """Read-only: requests move through the review workflow (and its ledger) alone."""

    list_display = ["title", "project", "epsilon", "delta", "status", "requested_by"]
    list_filter = ["status"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    """Read-only: the ledger is append-only, through services alone."""

    list_display = ["created_at", "project", "kind", "epsilon", "delta", "request", "actor"]
    list_filter = ["kind"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CapChange)
class CapChangeAdmin(admin.ModelAdmin):
    list_display = ["created_at", "project", "actor", "new_epsilon_cap", "new_delta_cap"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
