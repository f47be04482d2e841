"""Numbers in chromium, in English and in Chinese: one quantity reads the same everywhere.

The public release page, the owner's results, the epsilon registry and the JSON and CSV
downloads write each quantity with the digits dpportal.formatting.QUANTITIES gives it:
an epsilon of 0.16666666667 reads 0.1667 in every table, a delta of
0.000000014285714285714285 reads 1.429 × 10⁻⁸, every whole part of 1000 or more in a
table carries the thousands separator, and a half-width reads the same on the page, in
the CSV and in the JSON's `*_display` beside its exact value. Screenshots: artifacts/e2e/.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from fractions import Fraction
from io import StringIO

import pytest
from django.core.management import call_command

from dpportal import formatting
from dpportal.catalogues import compile_all
from releases.demo import PUBLISHED_TITLE
from releases.models import Release
from tests.factories import PASSWORD
from tests.public_builders import build_release
from tests.test_e2e_browser import (  # noqa: F401 (browser: the chromium fixture)
    Pages,
    browser,
    login,
)

pytestmark = [pytest.mark.browser]

LANGUAGES = {"en": "en", "zh": "zh-CN,zh;q=0.9"}
EPSILON_EACH = "0.16666666667"
DELTA_EACH = "0.000000014285714285714285"
#: a run of four digits or more that no separator split: an ungrouped whole part
UNGROUPED = re.compile(r"(?<![\d,.])\d{4,}")


def _plain(text: str) -> str:
    """innerText with no-break spaces as spaces (the × of a delta is held by them)."""
    return text.replace("\u00a0", " ")


def _readable(value) -> str:
    return _plain(formatting.delta(value))


def _open(chromium, live_server, name: str, language: str, user=None) -> Pages:
    pages = Pages(chromium, live_server, name)
    if user is not None:
        login(pages, user)  # the login form in English; the pages after it in `language`
    pages.context.set_extra_http_headers({"Accept-Language": LANGUAGES[language]})
    return pages


def _assert_tables_grouped(page, where: str) -> None:
    """Every number cell of every table: whole parts of 1000 or more are grouped."""
    cells = [_plain(t) for t in page.locator("td.num").all_inner_texts()]
    assert cells, f"{where}: no number cells"
    ungrouped = [t for t in cells if UNGROUPED.search(t)]
    assert ungrouped == [], f"{where}: numbers without separators: {ungrouped}"


def _assert_budget_digits(text: str, where: str) -> None:
    """The statistics' epsilon reads 0.1667, their delta 1.429 × 10⁻⁸, never the raw forms."""
    assert "0.1667" in text, where
    assert "0.16666" not in text, where
    assert _readable(Fraction(DELTA_EACH)) == "1.429 × 10⁻⁸"
    assert "1.429 × 10⁻⁸" in text, where
    assert not re.search(r"0\.0000", text), f"{where}: a delta written with its zeros"


def _download(pages: Pages, path: str):
    response = pages.page.request.get(pages.base + path)
    assert response.status == 200, path
    return response


