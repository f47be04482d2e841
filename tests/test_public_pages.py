"""The public dashboards: home, project dashboard, release page (issue 6)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from dpportal import formatting
from dpportal.privacy import accuracy
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


def release_url(release, name="public:release"):
    return reverse(name, args=[release.project.slug, release.pk])


def embedded_data(response) -> dict:
    html = response.content.decode()
    match = re.search(
        r'<script id="release-data" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, "the page embeds its chart data"
    return json.loads(match.group(1))


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


@pytest.fixture
def computed(project, owner, reviewer):
    return build_release(
        project=project, owner=owner, reviewer=reviewer, title="Not yet public", publish=False
    )


def test_home_lists_only_projects_with_published_releases(client, published, owner):
    hidden = ProjectFactory(name="Hidden project", created_by=owner)
    MembershipFactory(project=hidden, user=owner, role="owner")
    response = client.get(reverse("public:home"))
    assert response.status_code == 200
    html = response.content.decode()
    assert published.project.name in html
    assert reverse("public:project", args=[published.project.slug]) in html
    assert "Hidden project" not in html


def test_home_says_when_nothing_is_published(client, computed):
    response = client.get(reverse("public:home"))
    assert response.status_code == 200
    assert b"Nothing has been published yet" in response.content
    assert computed.project.name.encode() not in response.content


def test_project_dashboard_shows_budget_and_only_published_releases(client, published, computed):
    response = client.get(reverse("public:project", args=[published.project.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert published.title in html
    assert release_url(published) in html
    assert "Not yet public" not in html  # the computed release's title stays private
    # Spent: both releases were charged (0.3 each) against the cap of 1.
    assert re.search(r'id="epsilon-spent"><span[^>]*>0.6</span> of <span[^>]*>1</span><', html)
    assert re.search(r'id="epsilon-remaining"><span[^>]*>0.4</span><', html)
    assert "One respondent of the survey." in html  # the privacy unit
    assert f"/registry/{published.project.slug}/" in html or "registry" in html


def test_project_without_published_release_is_404(client, computed):
    response = client.get(reverse("public:project", args=[computed.project.slug]))
    assert response.status_code == 404
    assert client.get("/p/no-such-project/").status_code == 404


def test_release_page_embeds_intervals_from_the_stored_noise(client, published):
    payload = published.result.payload
    checked = 0
    for level in ("0.9", "0.95", "0.99"):
        # a page carries its own confidence level's intervals only (computed on demand)
        response = client.get(release_url(published) + f"?confidence={level}")
        assert response.status_code == 200
        data = embedded_data(response)
        assert data["levels"] == [level]
        assert [s["kind"] for s in data["statistics"]] == [
            "count", "histogram", "histogram", "sum", "mean", "argmax",
        ]  # fmt: skip
        for stat, entry in zip(data["statistics"], payload["statistics"], strict=True):
            assert list(stat["intervals"]) == [level]
            if stat["kind"] in ("count", "histogram", "sum"):
                assert stat["values"] == [float(v) for v in entry["values"]]
                per_cell = accuracy.result_halfwidth(entry["explanation"], confidence=level)
                together = accuracy.result_halfwidth(
                    entry["explanation"], confidence=level, simultaneous=True
                )
                got = stat["intervals"][level]
                assert got["per_cell"]["halfwidths"] == [per_cell] * len(stat["values"])
                assert got["simultaneous"]["halfwidths"] == [together] * len(stat["values"])
                assert got["per_cell"]["lower"] == [v - per_cell for v in stat["values"]]
                checked += 1
            if stat["kind"] == "mean":
                est, low, high = accuracy.mean_interval(entry["explanation"], confidence=level)
                assert stat["values"] == [est]
                assert stat["intervals"][level]["per_cell"]["lower"] == [low]
                assert stat["intervals"][level]["per_cell"]["upper"] == [high]
    assert checked == 12
    response = client.get(release_url(published))
    data = embedded_data(response)
    hist = data["statistics"][1]
    # a histogram of 4 cells: the simultaneous interval is wider than the per-bar one
    assert (
        hist["intervals"]["0.95"]["simultaneous"]["halfwidths"][0]
        > (hist["intervals"]["0.95"]["per_cell"]["halfwidths"][0])
    )
    # and a higher confidence is wider
    wide = embedded_data(client.get(release_url(published) + "?confidence=0.99"))
    narrow = embedded_data(client.get(release_url(published) + "?confidence=0.9"))
    assert (
        wide["statistics"][1]["intervals"]["0.99"]["per_cell"]["halfwidths"][0]
        > narrow["statistics"][1]["intervals"]["0.9"]["per_cell"]["halfwidths"][0]
    )


def test_release_page_explains_each_statistic_in_plain_language(client, published):
    response = client.get(release_url(published))
    html = response.content.decode()
    data = embedded_data(response)
    hist = data["statistics"][1]
    h = hist["intervals"]["0.95"]["per_cell"]["halfwidths"][0]
    big_h = hist["intervals"]["0.95"]["simultaneous"]["halfwidths"][0]
    section = html[html.index('id="stat-1"') : html.index('id="stat-2"')]
    text = re.sub(r"<[^>]+>", "", section)
    assert "true count plus" not in text  # it estimates the count under the release's rules
    assert (
        "Each bar estimates a count made under the rules below: that count plus random noise "
        "drawn from a discrete Laplace" in text
    )
    assert f"within plus or minus {formatting.halfwidth(h)} of any one bar" in text
    assert f"all 4 bars at once lie within plus or minus {formatting.halfwidth(big_h)}" in text
    assert "scale b = 20" in text  # L / epsilon = 1 / 0.05
    assert "Epsilon" in text and "0.05" in text
    # who approved is said once for the page (by role), not again under each statistic
    assert "Privacy unit" not in text and "Approved" not in text
    assert "a reviewer of the project" in html and "ravi-reviewer" not in html
    # the chart has a text alternative and the numbers are in a table
    assert re.search(
        r'id="chart-1" role="img" aria-label="Bar chart of Respondents by region', html
    )
    assert 'id="table-body-1"' in html
    for cell in ("North", "South", "East", "West"):
        assert f'<th scope="row">{cell}</th>' in section
    # the 2-D histogram: a heatmap, each cell's row and column in the table
    heat = html[html.index('id="stat-2"') : html.index('id="stat-3"')]
    assert "Heatmap of Respondents by sex and age band" in heat
    assert heat.count("<tr>") == 1 + 6
    # the argmax: a statement of the label, never counts
    top = data["statistics"][5]
    statement = html[html.index('id="stat-5"') :]
    assert f"<strong>{top['argmax']['label']}</strong>" in statement
    assert "Report Noisy Max" in statement
    assert top["values"] == []


def test_release_page_uses_local_plotly_and_no_cdn(client, published):
    html = client.get(release_url(published)).content.decode()
    # deferred: the page's text is shown and usable before plotly.js is evaluated
    assert '<script src="/static/vendor/plotly/plotly-dpportal.min.js" defer></script>' in html
    assert '<script src="/static/js/public-release.js" defer></script>' in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_rounded_display_clamps_counts_and_their_intervals_alike(client, published):
    response = client.get(release_url(published) + "?display=rounded&confidence=0.99")
    assert response.status_code == 200
    html = response.content.decode()
    data = embedded_data(response)
    assert data["default_confidence"] == "0.99"
    assert "Each interval is then the value shown plus or minus its half-width, cut at 0" in html
    section = html[html.index('id="table-body-1"') : html.index('id="stat-2"')]
    hist = data["statistics"][1]
    shown = re.findall(r'</th>\s*<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', section)
    assert len(shown) == 4
    for (value, lower), noisy, h in zip(
        shown, hist["values"], hist["intervals"]["0.99"]["per_cell"]["halfwidths"], strict=True
    ):
        assert value.replace(",", "") == str(max(0, round(noisy)))
        # the interval of the value shown: +- h around it, cut at 0 (kinds.base.clamped_at_zero)
        expected = max(0, max(0, round(noisy)) - h)
        assert float(lower.replace(",", "")) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    "query, message",
    [
        ("confidence=0.5", "confidence must be one of 0.9, 0.95 or 0.99"),
        ("confidence=abc", "confidence must be one of"),
        ("intervals=all", "intervals must be"),
        ("display=%3Cscript%3E", "display must be"),
    ],
)
def test_bad_options_get_a_clear_400(client, published, query, message):
    response = client.get(release_url(published) + "?" + query)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert b"<script>" not in response.content


def test_percent_confidence_is_understood(client, published):
    response = client.get(release_url(published) + "?confidence=99%25")
    assert response.status_code == 200
    assert embedded_data(response)["default_confidence"] == "0.99"


def test_gaussian_release_states_delta_and_sigma(client, project, owner, reviewer):
    release = build_release(
        project=project,
        owner=owner,
        reviewer=reviewer,
        mechanism="gaussian",
        epsilon_each="0.1",
        delta_each="0.000001",
    )
    response = client.get(release_url(release))
    assert response.status_code == 200
    html = response.content.decode()
    assert "discrete Gaussian distribution" in html
    assert "parameter sigma" in html
    assert "delta = 6\u00a0×\u00a010⁻⁶" in re.sub(r"<[^>]+>", "", html)
    data = embedded_data(response)
    entry = release.result.payload["statistics"][1]
    assert data["statistics"][1]["intervals"]["0.95"]["per_cell"]["halfwidths"][0] == (
        accuracy.result_halfwidth(entry["explanation"], confidence="0.95")
    )


def test_unpublished_release_is_404_for_everyone_on_public_urls(client, computed, owner):
    for name in ("public:release", "public:release-json", "public:release-csv"):
        assert client.get(release_url(computed, name)).status_code == 404
    client.force_login(owner)  # even its owner: the public pages show published releases only
    for name in ("public:release", "public:release-json", "public:release-csv"):
        assert client.get(release_url(computed, name)).status_code == 404


def test_published_release_under_another_project_slug_is_404(client, published, owner):
    other = ProjectFactory(created_by=owner)
    url = reverse("public:release", args=[other.slug, published.pk])
    assert client.get(url).status_code == 404
    assert (
        client.get(reverse("public:release", args=[published.project.slug, 999999])).status_code
        == 404
    )


def test_anonymous_dataset_pages_are_404(client, published):
    """Every page of the datasets app, each reversed with a real dataset and project."""
    from django.urls import get_resolver
    from django.urls.converters import IntConverter

    dataset_id = published.dataset_id
    patterns = [
        pattern
        for top in get_resolver().url_patterns
        if getattr(top, "namespace", None) == "datasets"
        for pattern in top.url_patterns
    ]
    urls = []
    for pattern in patterns:
        converters = pattern.pattern.converters
        kwargs = {
            name: dataset_id if isinstance(converter, IntConverter) else published.project.slug
            for name, converter in converters.items()
        }
        # reverse() raises for a pattern these arguments do not fit: the test then fails
        # loudly instead of silently checking fewer pages
        urls.append(reverse(f"datasets:{pattern.name}", kwargs=kwargs))
    assert len(urls) == len(patterns) >= 2, "the datasets app defines its pages"
    assert f"/datasets/{dataset_id}/" in urls
    for url in urls:
        response = client.get(url)
        assert response.status_code == 404, f"{url} answered {response.status_code}"


def test_signed_in_reader_gets_a_private_uncached_page(client, published):
    stranger = UserFactory(username="stranger")
    client.force_login(stranger)
    response = client.get(release_url(published))
    assert response.status_code == 200
    assert "private" in response["Cache-Control"]
    assert "Log out stranger" in response.content.decode()
