"""Reads of projects and memberships: who may see a project, in which roles."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from budgets.models import Membership, Project
from dpportal.errors import NotFound, PermissionDenied


def project_roles(*, project: Project, user: AbstractBaseUser | AnonymousUser) -> set[str]:
    """The roles `user` holds in `project` (empty for anonymous users and non-members)."""
    if not user.is_authenticated:
        return set()
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def project_get_for_member(
    *, slug: str, user: AbstractBaseUser | AnonymousUser, roles: set[str] | None = None
) -> Project:
    """The project named `slug` if `user` is a member (with one of `roles`, if given).

    Non-members get NotFound (404), so that private projects' existence does not
    leak; members lacking the role get PermissionDenied (403).
    """
    project = Project.objects.filter(slug=slug).first()
    held = project_roles(project=project, user=user) if project else set()
    if project is None or not held:
        raise NotFound("No such project.")
    if roles is not None and not (held & roles):
        raise PermissionDenied(f"This needs the {' or '.join(sorted(roles))} role in the project.")
    return project


def project_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Project]:
    return Project.objects.filter(memberships__user=user).distinct().order_by("name")


def project_get_public(*, slug: str) -> Project:
    """Any project, for its public registry (NotFound if there is none)."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound("No such project.")
    return project
