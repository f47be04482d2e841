"""Issue 17: the public page's notes ("What it estimates") in the reader's language.

The release's public data is cached once for every language and shared with the API and
downloads, so its notes are message records there: the page translates them when it is
rendered, the downloads keep the English sentences."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import reverse

from dpportal.catalogues import compile_all
from releases.public import notes
from tests.public_builders import build_release
from tests.test_i18n_owner_pages import _data_words, english_left

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def _notes_html(page: str) -> str:
    return "".join(re.findall(r'<ul class="notes">(.*?)</ul>', page, re.S))


def test_notes_are_translated_on_the_page_and_english_in_downloads(
    client, project, owner, reviewer
):
    project.name = "人口普查"
    project.save()
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("public:release", args=[project.slug, release.pk])
    english_page = client.get(url).content.decode()
    assert "It counts every record kept." in _notes_html(english_page)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    chinese = _notes_html(client.get(url).content.decode())
    assert "它计数保留的每一条记录。" in chinese
    # the cells "Other" and "Missing" keep the names the charts and downloads give them
    words = _data_words(project, release) | {notes.OTHER, notes.MISSING}
    assert english_left(chinese, words) == []
    json_url = reverse("public:release-json", args=[project.slug, release.pk])
    zh_json = client.get(json_url).json()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert zh_json == client.get(json_url).json()
    assert "It counts every record kept." in str(zh_json)


def test_a_record_reads_in_english_as_the_sentence_did():
    record = notes.unit_note(id_column="person_id", bound=3)
    assert notes.english(record) == (
        "At most 3 records per person (people are identified by the column “person_id”) were "
        "kept: of a person with more, 3 were chosen at random and the rest left out, so totals "
        "can fall short of the raw data."
    )
    assert notes.english(notes.unit_note(id_column="p", bound=1)).startswith("At most 1 record ")
