"""Issue 17: the API keeps English machine codes and gives its human message in the
reader's language (Accept-Language)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dpportal.catalogues import compile_all
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


def test_an_api_error_has_an_english_code_and_a_translated_message(
    client, project, owner, reviewer
):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("api:public-release", args=[project.slug, release.pk]) + "?confidence=0.5"
    en = client.get(url)
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert en.status_code == zh.status_code == 400
    en_error, zh_error = en.json()["error"], zh.json()["error"]
    assert en_error["code"] == zh_error["code"] and zh_error["code"].isascii()
    assert en_error["message"].startswith("confidence must be one of")
    assert zh_error["message"].startswith("confidence 参数只能是")


def test_api_data_is_the_same_in_every_language(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    url = reverse("api:public-release", args=[project.slug, release.pk])
    assert client.get(url).json() == client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN").json()
