"""Issue 17, point 3: numbers and days in the reader's language, through the one formatting
module (dpportal.formatting writes them; dpportal.words puts them in the active locale's
separators and date format, dpportal/formats/<lang>/formats.py); JSON keeps exact values."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.cache import cache
from django.template import Context, Template
from django.test import override_settings
from django.urls import reverse
from django.utils import translation
from django.utils.formats import reset_format_cache

from dpportal import formatting, words
from dpportal.catalogues import compile_all
from tests.public_builders import build_release


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def test_restyle_moves_separators_and_leaves_the_plain_style_alone():
    spaced = formatting.NumberStyle(group=".", decimal=",")
    assert formatting.restyle("12,345.6", spaced) == "12.345,6"
    assert formatting.restyle("-0.05", spaced) == "-0,05"
    assert formatting.restyle("12,345.6", formatting.PLAIN_STYLE) == "12,345.6"


def test_days_in_sentences_follow_the_language():
    with translation.override("en"):
        assert words.day("2026-11-25") == "2026-11-25"
    with translation.override("zh-hans"):
        assert words.day("2026-11-25") == "2026年11月25日"
    assert words.day("") == ""


def test_chinese_numbers_group_in_threes_with_commas_as_cldr_zh_does():
    """Not Django's zh_Hans default (no separator, groups of four): 1234567 would be
    unreadable in a table of counts."""
    page = Template("{% load dpformat %}{{ n|integer }} {{ x|scale }}")
    with translation.override("zh-hans"):
        assert page.render(Context({"n": 1234567, "x": 12345.678})) == "1,234,567 12,300"


def _shown(page: str) -> str:
    """The page without its scripts (their JSON escapes a thin space as \\u2009)."""
    return re.sub(r"<script.*?</script>", "", page, flags=re.S)


@pytest.mark.django_db
def test_the_release_page_takes_its_separators_from_the_locale(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("public:release", args=[project.slug, release.pk])
    json_url = reverse("public:release-json", args=[project.slug, release.pk])
    exact_json = client.get(json_url).json()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    plain = client.get(url).content.decode()
    assert re.search(r"\d,\d{3}", plain)  # the income's sum, in thousands
    try:
        with override_settings(FORMAT_MODULE_PATH=["tests.spaced_formats"]):
            reset_format_cache()
            cache.clear()  # the page as first rendered is cached: render it again, spaced
            spaced = client.get(url).content.decode()
    finally:
        reset_format_cache()
    # every number the page shows grouped with commas it shows grouped with thin spaces
    # (a "\d,\d{3}" on the spaced page may be a decimal comma: 0,062)
    grouped = set(re.findall(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])", _shown(plain)))
    assert grouped
    assert all(number.replace(",", "\u2009") in _shown(spaced) for number in grouped)
    assert re.search(r"\d,\d+", spaced)  # decimal commas
    assert client.get(json_url).json() == exact_json  # JSON: exact values, every language
