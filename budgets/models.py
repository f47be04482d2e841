"""Projects, memberships, budget requests and the privacy-loss ledger.

Amounts are exact decimals (NUMERIC on PostgreSQL), never floats.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

# Enough digits for any epsilon an owner may set, and for deltas such as 1e-12.
EPSILON_FIELD = {"max_digits": 24, "decimal_places": 12}
DELTA_FIELD = {"max_digits": 30, "decimal_places": 24}


class Project(models.Model):
    """A body of data uses under one privacy budget (epsilon and delta caps)."""

    name = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200, blank=True, help_text="The name in Chinese.")
    slug = models.SlugField(max_length=80, unique=True, allow_unicode=True)
    description = models.TextField(help_text="What the data is used for (public).")
    privacy_unit_description = models.TextField(
        help_text="Who is protected: e.g. 'one person in the 2026 survey' (public)."
    )
    description_zh = models.TextField(blank=True, help_text="The description in Chinese.")
    privacy_unit_description_zh = models.TextField(blank=True)
    epsilon_cap = models.DecimalField(**EPSILON_FIELD)
    delta_cap = models.DecimalField(**DELTA_FIELD, default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(epsilon_cap__gt=0), name="project_epsilon_cap_gt_0"),
            models.CheckConstraint(
                condition=Q(delta_cap__gte=0) & Q(delta_cap__lt=1), name="project_delta_cap_in_0_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in one project. One user may hold both roles."""

    class Role(models.TextChoices):
        OWNER = "owner", _("Owner")
        REVIEWER = "reviewer", _("Reviewer")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user", "role"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"


class BudgetRequest(models.Model):
    """A release's ask for privacy budget, decided by a reviewer of the project.

    `spec_hash` binds the request to the frozen specification of the release; the
    worker refuses to compute a release whose specification no longer hashes to it.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending review")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        WITHDRAWN = "withdrawn", _("Withdrawn")

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="budget_requests")
    title = models.CharField(max_length=200)
    epsilon = models.DecimalField(**EPSILON_FIELD)
    delta = models.DecimalField(**DELTA_FIELD, default=0)
    summary = models.JSONField(
        default=dict, help_text="Statistics and accuracy preview, public parameters only."
    )
    spec_hash = models.CharField(max_length=64)
    mechanisms = models.JSONField(
        default=list,
        blank=True,
        help_text="The release's noise mechanisms with exact parameters "
        "(dpportal.privacy.mechanism_records), frozen with its specification.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="budget_requests"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="budget_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True, max_length=2000)

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.CheckConstraint(condition=Q(epsilon__gt=0), name="request_epsilon_gt_0"),
            models.CheckConstraint(
                condition=Q(delta__gte=0) & Q(delta__lt=1), name="request_delta_in_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.status})"


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove a ledger entry."""


class LedgerEntryQuerySet(models.QuerySet):
    """Ledger rows can be added and read, never changed or removed in bulk."""

    def update(self, **kwargs):
        raise AppendOnlyError("The ledger is append-only: entries cannot be updated.")

    def delete(self):
        raise AppendOnlyError("The ledger is append-only: entries cannot be deleted.")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AppendOnlyError("The ledger is append-only: entries cannot be updated.")

    def update_or_create(self, defaults=None, create_defaults=None, **kwargs):
        raise AppendOnlyError("The ledger is append-only: entries cannot be updated.")


class LedgerEntry(models.Model):
    """One movement of privacy budget. Append-only: never updated, never deleted.

    RESERVE on approval, then exactly one of CHARGE (results stored, or a computation
    that failed after it had read the data) or RELEASE (reservation returned: a failure
    before any row was read, or withdrawal; releases.lifecycle.release_fail decides).
    Database constraints make a second reserve, or a charge plus a release, for the
    same request impossible.
    """

    class Kind(models.TextChoices):
        RESERVE = "reserve", _("Reserve")
        CHARGE = "charge", _("Charge")
        RELEASE = "release", pgettext_lazy("ledger entry", "Release")

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="ledger")
    request = models.ForeignKey(BudgetRequest, on_delete=models.PROTECT, related_name="ledger")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    epsilon = models.DecimalField(**EPSILON_FIELD)
    delta = models.DecimalField(**DELTA_FIELD)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=500, blank=True)
    # What a tight accountant needs (MechanismRecord.to_dict per distinct mechanism),
    # copied from the request on reserve and from the reserve on settlement. Empty on
    # rows written before mechanism records existed: they are accounted as generic
    # (epsilon, delta) mechanisms from the columns above.
    mechanisms = models.JSONField(default=list, blank=True)

    objects = LedgerEntryQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.UniqueConstraint(
                fields=["request"], condition=Q(kind="reserve"), name="ledger_one_reserve"
            ),
            models.UniqueConstraint(
                fields=["request"],
                condition=Q(kind__in=["charge", "release"]),
                name="ledger_one_settlement",
            ),
            models.CheckConstraint(
                condition=Q(epsilon__gte=0) & Q(delta__gte=0), name="ledger_amounts_nonnegative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} eps={self.epsilon} delta={self.delta}"

    # Append-only is a rule of the row itself, not workflow state: an existing row
    # is never written again, and no row is ever deleted (a PostgreSQL trigger
    # enforces the same below the ORM, see migration 0002).
    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise AppendOnlyError("The ledger is append-only: entries cannot be updated.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("The ledger is append-only: entries cannot be deleted.")

    @property
    def note_text(self) -> str:
        """The note in the reader's language where the services wrote a fixed one."""
        fixed = {
            "approved": pgettext("ledger note", "approved"),
            "withdrawn": pgettext("ledger note", "withdrawn"),
            "failed": pgettext("ledger note", "failed"),
            "computed": pgettext("ledger note", "computed"),
        }
        if self.note in fixed:
            return fixed[self.note]
        computed = re.fullmatch(r"release (\d+) computed", self.note)
        if computed:
            return gettext("release %(number)s computed") % {"number": computed.group(1)}
        return self.note


class CapChange(models.Model):
    """An audit row for every change of a project's caps."""

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="cap_changes")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    old_epsilon_cap = models.DecimalField(**EPSILON_FIELD)
    new_epsilon_cap = models.DecimalField(**EPSILON_FIELD)
    old_delta_cap = models.DecimalField(**DELTA_FIELD)
    new_delta_cap = models.DecimalField(**DELTA_FIELD)
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
