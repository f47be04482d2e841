"""Writes for projects, memberships and the budget (see STYLE.md: services write)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.text import slugify

from budgets.models import Membership, Project
from dpportal.errors import ValidationFailed


def parse_epsilon(value: object, *, field: str = "epsilon") -> Decimal:
    """An epsilon as an exact Decimal: finite and > 0, else ValidationFailed."""
    number = _parse_decimal(value, field=field)
    if number <= 0:
        raise ValidationFailed(f"{field} must be greater than 0.")
    return number


def parse_delta(value: object, *, field: str = "delta") -> Decimal:
    """A delta as an exact Decimal in [0, 1), else ValidationFailed."""
    number = _parse_decimal(value, field=field)
    if not (0 <= number < 1):
        raise ValidationFailed(f"{field} must be at least 0 and below 1.")
    return number


def _parse_decimal(value: object, *, field: str) -> Decimal:
    if isinstance(value, float):
        value = repr(value)
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValidationFailed(f"{field} must be a number.")
    if not number.is_finite():
        raise ValidationFailed(f"{field} must be a finite number.")
    return number


@transaction.atomic
def project_create(
    *,
    name: str,
    description: str,
    privacy_unit_description: str,
    epsilon_cap: object,
    delta_cap: object,
    created_by: AbstractBaseUser,
    slug: str | None = None,
) -> Project:
    """Create a project; its creator becomes its first owner."""
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("A project needs a name.")
    slug = slugify(slug or name)[:80]
    if not slug:
        raise ValidationFailed("The project's short name (slug) must contain letters or digits.")
    if Project.objects.filter(slug=slug).exists():
        raise ValidationFailed(f"A project with the short name '{slug}' already exists.")
    project = Project.objects.create(
        name=name,
        slug=slug,
        description=(description or "").strip(),
        privacy_unit_description=(privacy_unit_description or "").strip(),
        epsilon_cap=parse_epsilon(epsilon_cap, field="epsilon cap"),
        delta_cap=parse_delta(delta_cap, field="delta cap"),
        created_by=created_by,
    )
    Membership.objects.create(project=project, user=created_by, role=Membership.Role.OWNER)
    return project


def membership_add(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    """Give `user` a role in `project` (idempotent)."""
    if role not in Membership.Role.values:
        raise ValidationFailed(f"Unknown role '{role}'.")
    membership, _ = Membership.objects.get_or_create(project=project, user=user, role=role)
    return membership
