"""dpportal's own cells read apart from the declared categories on the public page, in
English and Chinese (chromium).

The release is one computed before such names were refused: its region column declared
the categories "Other" and "其他", the same names (in the two languages) as the cell
dpportal adds for values outside the list. Each bucket is written "(Other)" / "(其他)",
in italics with a note; the chart has one bar per table row, as many as its explanation
says, and the most common category says it is a declared one.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
from django.utils import translation

from dpportal.buckets import bucket_note, bucket_text
from dpportal.catalogues import compile_all
from dpportal.privacy import mechanisms
from releases.models import Release, ReleaseResult
from tests.public_builders import build_release
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    draw_every_chart,
    login,
)

pytestmark = [pytest.mark.browser]

DECLARED = ["north", "south", "Other", "其他"]
CELLS = [*DECLARED, "Other", "Missing"]  # as compute names them: categories, Other, Missing


def _old_declaration(release: Release) -> None:
    """Give the 1-D histogram (position 1) and the most common category (position 5) a
    region column that declared "Other" and "其他" (missing values counted)."""
    true = np.array([400, 300, 120, 90, 60, 30])
    noisy = mechanisms.release_counts(true, mechanism=release.mechanism, epsilon=Fraction("1"))
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    payload["statistics"][1].update(
        cells=CELLS, values=list(noisy.values), explanation=noisy.to_dict()
    )
    payload["statistics"][5].update(cells=DECLARED, argmax={"index": 2, "label": "Other"})
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    spec = release.spec
    for position in (1, 5):
        (region,) = spec["statistics"][position]["columns"]
        region.update(categories=DECLARED, missing="category")
    Release.objects.filter(pk=release.pk).update(spec=spec)


def _bars(page, position: int) -> int:
    """The bars Plotly drew (one per distinct category on the axis)."""
    return page.evaluate(
        "(p) => document.querySelectorAll('#chart-' + p + ' .bars .point').length", position
    )


def _ticks(page, position: int) -> list[str]:
    return page.evaluate(
        """(p) => Array.from(document.querySelectorAll('#chart-' + p + ' .xtick text'))
            .sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left)
            .map((n) => n.textContent)""",
        position,
    )


def _written(language: str) -> tuple[str, str, str]:
    """How the page writes the two buckets in `language`, and the Other bucket's note."""
    with translation.override(language):
        return bucket_text("other"), bucket_text("missing"), bucket_note("other")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_buckets_read_apart_from_declared_categories(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    compile_all()
    other, missing, note = _written(language)
    if language == "en":
        assert (other, missing) == ("(Other)", "(Missing)")
    else:
        assert "其他" in other and "缺失" in missing and other != "其他"
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    _old_declaration(release)
    pages = Pages(browser, live_server, f"buckets-{language}")
    pages.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    try:
        pages.goto(f"/p/{project.slug}/releases/{release.pk}/")
        page = pages.page
        assert page.locator("html").get_attribute("lang") == language
        page.wait_for_selector("body[data-charts-ready='1']")
        draw_every_chart(page)
        # the table: six rows, the declared names as declared, the buckets in their own form
        heads = page.locator("#table-body-1 th")
        assert heads.all_text_contents() == [*DECLARED, other, missing]
        buckets = page.locator("#table-body-1 th.bucket")
        assert buckets.all_text_contents() == [other, missing]
        assert page.locator("#table-body-1 th:not(.bucket)").count() == 4
        titles = [b.get_attribute("title") for b in buckets.all()]
        assert all(titles) and titles[0] != titles[1]
        assert titles[0] == note
        style = page.eval_on_selector(
            "#table-body-1 th.bucket", "n => getComputedStyle(n).fontStyle"
        )
        assert style == "italic"
        # the chart: one bar per row, as many as its explanation states
        assert _bars(page, 1) == 6
        assert _ticks(page, 1) == [*DECLARED, other, missing]
        page.locator("#stat-1 details.explanation summary").click()  # the reader unfolds it
        explanation = page.locator("#stat-1 .explanation p").first.inner_text()
        assert re.search(r"(?<!\d)6(?!\d)", explanation), explanation
        # the notes name the bucket in its own form too
        notes = page.locator("#stat-1 ul.notes").inner_text()
        assert f"“{other}”" in notes and f"“{missing}”" in notes, notes
        # the most common category is a declared one, and says so
        statement = page.locator("#statement-5").inner_text()
        assert "Other" in statement and other not in statement
        assert page.locator("#declared-note-5").count() == 1
        pages.shot("release")
        assert pages.errors == [], pages.errors
        assert pages.outside == [], pages.outside
    finally:
        pages.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_owners_results_write_the_buckets_apart_too(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    compile_all()
    other, missing, _ = _written(language)
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    _old_declaration(release)
    pages = Pages(browser, live_server, f"buckets-results-{language}")
    try:
        page = pages.page
        login(pages, owner)
        pages.context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_server.url}]
        )
        pages.goto(f"/releases/{release.pk}/")
        assert page.locator("html").get_attribute("lang") == language
        cells = page.locator("td.bucket").all_inner_texts()
        assert cells[:2] == [other, missing]
        # the declared "Other" and "其他" stay plain cells beside them
        plain = page.locator("td:not(.bucket)").all_inner_texts()
        assert "Other" in plain and "其他" in plain
        assert page.locator("td.bucket").first.get_attribute("title")
        assert pages.errors == [], pages.errors
    finally:
        pages.close()
