"""Writes of projects, their members and their caps."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext

from budgets.amounts import text as _text
from budgets.models import CapChange, Membership, Project
from budgets.public_version import project_public_changed
from budgets.selectors import budget_summary as _ledger_totals
from budgets.selectors import committed_records
from budgets.services.ledger import _user_roles
from budgets.services.validation import _check_note, parse_caps
from dpportal.errors import NotFound, PermissionDenied, ValidationFailed
from dpportal.privacy.pld import within_cap

logger = logging.getLogger(__name__)


#: slugs that would clash with the pages under /projects/
RESERVED_SLUGS = frozenset({"new", "inbox", "requests"})


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
    name_zh: str = "",
    description_zh: str = "",
    privacy_unit_description_zh: str = "",
) -> Project:
    """Create a project; its creator becomes its first owner. Each text may have a
    Chinese twin (`_zh`); a name given in Chinese only is the plain name."""
    name, name_zh = (name or "").strip(), (name_zh or "").strip()
    if not name:
        name, name_zh = name_zh, ""
    if len(name_zh) > 200:
        raise ValidationFailed(gettext("A project's name may be at most 200 characters."))
    if not name:
        raise ValidationFailed(gettext("A project needs a name."))
    if len(name) > 200:
        raise ValidationFailed(gettext("A project's name may be at most 200 characters."))
    slug = slugify(slug or name, allow_unicode=True)[:80]  # any script: 人口普查 stays readable
    if not slug:
        raise ValidationFailed(
            gettext("The project's short name (slug) must contain letters or digits.")
        )
    if slug in RESERVED_SLUGS:
        raise ValidationFailed(
            gettext("“%(slug)s” is reserved; please choose another short name.") % {"slug": slug}
        )
    if Project.objects.filter(slug=slug).exists():
        raise ValidationFailed(
            gettext("A project with the short name “%(slug)s” already exists.") % {"slug": slug}
        )
    epsilon, delta = parse_caps(epsilon_cap, delta_cap)
    project = Project.objects.create(
        name=name,
        slug=slug,
        description=(description or "").strip(),
        privacy_unit_description=(privacy_unit_description or "").strip(),
        name_zh=name_zh,
        description_zh=(description_zh or "").strip(),
        privacy_unit_description_zh=(privacy_unit_description_zh or "").strip(),
        epsilon_cap=epsilon,
        delta_cap=delta,
        created_by=created_by,
    )
    Membership.objects.create(project=project, user=created_by, role=Membership.Role.OWNER)
    return project


def membership_add(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    """Give `user` a role in `project` (idempotent)."""
    if role not in Membership.Role.values:
        raise ValidationFailed(gettext("Unknown role '%(role)s'.") % {"role": role})
    membership, _ = Membership.objects.get_or_create(project=project, user=user, role=role)
    return membership


def project_caps_update(
    *,
    project: Project,
    actor: AbstractBaseUser,
    epsilon_cap: object,
    delta_cap: object,
    note: str = "",
) -> Project:
    """Change a project's caps, recording a CapChange.

    Owners may lower a cap, never below what is committed; raising one needs staff.
    """
    note = _check_note(note)
    new_eps, new_delta = parse_caps(epsilon_cap, delta_cap)
    with transaction.atomic():
        # Lock: a concurrent approval must not slip in between the check and the change.
        locked = Project.objects.select_for_update().get(pk=project.pk)
        is_staff = bool(getattr(actor, "is_staff", False))
        roles = _user_roles(project=locked, user=actor)
        if not roles and not is_staff:
            raise NotFound(gettext("No such project."))
        if Membership.Role.OWNER not in roles and not is_staff:
            raise PermissionDenied(gettext("Only an owner of the project may change its caps."))
        raising = new_eps > locked.epsilon_cap or new_delta > locked.delta_cap
        if raising and not is_staff:
            raise PermissionDenied(
                gettext("Raising a cap needs a staff member; owners may only lower the caps.")
            )
        totals = _ledger_totals(project=locked)
        basic_ok = new_eps >= totals.epsilon_committed and new_delta >= totals.delta_committed
        # The rule approval applies: what is committed must stay within the new caps
        # by either bound (the plain sums, or the tight PLD epsilon at the new delta).
        if not basic_ok and not _tight_within(project=locked, epsilon=new_eps, delta=new_delta):
            if new_eps < totals.epsilon_committed:
                raise ValidationFailed(
                    gettext(
                        "The epsilon cap cannot go below the %(committed)s already committed "
                        "(nor below what the tight accountant counts)."
                    )
                    % {"committed": _text(totals.epsilon_committed)}
                )
            raise ValidationFailed(
                gettext(
                    "The delta cap cannot go below the %(committed)s already committed "
                    "(nor below what the tight accountant counts)."
                )
                % {"committed": _text(totals.delta_committed)}
            )
        if new_eps == locked.epsilon_cap and new_delta == locked.delta_cap:
            raise ValidationFailed(gettext("The new caps are the same as the current ones."))
        CapChange.objects.create(
            project=locked,
            actor=actor,
            old_epsilon_cap=locked.epsilon_cap,
            new_epsilon_cap=new_eps,
            old_delta_cap=locked.delta_cap,
            new_delta_cap=new_delta,
            note=note,
        )
        locked.epsilon_cap = new_eps
        locked.delta_cap = new_delta
        locked.save(update_fields=["epsilon_cap", "delta_cap"])
        project_public_changed(slug=locked.slug)  # the registry and the release pages
    logger.info("caps of project %s changed", locked.pk)
    project.epsilon_cap, project.delta_cap = new_eps, new_delta
    return locked


def _tight_within(*, project: Project, epsilon: object, delta: object) -> bool:
    """The committed mechanisms within (epsilon, delta) by a tight bound, PLD or RDP (caps not
    yet saved)."""
    return within_cap(
        committed_records(project=project), [], epsilon_cap=epsilon, delta_cap=delta,
        count_fit=False,
    ).within_tight  # fmt: skip


def project_member_add(
    *, project: Project, actor: AbstractBaseUser, username: str, role: str
) -> Membership:
    """An owner gives the user named `username` a role in `project`."""
    if Membership.Role.OWNER not in _user_roles(project=project, user=actor):
        raise PermissionDenied(gettext("Only an owner of the project may add members."))
    username = (username or "").strip()
    if not username:
        raise ValidationFailed(gettext("Give the username of the person to add."))
    if role not in Membership.Role.values:
        raise ValidationFailed(gettext("Unknown role '%(role)s'.") % {"role": role})
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise ValidationFailed(
            gettext("There is no user named '%(username)s'.") % {"username": username}
        )
    if Membership.objects.filter(project=project, user=user, role=role).exists():
        raise ValidationFailed(
            gettext("%(username)s already holds the %(role)s role in this project.")
            % {"username": username, "role": str(Membership.Role(role).label).lower()}
        )
    return membership_add(project=project, user=user, role=role)
