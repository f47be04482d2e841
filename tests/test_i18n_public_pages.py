"""Issue 17: the public pages (home, project dashboard, release page, epsilon registry)
in zh-hans leave no English UI text.

A reader who does not read English must learn from them what was protected and how wide
the error bars are: each page is rendered for an anonymous reader with the language
cookie set to zh-hans, for a project named in Chinese, and checked as the owner's pages
are (tests/test_i18n_owner_pages.py): only the data's own names and words kept in every
language may stay."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import reverse

from dpportal.catalogues import compile_all
from dpportal.privacy.pld import ACCOUNTANT
from tests.public_builders import build_release
from tests.stats_builders import add_stats_entries
from tests.test_i18n_owner_pages import _data_words, english_on_pages

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def test_public_pages_in_chinese(client, project, owner, reviewer):
    project.name = "人口普查"
    project.save()
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    add_stats_entries(release)  # grouped means, quantiles, spread: every sentence of the page
    registry_json = reverse("registry:project_json", args=[project.slug])
    # the data's own words, the registry's address and the accountant library's name
    # ... and the language the verification script is written in
    words = _data_words(project, release) | set(
        re.findall(r"[A-Za-z][A-Za-z'/]+", f"{registry_json} {ACCOUNTANT['library']} Python")
    )
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    pages = {
        "home": reverse("public:home"),
        "project": reverse("public:project", args=[project.slug]),
        "release": reverse("public:release", args=[project.slug, release.pk]),
        "registry": reverse("registry:project", args=[project.slug]),
    }
    assert english_on_pages(client, pages, words) == {}
