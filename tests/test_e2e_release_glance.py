"""The public release page reads at a glance, measured in chromium at 1366 px.

A summary of the release comes first (what was measured, the key numbers, the privacy
loss in one line); a release with many statistics shows them as small multiples; the
explanations appear once per page and open per chart on demand; the seeded demo page is
at most a third of the height it had when every chart repeated its boxes of prose
(15,900 px at 1366 px wide for 13 statistics, scaled to the statistics it holds); a
print stylesheet lays the release out for paper.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import translation
from django.utils.translation import gettext

from releases.demo import PUBLISHED_TITLE
from releases.models import Release
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    ARTIFACTS,
    Pages,
    browser,
    draw_every_chart,
)

pytestmark = [pytest.mark.browser]

#: the demo page's height at 1366 px before the page was laid out for a glance, when the
#: demo release held 13 statistics (the budget scales with the statistics it holds now)
HEIGHT_BEFORE_PX = 15_900
STATISTICS_BEFORE = 13


def _open(browser, live_server, name: str, language: str) -> Pages:  # noqa: F811
    pages = Pages(browser, live_server, name, viewport=(1366, 768))
    pages.context.set_extra_http_headers({"Accept-Language": language})
    return pages


def _demo(browser, live_server, language: str) -> tuple[Pages, Release]:  # noqa: F811
    call_command("seed_demo", stdout=StringIO())
    release = Release.objects.get(title=PUBLISHED_TITLE)
    pages = _open(browser, live_server, f"glance-{language}", language)
    pages.goto(f"/p/{release.project.slug}/releases/{release.pk}/")
    pages.page.wait_for_selector("body[data-charts-ready='1']")
    return pages, release


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_summary_first_small_multiples_and_a_third_of_the_height(
    browser,  # noqa: F811
    live_server,
    language,
):
    pages, release = _demo(browser, live_server, language)
    page = pages.page
    try:
        statistics = release.result.payload["statistics"]
        # the summary comes first: above every statistic, one linked row per statistic
        glance = page.locator("#glance")
        first_card = page.locator("section.statistic").first
        assert glance.bounding_box()["y"] < first_card.bounding_box()["y"]
        with translation.override(language):
            assert page.locator("#glance-heading").inner_text() == gettext("At a glance")
            loss = page.locator("#glance .loss-line").inner_text()
            assert gettext("Privacy loss of this release") in loss
        assert f"= {release.epsilon.normalize()}" in loss.replace(",", "")
        rows = page.locator("#summary tbody tr")
        assert rows.count() == len(statistics)
        for entry in statistics:
            link = page.locator(f"#summary-{entry['position']} a")
            assert link.get_attribute("href") == f"#stat-{entry['position']}"
            heading = page.locator(f"#stat-{entry['position']}-heading").inner_text()
            assert link.inner_text() == heading
        # a single number's key figure is the number its card's table states
        single = next(e for e in statistics if e["kind"] == "mean")
        table_value = page.locator(f"#table-body-{single['position']} td").first.text_content()
        assert table_value.strip() in page.locator(f"#summary-{single['position']} td").inner_text()
        # the argmax's answer is in the summary
        argmax = next(e for e in statistics if e["kind"] == "argmax")
        answer = page.locator(f"#statement-{argmax['position']} strong").inner_text()
        assert answer in page.locator(f"#summary-{argmax['position']} td").inner_text()

        # small multiples: at 1366 px the statistics sit two to a row
        boxes = [card.bounding_box() for card in page.locator("section.statistic").all()]
        assert len({round(b["x"]) for b in boxes}) == 2
        assert boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] > boxes[0]["x"] + boxes[0]["width"]

        # explanations once per page, each statistic's open on demand
        with translation.override(language):
            unit = gettext("Privacy unit")
        in_facts = page.locator("#release-facts dt", has_text=unit).count()  # the record's
        assert page.locator("dt", has_text=unit).count() - in_facts == 1
        explanation = page.locator(f"#stat-{single['position']} details.explanation")
        assert explanation.get_attribute("open") is None
        assert not explanation.locator("dl.facts").is_visible()
        explanation.locator("summary").click()
        assert explanation.locator("dl.facts").is_visible()
        explanation.locator("summary").click()  # as the page opened

        draw_every_chart(page)
        height = page.evaluate("document.documentElement.scrollHeight")
        pages.shot("page")
        budget = HEIGHT_BEFORE_PX / 3 * len(statistics) / STATISTICS_BEFORE
        assert height <= budget, f"the page is {height} px tall at 1366 px"
        assert pages.errors == [] and pages.outside == []
    finally:
        pages.close()


@pytest.mark.django_db(transaction=True)
def test_print_view_is_one_column_with_everything_open(browser, live_server):  # noqa: F811
    pages, release = _demo(browser, live_server, "en")
    page = pages.page
    try:
        # on screen: the print button (revealed by the page's script) and the facts
        assert page.locator("[data-print]").is_visible()
        assert page.locator("#release-facts").is_visible()
        page.emulate_media(media="print")
        # the controls, the site's header and the download links are not printed
        assert not page.locator("#interval-controls").is_visible()
        assert not page.locator("header.site").is_visible()
        assert not page.locator("form.languages").is_visible()
        assert not page.locator("p.crumbs").is_visible()
        assert not page.locator("[data-print]").is_visible()
        # the facts of the release are printed, with each statistic's exact noise
        assert page.locator("#release-facts dl.facts").is_visible()
        assert page.locator("#release-facts-statistics").is_visible()
        # every explanation and every table is printed, though none was opened
        for details in page.locator("section.statistic details").all():
            assert details.get_attribute("open") is None
            assert details.locator("table, dl, p").first.is_visible()
        # one statistic under the other
        xs = {round(card.bounding_box()["x"]) for card in page.locator("section.statistic").all()}
        assert len(xs) == 1
        page.pdf(path=str(ARTIFACTS / "glance-print.pdf"))
        assert pages.errors == []
    finally:
        pages.close()
