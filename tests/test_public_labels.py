"""Honest labels on public pages (issue 11, point 5): what each number estimates.

Each statistic says in plain words which rules made the count it estimates (at
most L records per person, edge bins, clipping, Other and Missing), that counts
may be negative unless the reader chose the clamped display, and shows its
numbers through dpportal.formatting.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from dpportal import formatting
from releases.models import Release
from releases.public import data as public_data
from tests.public_builders import build_release, replace_heatmap

pytestmark = pytest.mark.django_db


def _page(client, release, query=""):
    response = client.get(
        reverse("public:release", args=[release.project.slug, release.pk]) + query
    )
    assert response.status_code == 200
    return response.content.decode()


def _section(html: str, position: int) -> str:
    start = html.index(f'id="stat-{position}"')
    end = html.find(f'id="stat-{position + 1}"')
    return html[start : end if end > 0 else len(html)]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def by_person(project, owner, reviewer):
    release = build_release(
        project=project, owner=owner, reviewer=reviewer, id_column="pid", contribution_bound=3
    )
    # the 1-D histogram of position 1 becomes a numeric one with public bin edges
    spec = release.spec
    spec["statistics"][1]["columns"] = [
        {
            "name": "age", "kind": "numeric", "type": "float", "categories": [],
            "lower": None, "upper": None, "bin_edges": ["0", "18", "65", "120"],
            "missing": "category",
        }
    ]  # fmt: skip
    Release.objects.filter(pk=release.pk).update(spec=spec)
    return release


def test_each_statistic_states_the_rules_behind_its_truth(client, by_person):
    html = _page(client, by_person)
    count = _text(_section(html, 0))
    assert "true count" not in _text(html)  # not the raw data's count: the rules' count
    assert "At most 3 records per person (people are identified by the column “pid”)" in count
    assert "It counts every record kept." in count
    ages = _text(_section(html, 1))
    assert (
        "Values of age below 0 are counted in the first bin and values above 120 in the last bin"
        in ages
    )
    assert "“(Missing)” counts the records with no value for age." in ages
    by_sex = _text(_section(html, 2))
    assert "“(Other)” counts the records whose sex is none of the 2 declared categories." in by_sex
    assert "“(Missing)” counts the records with no value for sex." in by_sex
    assert "Records with no value for age_band are left out." in by_sex
    total = _text(_section(html, 3))
    assert "each value of income was clipped to the public range from 0 to 200,000" in total
    assert "values below 0 count as 0, values above 200,000 as 200,000" in total
    mean = _text(_section(html, 4))
    assert "Before the mean was taken, each value of income was clipped" in mean
    top = _text(_section(html, 5))
    assert "Only the 4 declared categories compete" in top


def test_row_level_release_says_no_records_were_dropped(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    count = _text(_section(_page(client, release), 0))
    assert "Every row counts on its own" in count
    assert "per person" not in count


def test_negative_count_warning_unless_the_reader_chose_clamping(client, by_person):
    raw = _section(_page(client, by_person), 1)
    note = re.search(r"<li data-show-when-raw( hidden)?>(.*?)</li>", raw, re.S)
    assert note and note.group(1) is None, "shown with the raw display"
    assert "Noise can make a count negative" in note.group(2)
    rounded = _section(_page(client, by_person, "?display=rounded"), 1)
    note = re.search(r"<li data-show-when-raw( hidden)?>", rounded)
    assert note and note.group(1) == " hidden", "hidden once counts are clamped"
    # sums and means are not counts: no such warning
    assert "data-show-when-raw" not in _section(_page(client, by_person), 3)


def test_page_numbers_go_through_the_formatting_module(client, by_person):
    html = _page(client, by_person, "?confidence=0.9")
    data = public_data.release_public_data(release=Release.objects.get(pk=by_person.pk))
    total = data["statistics"][3]
    value, hw = total["values"][0], total["intervals"]["0.9"]["per_cell"]["halfwidths"][0]
    section = _section(html, 3)
    assert f'<td class="num">{formatting.noisy(value, hw)}</td>' in section
    assert f"± {formatting.halfwidth(hw)}" in section
    assert "scale b = 4,000,000" in _text(section)  # formatting.scale of 4e6
    # no float's binary tail or exponent anywhere a person reads
    visible = _text(re.sub(r"<script.*?</script>", "", html, flags=re.S))
    assert not re.search(r"\d\.\d{7,}", visible)
    assert not re.search(r"\d[eE][+-]?\d", visible)


def test_csv_numbers_go_through_the_formatting_module(client, by_person):
    url = reverse("public:release-csv", args=[by_person.project.slug, by_person.pk])
    body = client.get(url + "?confidence=0.99").getvalue().decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    record = json.loads(
        client.get(
            reverse("public:release-json", args=[by_person.project.slug, by_person.pk])
            + "?confidence=0.99"
        ).content
    )
    total = record["statistics"][3]["cells"][0]  # exact in the JSON
    row = next(r for r in rows if r["kind"] == "sum")
    assert row["value"] == formatting.noisy(total["value"], total["halfwidth"], group=False)
    assert row["halfwidth"] == formatting.halfwidth(total["halfwidth"], group=False)
    assert row["lower"] == formatting.noisy(total["lower"], total["halfwidth"], group=False)
    assert "clipped to the public range from 0 to 200,000" in row["notes"]
    assert "At most 3 records per person" in rows[0]["notes"]


def test_a_large_two_way_table_is_a_table_not_a_heatmap(client, by_person):
    rows = [f"r{i:02d}" for i in range(12)]
    cols = [f"{5 * j}%" for j in range(13)] + ["Other"]  # 12 x 14 = 168 cells > 150
    replace_heatmap(by_person, row_labels=rows, col_labels=cols)
    html = _page(client, by_person)
    section = _section(html, 2)
    assert 'id="chart-2"' not in section, "no unreadable heatmap"
    grid = section[section.index('id="crosstab-2"') : section.index("</table>")]
    # dpportal's own cell is written as a bucket, apart from the declared labels
    assert re.findall(r'<th scope="col" class="num">(.*?)</th>', grid) == [*cols[:-1], "(Other)"]
    assert re.findall(r'<th scope="row">(.*?)</th>', grid) == rows
    assert len(re.findall(r"data-value-of=", grid)) == 12 * 14
    data = json.loads(
        re.search(r'id="release-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    assert data["statistics"][2]["layout"] == "crosstab"
    assert public_data.HEATMAP_MAX_CELLS == 150
