"""Reads of projects and memberships: who may see a project, in which roles."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils.translation import gettext, pgettext

from budgets.models import Membership, Project
from dpportal.errors import NotFound, PermissionDenied


def project_roles(*, project: Project, user: AbstractBaseUser | AnonymousUser) -> set[str]:
    """The roles `user` holds in `project` (empty for anonymous users and non-members)."""
    if not user.is_authenticated:
        return set()
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def project_has_reviewer(*, project: Project, other_than: AbstractBaseUser | None = None) -> bool:
    """Whether someone can decide on the project's budget requests: an active member holding
    the reviewer role, other than `other_than` (a requester never decides on their own)."""
    reviewers = Membership.objects.filter(
        project=project, role=Membership.Role.REVIEWER, user__is_active=True
    )
    if other_than is not None and other_than.pk is not None:
        reviewers = reviewers.exclude(user_id=other_than.pk)
    return reviewers.exists()


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
        raise NotFound(gettext("No such project."))
    if roles is not None and not (held & roles):
        raise role_required(roles)
    return project


def role_required(roles: set[str]) -> PermissionDenied:
    """The refusal for a member holding none of `roles` (role codes), naming them by label."""
    labels = [str(Membership.Role(r).label).lower() for r in sorted(roles)]
    if len(labels) == 1:
        return PermissionDenied(
            gettext("This needs the %(role)s role in the project.") % {"role": labels[0]}
        )
    return PermissionDenied(
        gettext("This needs one of these roles in the project: %(roles)s.")
        % {"roles": pgettext("list separator", ", ").join(labels)}
    )


def project_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Project]:
    return Project.objects.filter(memberships__user=user).distinct().order_by("name")


def project_get_public(*, slug: str) -> Project:
    """Any project, for its public registry (NotFound if there is none)."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound(gettext("No such project."))
    return project
