"""Honest empty cells and clamped counts: one rule in the kinds, rendered by every surface.

A grouped mean whose group "Other" has no rows is flagged uninformative by its kind
(releases.kinds.base.uninformative) and every surface renders that flag: the public
page's table and sentence say "too few records to estimate" with one warning, data.json
and the API keep the noisy value with `"uninformative": true`, data.csv leaves the
value empty, the owner's results page says the words. A count shown rounded and
clamped at zero gets an interval clamped the same way (kinds.base.clamped_at_zero).
"""

from __future__ import annotations

import csv
import io
import re
from fractions import Fraction

import pytest
from django.urls import reverse
from django.utils import translation

from dpportal.privacy import accuracy, mechanisms, spread, spread_parts
from dpportal.privacy.rng import SeededTestRandom
from releases import kinds
from releases.kinds.base import Cell, clamped_at_zero, uninformative
from releases.public import notes
from tests.test_public_pages import embedded_data, release_url
from tests.uninformative_builders import CELLS, LABEL, build, grouped_mean_entry

pytestmark = pytest.mark.django_db

COUNT = {"noise": "discrete_laplace", "scale": "2"}  # h at 95 %: about 2 ln 20, so 6


@pytest.fixture
def release(project, owner, reviewer):
    return build(project=project, owner=owner, reviewer=reviewer)


def test_the_rule_counts_and_ranges_from_public_values():
    h = accuracy.explanation_halfwidth(COUNT, "0.95")
    narrow = {"low": 10.0, "high": 20.0, "lowest": 0.0, "highest": 100.0}
    # a noisy count within its own half-width of zero: the group may be empty
    assert uninformative(noisy_count=h, count_explanation=COUNT, confidence="0.95", **narrow)
    assert uninformative(noisy_count=-3, count_explanation=COUNT, confidence="0.95", **narrow)
    assert not uninformative(
        noisy_count=h + 1, count_explanation=COUNT, confidence="0.95", **narrow
    )
    # a count well above zero, but an interval that spans the whole declared range
    whole = {**narrow, "low": 0.0, "high": 100.0}
    assert uninformative(noisy_count=500, count_explanation=COUNT, confidence="0.95", **whole)
    almost = {**narrow, "low": 0.5, "high": 100.0}
    assert not uninformative(noisy_count=500, count_explanation=COUNT, confidence="0.95", **almost)
    # judged at the confidence asked: a wider tail bound flags more
    h99 = accuracy.explanation_halfwidth(COUNT, "0.99")
    assert h99 > h
    assert uninformative(noisy_count=h99, count_explanation=COUNT, confidence="0.99", **narrow)


def test_the_grouped_mean_flags_the_empty_group_at_every_level():
    entry = grouped_mean_entry()
    kind = kinds.get("grouped_mean")
    for level in ("0.9", "0.95", "0.99"):
        for simultaneous in (False, True):
            cells = kind.intervals(entry, confidence=level, simultaneous=simultaneous)
            assert [c.flag for c in cells] == [None, None, kinds.UNINFORMATIVE]
    # the flag is the release's (stored) confidence's: the same whatever level is shown
    stored = entry["explanation"]["confidence"]
    assert Fraction(stored) == Fraction("0.95")


def test_an_ungrouped_mean_and_a_spread_with_no_rows_are_flagged():
    lo, hi = Fraction(0), Fraction(1000)
    rng = SeededTestRandom(5)
    mean = mechanisms.release_mean(
        0, 0, lower=lo, upper=hi, granularity=Fraction(1), mechanism="laplace",
        epsilon=Fraction(1), confidence="0.95", rng=rng,
    ).to_dict()  # fmt: skip
    entry = {"kind": "mean", "values": [mean["estimate"]], "explanation": mean}
    assert kinds.get("mean").intervals(entry, confidence="0.9")[0].flag == kinds.UNINFORMATIVE
    full = mechanisms.release_mean(
        5000 * 500, 5000, lower=lo, upper=hi, granularity=Fraction(1), mechanism="laplace",
        epsilon=Fraction(1), confidence="0.95", rng=rng,
    ).to_dict()  # fmt: skip
    entry = {"kind": "mean", "values": [full["estimate"]], "explanation": full}
    assert kinds.get("mean").intervals(entry, confidence="0.9")[0].flag is None

    gamma = spread_parts.spread_granularity(lo, hi, epsilon=Fraction(1))
    for rows, flagged in ((0, True), (3000, False)):
        aggregator = spread_parts.SpreadAggregator(lower=lo, upper=hi, granularity=gamma)
        if rows:
            aggregator.add([float(i % 1000) for i in range(rows)])
        else:
            aggregator.add([])
        result = spread.release_spread(
            aggregator.counts, aggregator.sums, aggregator.squares, lower=lo, upper=hi,
            granularity=gamma, mechanism="laplace", epsilon=Fraction(1), confidence="0.95",
            rng=rng,
        ).to_dict()  # fmt: skip
        for name in ("stddev", "variance"):
            entry = {"kind": name, "values": [0], "explanation": result}
            cell = kinds.get(name).intervals(entry, confidence="0.99")[0]
            assert (cell.flag == kinds.UNINFORMATIVE) is flagged


