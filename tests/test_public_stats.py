"""Public page, data and members page of grouped means, quantiles and spread (issue 14)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from django.urls import reverse

from dpportal.privacy.grouped_release import grouped_mean_intervals
from dpportal.privacy.quantiles import quantile_rank_errors
from dpportal.privacy.spread import spread_intervals
from releases import lifecycle
from releases.models import Release
from releases.public.data import release_public_data, statistic_texts
from tests.public_builders import build_release
from tests.stats_builders import add_stats_entries
from tests.test_public_pages import embedded_data, release_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    add_stats_entries(release)
    release = Release.objects.get(pk=release.pk)
    return lifecycle.release_publish(release=release, actor=owner)


def _by_kind(data: dict) -> dict:
    return {s["kind"]: s for s in data["statistics"] if s["position"] >= 6}


def test_public_data_recomputes_each_interval_from_the_stored_explanation(release):
    stats = _by_kind(release_public_data(release=Release.objects.get(pk=release.pk)))
    entries = {e["kind"]: e for e in release.result.payload["statistics"]}
    mean = stats["grouped_mean"]
    assert mean["layout"] == "grouped_bars" and mean["shape"] == [3, 2]
    assert (mean["row_title"], mean["col_title"]) == ("plan", "sex")
    for level in ("0.9", "0.95", "0.99"):
        expected = grouped_mean_intervals(entries["grouped_mean"]["explanation"], confidence=level)
        iv = mean["intervals"][level]["per_cell"]
        assert iv["lower"] == [e[1] for e in expected]
        assert iv["upper"] == [e[2] for e in expected]
        sd = stats["stddev"]["intervals"][level]["simultaneous"]
        cell = spread_intervals(entries["stddev"]["explanation"], confidence=level)[0]
        assert sd["lower"] == [float(Fraction(cell["sd_interval"][0]))]
        q = stats["quantiles"]["intervals"][level]["per_cell"]
        assert q["rank_errors"] == quantile_rank_errors(
            entries["quantiles"]["explanation"], confidence=level
        )
        # the intervals released at 95 %: shown at 90 and 95 %, not claimed at 99 %
        ends = entries["quantiles"]["intervals"]["ends"]
        released = [float(Fraction(e["low"])) for e in ends]
        assert q["lower"] == (released if level != "0.99" else [None, None, None])
    # the 99 % interval is wider than the 90 % one
    m90, m99 = (mean["intervals"][lv]["per_cell"] for lv in ("0.9", "0.99"))
    assert all(a <= b for a, b in zip(m99["lower"], m90["lower"], strict=True))
    assert stats["quantiles"]["cells"] == ["Lower quartile", "Median", "Upper quartile"]
    assert stats["stddev"]["layout"] == "figure"


def test_public_page_says_each_in_plain_words_with_its_interval(client, release):
    response = client.get(release_url(release))
    assert response.status_code == 200
    html = response.content.decode()
    data = embedded_data(response)
    stats = _by_kind(data)
    mean = stats["grouped_mean"]
    text = statistic_texts(mean)["0.95"]
    # grouped means per group, each with its interval, in words
    assert f'Free / female: <span data-fill="cell-value" data-index="0">{text["value"][0]}' in html
    assert re.search(r"Free / female: <span[^>]*>[^<]+</span> \(between <span", html)
    assert "the number of rows is not published" in html
    # the quantiles: permute-and-flip on the owner's grid, the rank error in words and table
    q = stats["quantiles"]
    assert "permute-and-flip" in html and "101 values from 0 to 10,000" in html
    ranks = q["quantile_chart"]["bands"]["0.95"]["per_cell"]["ranks_text"]
    assert f"the median is {q['text']['0.95']['value'][1]}: with" in html
    assert f"± {ranks[1]}</td>" in html
    # the standard deviation with its interval
    sd = statistic_texts(stats["stddev"])["0.95"]["per_cell"]
    assert re.search(
        r"standard deviation it estimates lies between <span[^>]*>"
        + re.escape(sd["lower"][0])
        + r"</span> and <span[^>]*>"
        + re.escape(sd["upper"][0]),
        html,
    )
    assert "public-charts-stats.js" in html
    # accessible tables: two grouping columns as two header cells per row
    assert '<th scope="col">plan</th><th scope="col">sex</th>' in html


def test_clamped_variance_is_said(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    entries = add_stats_entries(release)
    result = release.result
    payload = result.payload
    payload["statistics"][-1]["explanation"]["cells"][0]["clamped"] = "low"
    type(result).objects.filter(pk=result.pk).update(payload=payload)
    release = lifecycle.release_publish(release=Release.objects.get(pk=release.pk), actor=owner)
    html = client.get(release_url(release)).content.decode()
    assert "came out negative" in html and "clamped to 0" in html
    assert entries[-1]["kind"] == "stddev"


def test_members_results_page_shows_the_new_kinds(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    add_stats_entries(release)
    # build_release records a summary without previews; the page lists a real one's
    type(release.budget_request).objects.filter(pk=release.budget_request_id).update(
        summary={"statistics": []}
    )
    client.force_login(owner)
    html = client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    assert "Mean spending by plan and sex" in html
    assert "Free / female" in html and "Median" in html
    assert "rank error" in html