def _halfwidth_cells(page, position: int) -> list[str]:
    """The half-width column of a statistic's table on the public page ('± 110' -> '110')."""
    texts = page.locator(f"#table-body-{position} tr td:nth-of-type(4)").all_text_contents()
    return [_plain(t).replace("±", "").strip() for t in texts]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_one_quantity_reads_alike_on_page_results_registry_and_downloads(
    browser,  # noqa: F811
    live_server,
    project,
    owner,
    reviewer,
    language,
):
    compile_all()
    project.epsilon_cap = Decimal("5")
    project.save(update_fields=["epsilon_cap"])
    release = build_release(
        project=project,
        owner=owner,
        reviewer=reviewer,
        mechanism="gaussian",
        epsilon_each=EPSILON_EACH,
        delta_each=DELTA_EACH,
    )
    hist = next(
        e
        for e in release.result.payload["statistics"]
        if e["kind"] == "histogram" and not e.get("shape")
    )
    position = hist["position"]
    base = f"/p/{project.slug}/releases/{release.pk}/"
    release_delta = _readable(release.delta)  # six statistics' deltas together
    assert release_delta == "8.571 × 10⁻⁸"

    reader = _open(browser, live_server, f"numbers-public-{language}", language)
    member = _open(browser, live_server, f"numbers-owner-{language}", language, user=owner)
    try:
        # --- the public page: budgets, separators, half-widths per cell and at once --------
        page = reader.page
        reader.goto(base)
        page.wait_for_selector("h1")
        assert page.locator("html").get_attribute("lang") == (
            "zh-hans" if language == "zh" else "en"
        )
        # every statistic's explanation open, as a reader who unfolds them reads it
        page.evaluate(
            "document.querySelectorAll('main details').forEach((d) => { d.open = true; })"
        )
        text = _plain(page.locator("main").inner_text())
        _assert_budget_digits(text, "public page")
        assert release_delta in text
        _assert_tables_grouped(page, "public page")
        per_cell = _halfwidth_cells(page, position)
        reader.shot("per-cell")
        reader.goto(base + "?intervals=simultaneous")
        page.wait_for_selector("h1")
        together = _halfwidth_cells(page, position)
        reader.shot("simultaneous")
        assert len(set(per_cell)) == 1 and len(set(together)) == 1, (per_cell, together)
        assert per_cell != together  # one bar, or all bars at once: two half-widths

        # --- the JSON keeps the exact value beside the page's rounding; the CSV writes it --
        record = _download(reader, base + "data.json").json()
        stat = next(s for s in record["statistics"] if s["position"] == position)
        for cell, shown, shown_together in zip(stat["cells"], per_cell, together, strict=True):
            assert cell["halfwidth_display"] == shown.replace(",", "")
            assert cell["simultaneous_halfwidth_display"] == shown_together.replace(",", "")
            assert isinstance(cell["simultaneous_halfwidth"], float)  # the exact value
            assert cell["simultaneous_halfwidth_display"] == formatting.halfwidth(
                cell["simultaneous_halfwidth"], group=False
            )
            assert cell["value_display"] == formatting.noisy(
                cell["value"], cell["halfwidth"], group=False
            )
        rows = list(csv.DictReader(io.StringIO(_download(reader, base + "data.csv").text())))
        csv_rows = [r for r in rows if r["statistic_position"] == str(position)]
        assert [r["halfwidth"] for r in csv_rows] == [c["halfwidth_display"] for c in stat["cells"]]
        assert [r["simultaneous_halfwidth"] for r in csv_rows] == [
            c["simultaneous_halfwidth_display"] for c in stat["cells"]
        ]
        assert {r["delta"] for r in csv_rows} == {"0.00000001429"}  # plain, for programs
        assert {r["epsilon"] for r in csv_rows} == {"0.1667"}

        # --- the owner's results: the same digits, the same half-widths ---------------------
        page = member.page
        member.goto(f"/releases/{release.pk}/")
        page.wait_for_selector("h1")
        text = _plain(page.locator("main").inner_text())
        _assert_budget_digits(text, "owner's results")
        _assert_tables_grouped(page, "owner's results")
        card = page.locator(".card.result", has=page.locator("h3", has_text=hist["label"]))
        line = _plain(card.locator("p.muted").first.inner_text())
        assert re.findall(r"± ([\d,.]+)", line) == [per_cell[0], together[0]], line
        assert "_" not in line and not re.search(r"[,，]\s*·", line), line
        member.shot("results")

        # --- the registry: the release's delta in powers of ten ---------------------------
        member.goto(f"/registry/{project.slug}/")
        page.wait_for_selector("h1")
        text = _plain(page.locator("main").inner_text())
        assert release_delta in text
        assert not re.search(r"0\.0000", text), "registry: a delta written with its zeros"
        _assert_tables_grouped(page, "registry")
        member.shot("registry")
        assert reader.errors == [] and member.errors == []
        assert reader.outside == [] and member.outside == []
    finally:
        reader.close()
        member.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_selection_names_its_law_and_its_rank_error_reads_alike(
    browser,  # noqa: F811
    live_server,
    language,
):
    """The demo's quantiles (permute-and-flip, no noise parameter): the owner's results name
    the selection in words, never its code; the rank error is whole records rounded up on
    the owner's results, the public page and in the JSON and CSV."""
    compile_all()
    call_command("seed_demo", stdout=StringIO())
    release = Release.objects.get(title=PUBLISHED_TITLE)
    quantiles = next(e for e in release.result.payload["statistics"] if e["kind"] == "quantiles")
    owner = release.created_by
    owner.set_password(PASSWORD)
    owner.save()
    base = f"/p/{release.project.slug}/releases/{release.pk}/"
    reader = _open(browser, live_server, f"numbers-quantiles-public-{language}", language)
    member = _open(browser, live_server, f"numbers-quantiles-owner-{language}", language, owner)
    try:
        page = member.page
        member.goto(f"/releases/{release.pk}/")
        page.wait_for_selector("h1")
        card = page.locator(".card.result", has=page.locator("h3", has_text=quantiles["label"]))
        line = _plain(card.locator("p.muted").first.inner_text())
        assert "permute_and_flip" not in line and "_" not in line, line
        assert not re.search(r"[,，]\s*·", line), f"a dangling comma: {line}"
        if language == "en":
            assert line.startswith("exact permute-and-flip selection · epsilon"), line
        owner_ranks = re.findall(r"± ([\d,]+)", _plain(card.locator("tbody").inner_text()))
        _assert_tables_grouped(page, "owner's results")
        member.shot("quantiles")

        reader.goto(base)
        page = reader.page
        page.wait_for_selector("h1")
        public_ranks = [
            _plain(t).replace("±", "").strip()
            for t in page.locator(
                f"#quantile-body-{quantiles['position']} tr td:nth-of-type(2)"
            ).all_inner_texts()
        ]
        _assert_tables_grouped(page, "public page")
        record = _download(reader, base + "data.json").json()
        stat = next(s for s in record["statistics"] if s["position"] == quantiles["position"])
        json_ranks = [c["rank_error_display"] for c in stat["cells"]]
        rows = list(csv.DictReader(io.StringIO(_download(reader, base + "data.csv").text())))
        csv_ranks = [r["rank_error"] for r in rows if r["kind"] == "quantiles"]
        assert len(owner_ranks) == len(quantiles["values"]) == 3
        assert owner_ranks == public_ranks
        assert [r.replace(",", "") for r in public_ranks] == json_ranks == csv_ranks
        for cell in stat["cells"]:  # whole records, rounded up: never below the bound
            assert int(cell["rank_error_display"]) >= cell["rank_error"]
            assert int(cell["rank_error_display"]) - cell["rank_error"] < 1
        assert reader.errors == [] and member.errors == []
    finally:
        reader.close()
        member.close()