def _table_row(html: str, position: int, cell: str) -> list[str]:
    body = html[html.index(f'id="table-body-{position}"') :]
    body = body[: body.index("</tbody>")]
    match = re.search(
        rf"<th scope=\"row\"[^>]*>{re.escape(cell)}</th>\s*((?:<td[^>]*>[^<]*</td>)+)", body
    )
    assert match, cell
    return re.findall(r"<td[^>]*>([^<]*)</td>", match.group(1))


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_public_page_shows_words_one_warning_and_no_midpoint(client, release, language):
    header = {"HTTP_ACCEPT_LANGUAGE": "zh-CN" if language == "zh-hans" else "en"}
    response = client.get(release_url(release), **header)
    html = response.content.decode()
    with translation.override(language):
        words = notes.too_few()
    data = embedded_data(response)
    stat = next(s for s in data["statistics"] if s["kind"] == "grouped_mean")
    assert stat["uninformative_cells"] == [False, False, True]
    assert stat["text"]["0.95"]["value"][2] == words
    other = stat["cells"][2]
    value, lower, upper, halfwidth = _table_row(html, stat["position"], other)
    assert (value, lower, upper, halfwidth) == (words, "—", "—", "")
    section = html[html.index(f'id="stat-{stat["position"]}"') :]
    section = section[: section.index("</section>")]
    assert "100,000" not in section and "100000" not in section  # never the midpoint
    assert section.count('class="notice"') == 1  # one warning, not two
    assert other in re.search(r'<p class="notice"[^>]*>([^<]*)</p>', section).group(1)
    # the other groups keep their numbers
    north = _table_row(html, stat["position"], "North")
    assert north[0] != words and north[1] != "—"


def test_downloads_and_api_keep_the_value_with_the_flag(client, release):
    slug = release.project.slug
    record = client.get(reverse("public:release-json", args=[slug, release.pk])).json()
    api = client.get(reverse("api:public-release", args=[slug, release.pk])).json()
    for source in (record, api):
        stat = next(s for s in source["statistics"] if s["kind"] == "grouped_mean")
        flags = [c["uninformative"] for c in stat["cells"]]
        assert flags == [False, False, True]
        assert stat["cells"][2]["value"] == 100000.0  # kept for machines
        assert stat["cells"][2]["cell"] == CELLS[2]
        assert "uninformative" in source["interval_note"]
        counts = next(s for s in source["statistics"] if s["kind"] == "histogram")
        assert not any(c["uninformative"] for c in counts["cells"])
    response = client.get(reverse("public:release-csv", args=[slug, release.pk]))
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["statistic_label"] == LABEL]
    assert [r["uninformative"] for r in rows] == ["false", "false", "true"]
    assert rows[2]["value"] == "" and rows[0]["value"] != ""
    assert rows[2]["lower"] == "0"  # the interval stays, formatted like every other


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_owner_results_say_the_words(client, release, owner, language):
    client.force_login(owner)
    header = {"HTTP_ACCEPT_LANGUAGE": "zh-CN" if language == "zh-hans" else "en"}
    html = client.get(reverse("releases:detail", args=[release.pk]), **header).content.decode()
    with translation.override(language):
        words = notes.too_few()
    card = html[html.index(f"<h3>{LABEL}</h3>") :]
    card = card[: card.index("</table>")]
    assert card.count(f'<td class="num" data-uninformative>{words}</td>') == 1
    assert card.index("North") < card.index("data-uninformative") > card.index("South")
    assert "100,000" not in card


def test_clamping_keeps_the_interval_consistent_with_the_value():
    # an interval wholly below zero: 0, at most h
    cell = clamped_at_zero(Cell(-140.0, -270.0, -10.0, 130.0))
    assert (cell.value, cell.low, cell.high) == (0.0, 0.0, 130.0)
    # straddling zero: the value shown is inside, nothing below zero
    cell = clamped_at_zero(Cell(-20.0, -150.0, 110.0, 130.0))
    assert (cell.value, cell.low, cell.high) == (0.0, 0.0, 130.0)
    # positive counts: unchanged
    cell = clamped_at_zero(Cell(500.0, 370.0, 630.0, 130.0))
    assert (cell.value, cell.low, cell.high) == (500.0, 370.0, 630.0)
    # rounding widens by what it moved
    cell = clamped_at_zero(Cell(10.4, 0.4, 20.4, 10.0))
    assert (cell.value, cell.low, cell.high) == (10.0, 0.0, pytest.approx(20.4))
    # coverage: for every true count x >= 0 inside the noisy interval, the shown one holds
    for v in range(-300, 300, 7):
        shown = clamped_at_zero(Cell(float(v), v - 130.0, v + 130.0, 130.0))
        assert shown.low <= shown.value <= shown.high and shown.low >= 0
        for x in range(0, 500):
            if v - 130 <= x <= v + 130:
                assert shown.low <= x <= shown.high


def test_rounded_display_never_contradicts_its_interval(client, release):
    response = client.get(release_url(release) + "?display=rounded")
    html = response.content.decode()
    data = embedded_data(response)
    hist = data["statistics"][1]
    for level in data["levels"]:
        for interval_kind in ("per_cell", "simultaneous"):
            iv = hist["intervals"][level][interval_kind]
            for v, h, low, high in zip(
                hist["values"], iv["halfwidths"], iv["rounded_lower"], iv["rounded_upper"],
                strict=True,
            ):  # fmt: skip
                shown = max(0, round(v))
                assert low == max(0, shown - h) and high == shown + h
                assert 0 <= low <= shown <= high
    # the sunk cell: 0 beside "0 to h", never beside an interval below zero
    h = hist["intervals"]["0.95"]["per_cell"]["halfwidths"][0]
    assert hist["values"][0] < -h
    value, lower, upper, _ = _table_row(html, 1, hist["cells"][0])
    assert value == "0" and lower == "0"
    assert float(upper.replace(",", "")) == pytest.approx(h, abs=0.5)
    # the raw display keeps the noisy value and its own interval
    raw = client.get(release_url(release)).content.decode()
    value, lower, upper, _ = _table_row(raw, 1, hist["cells"][0])
    assert float(value.replace(",", "")) == hist["values"][0]
    assert float(upper.replace(",", "")) < 0
