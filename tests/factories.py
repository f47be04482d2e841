"""factory_boy factories shared by the test suite."""

from __future__ import annotations

from decimal import Decimal

import factory
from django.contrib.auth import get_user_model

from budgets.models import Membership, Project

PASSWORD = "correct-horse-battery"  # noqa: S105


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password(PASSWORD)


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")
    description = "Monthly statistics about survey respondents."
    privacy_unit_description = "One respondent of the survey."
    epsilon_cap = Decimal("1.0")
    delta_cap = Decimal("0.00001")
    created_by = factory.SubFactory(UserFactory)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.OWNER
