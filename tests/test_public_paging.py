"""Long statistics are paged on HTML pages and every cell streams in data.csv.

The page size is a setting (RESULT_PAGE_CELLS); these tests shrink it so that the
test release (a 4-cell histogram by region, a 2 x 3 histogram by sex and age band)
spans several pages without building a large release.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from releases.public import downloads, paging
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _url(release, name="public:release", query=""):
    return reverse(name, args=[release.project.slug, release.pk]) + query


def _section(html: str, position: int) -> str:
    start = html.index(f'id="stat-{position}"')
    end = html.find('<section class="statistic card"', start + 1)
    return html[start : end if end != -1 else len(html)]


def _embedded(html: str) -> dict:
    match = re.search(r'<script id="release-data" type="application/json">(.*?)</script>', html,
                      re.S)  # fmt: skip
    return json.loads(match.group(1))


def test_a_long_statistic_shows_page_one_of_n_and_only_its_cells(client, published, settings):
    settings.RESULT_PAGE_CELLS = 3
    html = client.get(_url(published)).content.decode()
    region = _section(html, 1)  # North, South, East, West: 4 cells, 3 a page
    assert "Page 1 of 2: cells 1 to 3 of 4." in region
    assert 'rel="next"' in region and 'rel="prev"' not in region
    assert "North" in region and "West" not in region
    stat = _embedded(html)["statistics"][1]
    assert stat["cells"] == ["North", "South", "East"]
    assert len(stat["values"]) == 3 and len(stat["text"]["0.95"]["value"]) == 3
    assert stat["k"] == 4  # "all 4 bars at once" still describes the whole statistic
    second = client.get(_url(published, query="?page=2")).content.decode()
    region = _section(second, 1)
    assert "Page 2 of 2: cells 4 to 4 of 4." in region
    assert "West" in region and "North" not in region
    assert 'rel="prev"' in region and 'rel="next"' not in region


def test_a_two_way_table_is_paged_in_whole_rows(client, published, settings):
    settings.RESULT_PAGE_CELLS = 4  # 3 columns: one row of the 2 x 3 table a page
    stat = _embedded(client.get(_url(published)).content.decode())["statistics"][2]
    assert stat["shape"] == [1, 3] and len(stat["row_labels"]) == 1
    assert len(stat["cells"]) == 3
    assert stat["paging"] == {"page": 1, "pages": 2, "first": 1, "last": 3, "total": 6}
    last = _embedded(client.get(_url(published, query="?page=9")).content.decode())
    assert last["statistics"][2]["paging"]["page"] == 2  # past the end: its last page


def test_short_statistics_are_not_paged(client, published):
    html = client.get(_url(published)).content.decode()
    assert "Page 1 of" not in html
    assert _embedded(html)["statistics"][2]["paging"]["pages"] == 1


@pytest.mark.parametrize("page", ["0", "-1", "x", "1.5", "99999999", "٢"])
def test_a_bad_page_number_is_refused_with_a_message(client, published, page):
    response = client.get(_url(published, query=f"?page={page}"))
    assert response.status_code == 400
    assert b"page must be a whole number from 1" in response.content


def test_the_csv_streams_every_cell_of_every_statistic(client, published, monkeypatch):
    monkeypatch.setattr(downloads, "CSV_CHUNK_ROWS", 2)
    response = client.get(_url(published, "public:release-csv"))
    assert response.status_code == 200 and response.streaming
    chunks = list(response.streaming_content)
    assert len(chunks) > 3
    again = client.get(_url(published, "public:release-csv"))  # from the cached chunks
    assert again.streaming and b"".join(again.streaming_content) == b"".join(chunks)
    rows = list(csv.DictReader(io.StringIO(b"".join(chunks).decode())))
    # a count, 4 regions, 2 x 3 sex by age band, a sum, a mean, the most common region
    assert len(rows) == 1 + 4 + 6 + 1 + 1 + 1
    assert [r["statistic_position"] for r in rows].count("2") == 6


def test_the_owner_results_are_paged(client, published, owner, settings):
    settings.RESULT_PAGE_CELLS = 3
    client.force_login(owner)
    url = reverse("releases:detail", args=[published.pk])
    html = client.get(url).content.decode()
    assert "Page 1 of 2: cells 1 to 3 of 4." in html
    assert "Page 1 of 2: cells 1 to 3 of 6." in html
    second = client.get(url + "?page=2").content.decode()
    assert "Page 2 of 2: cells 4 to 4 of 4." in second
    assert client.get(url + "?page=nope").status_code == 400


def test_statistic_page_cuts_every_per_cell_list_alike(settings):
    settings.RESULT_PAGE_CELLS = 3
    stat = {
        "kind": "grouped_mean", "cells": list("abcdefg"), "values": list(range(7)),
        "exact_values": list(range(7)), "clamped": [False] * 7,
        "uninformative_cells": [i == 5 for i in range(7)], "shape": None,
        "cell_labels": [{"en": c.upper(), "zh-hans": ""} for c in "abcdefg"],
        "cell_buckets": [""] * 6 + ["other"], "display_values": list(range(7)),
        "intervals": {"0.95": {"per_cell": {"lower": list(range(7)), "upper": list(range(7)),
                                            "halfwidths": [None] * 7}}},
    }  # fmt: skip
    page = paging.statistic_page(stat, page=2)
    assert page["cells"] == ["d", "e", "f"] and page["values"] == [3, 4, 5]
    assert page["uninformative_cells"] == [False, False, True]
    assert [label["en"] for label in page["cell_labels"]] == ["D", "E", "F"]
    for key in paging.PER_CELL:
        assert len(page[key]) == 3
    assert page["intervals"]["0.95"]["per_cell"]["lower"] == [3, 4, 5]
    assert stat["cells"] == list("abcdefg")  # the cached statistic is left whole


def test_a_release_published_before_lower_limits_still_renders_paged(
    client, published, owner, settings
):
    # limits lowered after publication: the plan would refuse it now, its pages still work
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 2
    settings.RELEASE_MAX_CELLS_PER_RELEASE = 3
    settings.RESULT_PAGE_CELLS = 2
    html = client.get(_url(published)).content.decode()
    assert "Page 1 of 2: cells 1 to 2 of 4." in html
    assert client.get(_url(published, "public:release-json")).status_code == 200
    rows = list(csv.DictReader(io.StringIO(
        client.get(_url(published, "public:release-csv")).getvalue().decode())))  # fmt: skip
    assert len(rows) == 14
    client.force_login(owner)
    owner_page = client.get(reverse("releases:detail", args=[published.pk]))
    assert owner_page.status_code == 200 and b"Page 1 of 3" in owner_page.content
