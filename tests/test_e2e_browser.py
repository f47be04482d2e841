"""Real-browser tests: Debian's chromium driven by Playwright against live_server.

Screenshots of every page go to artifacts/ (git-ignored). Without chromium these
tests FAIL (CI installs it: `apt-get install chromium`); they never skip.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import connections

from dpportal.privacy import accuracy
from tests.public_builders import build_release

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "e2e"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture
def browser(monkeypatch):
    """One headless chromium for the test; fails (not skips) when chromium is missing."""
    executable = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if executable is None:
        pytest.fail(
            "chromium is not installed: the browser tests need Debian's chromium at "
            "/usr/bin/chromium (apt-get install chromium). Never run `playwright install`."
        )
    # Playwright's sync API runs an event loop in this thread; the test's own ORM
    # calls are still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()
            # ORM calls made while Playwright's loop runs get connections of their own
            # (Django keys them by context): close them here, in that same context,
            # or they outlive the test and block dropping the test database.
            connections.close_all()


#: how long a full-page screenshot may take (Pages.shot)
SHOT_TIMEOUT_MS = 120_000


class Pages:
    """A browser context that blocks every request leaving live_server (no internet)."""

    def __init__(
        self, browser, live_server, name: str, *, viewport: tuple[int, int] = (1280, 900)
    ) -> None:
        self.base = live_server.url
        width, height = viewport
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.name = name
        self.shots = 0

    def _route(self, route):
        if route.request.url.startswith(self.base):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def goto(self, path: str):
        response = self.page.goto(self.base + path)
        return response

    def shot(self, label: str) -> Path:
        self.shots += 1
        path = ARTIFACTS / f"{self.name}-{self.shots:02d}-{label}.png"
        # a picture is an artifact, not an assertion: a full page of drawn charts can take
        # longer than an action's 30 s to render on a loaded machine
        self.page.screenshot(path=str(path), full_page=True, timeout=SHOT_TIMEOUT_MS)
        return path

    def close(self) -> None:
        self.context.close()


def draw_every_chart(page) -> None:
    """Scroll each chart into view, as a reader does, and wait until it is drawn.

    The release page draws a chart when it comes into view (static/js/public-release.js);
    what is asserted about a chart after this is what a reader who scrolled to it sees."""
    for plot in page.locator(".plot[id^=chart-]").all():
        plot.scroll_into_view_if_needed()
        page.wait_for_function(
            "(id) => document.getElementById(id).hasAttribute('data-drawn')",
            arg=plot.get_attribute("id"),
        )


def chart_error_bars(page, position: int) -> dict:
    return page.evaluate(
        """(position) => {
            const node = document.getElementById('chart-' + position);
            const trace = node.data[0];
            return {type: trace.type, x: trace.x, y: trace.y, error_y: trace.error_y || null,
                    error_x: trace.error_x || null, text: trace.hovertext || trace.text || null};
        }""",
        position,
    )


def assert_release_page_charts(pages: Pages, release) -> None:
    """The Plotly figures' error bars equal the half-widths of dpportal.privacy."""
    page = pages.page
    page.wait_for_selector("body[data-charts-ready='1']")
    draw_every_chart(page)
    payload = release.result.payload["statistics"]
    by_kind = {entry["kind"]: entry for entry in payload}
    assert page.evaluate("typeof window.Plotly") == "object", "plotly.js loaded from our static"
    for entry in payload:
        position = entry["position"]
        if entry["kind"] in ("count", "histogram") and not entry.get("shape"):
            bars = chart_error_bars(page, position)
            assert bars["type"] == "bar"
            h = accuracy.result_halfwidth(entry["explanation"], confidence="0.95")
            assert bars["error_y"]["array"] == [h] * len(entry["values"])
            assert bars["y"] == [float(v) for v in entry["values"]]
    if "sum" in by_kind:
        entry = by_kind["sum"]
        trace = chart_error_bars(page, entry["position"])
        h = accuracy.result_halfwidth(entry["explanation"], confidence="0.95")
        assert trace["error_x"]["array"][0] == pytest.approx(h, rel=1e-9)
        assert trace["error_x"]["arrayminus"][0] == pytest.approx(h, rel=1e-9)


@pytest.mark.django_db(transaction=True)
def test_public_release_page_in_a_real_browser(browser, live_server, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    pages = Pages(browser, live_server, "public")
    try:
        pages.goto("/")
        pages.page.get_by_role("link", name=project.name).click()
        pages.page.wait_for_selector("h1")
        pages.shot("project-dashboard")
        pages.page.get_by_role("link", name=release.title).click()
        assert_release_page_charts(pages, release)
        pages.shot("release-page")

        hist = next(e for e in release.result.payload["statistics"] if e["kind"] == "histogram")
        position = hist["position"]
        # 99 %, all bars at once: the controls switch to the precomputed simultaneous bars.
        # a page carries one level's numbers: another level is a new page
        with pages.page.expect_navigation():
            pages.page.get_by_label("99 %").check()
        pages.page.get_by_label("for all bars of a chart at once").check()
        draw_every_chart(pages.page)  # the new page draws its charts as they come into view
        big_h = accuracy.result_halfwidth(hist["explanation"], confidence="0.99", simultaneous=True)
        pages.page.wait_for_function(
            f"document.getElementById('chart-{position}').data[0].error_y.array[0] === {big_h}"
        )
        text = pages.page.locator(f"#stat-{position}").inner_text()
        assert "99 %" in text
        # rounded and clamped display: the bars show the clamped value, the error bar its
        # interval clamped the same way (the value shown +- h, cut at 0: kinds.base).
        pages.page.get_by_label("show counts rounded and clamped at zero").check()
        bars = chart_error_bars(pages.page, position)
        for y, value, plus, minus in zip(
            bars["y"],
            hist["values"],
            bars["error_y"]["array"],
            bars["error_y"]["arrayminus"],
            strict=True,
        ):
            assert y == max(0, round(value))
            assert y + plus == pytest.approx(y + big_h)
            assert y - minus == pytest.approx(max(0, y - big_h))
        assert pages.page.locator("[data-show-when-rounded]").is_visible()
        # the download link follows the chosen confidence level
        href = pages.page.get_by_role("link", name="CSV").get_attribute("href")
        assert href.endswith("data.csv?confidence=0.99")
        pages.shot("release-page-99-simultaneous-rounded")
        # the heatmap: each cell's interval in its hover text
        heat = next(e for e in release.result.payload["statistics"] if e.get("shape"))
        trace = chart_error_bars(pages.page, heat["position"])
        assert trace["type"] == "heatmap"
        assert "interval" in trace["text"][0][0]
        assert pages.outside == [], f"the page tried to reach the internet: {pages.outside}"
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()


CSV_ROWS = ["region,income"] + [
    f"{region},{income}"
    for region, n, income in [("North", 60, 42000), ("South", 35, 38000), ("East", 4, 51000)]
    for _ in range(n)
]


def login(pages: Pages, user) -> None:
    from tests.factories import PASSWORD

    pages.goto("/accounts/login/")
    pages.page.get_by_label("Username").fill(user.username)
    pages.page.get_by_label("Password").fill(PASSWORD)
    pages.page.get_by_role("button", name="Log in").click()
    pages.page.wait_for_load_state()
    assert "/accounts/login/" not in pages.page.url, "login failed"


def submit_for_review(pages: Pages, release) -> None:
    """The owner submits a draft from its page; it is then waiting for a reviewer."""
    pages.goto(f"/releases/{release.pk}/")
    pages.page.get_by_role("button", name="Submit for review").click()
    pages.page.wait_for_load_state()
    release.refresh_from_db()
    assert release.status == "submitted"


def publish(pages: Pages, release) -> None:
    """The owner publishes a computed release from the preview of its public page."""
    page = pages.page
    pages.goto(f"/releases/{release.pk}/")
    page.get_by_role("link", name="Preview the public page and publish").click()
    page.wait_for_selector("body[data-charts-ready='1']")
    page.get_by_role("button", name="Publish: make these results public").first.click()
    page.wait_for_load_state()
    release.refresh_from_db()
    assert release.status == "published"


def column_fieldset(page, name: str):
    return page.locator("fieldset", has=page.locator("legend code", has_text=name))


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_end_to_end_from_upload_to_public_chart(
    browser, live_server, celery_workers, project, owner, reviewer, tmp_path
):
    from datasets.models import Dataset
    from releases.models import Release
    from tests.conftest import wait_for

    celery_workers.start(concurrency=2)
    csv_path = tmp_path / "survey.csv"
    csv_path.write_text("\n".join(CSV_ROWS) + "\n")

    # --- the owner uploads a CSV and declares its public domains -------------------
    owner_pages = Pages(browser, live_server, "e2e-owner")
    reviewer_pages = Pages(browser, live_server, "e2e-reviewer")
    public_pages = Pages(browser, live_server, "e2e-public")
    try:
        page = owner_pages.page
        login(owner_pages, owner)
        owner_pages.goto(f"/projects/{project.slug}/")
        page.get_by_role("link", name="Upload a dataset").click()
        page.get_by_label("Name", exact=True).fill("Survey wave 1")
        page.set_input_files("input[type=file]", str(csv_path))
        owner_pages.shot("upload-form")
        page.get_by_role("button", name="Upload").click()
        page.wait_for_load_state()
        dataset = wait_for(
            lambda: Dataset.objects.filter(project=project, status="ready").first(),
            timeout=120,
            message="the worker did not ingest the upload",
        )
        owner_pages.goto(f"/datasets/{dataset.pk}/")
        owner_pages.shot("dataset-ready")
        owner_pages.goto(f"/datasets/{dataset.pk}/declare/")
        page.check("input[name=unit][value=row]")
        region = column_fieldset(page, "region")
        region.locator("input[type=radio][value=categorical]").check()
        region.locator("textarea[name^=categories-]").fill("North\nSouth\nEast\nWest")
        income = column_fieldset(page, "income")
        income.locator("input[type=radio][value=numeric]").check()
        income.get_by_label("lower bound of income").fill("0")
        income.get_by_label("upper bound of income").fill("100000")
        owner_pages.shot("declare")
        page.get_by_role("button", name="Save the declaration").click()
        page.wait_for_load_state()
        dataset.refresh_from_db()
        assert dataset.declared, "the declaration was not saved"

        # --- the owner builds a release, sees the preview and submits ---------------
        owner_pages.goto(f"/releases/new/{project.slug}/")
        page.locator("#f-title").fill("Regions of wave 1")
        page.locator("#f-epsilon").fill("0.5")
        page.get_by_role("button", name="Add a statistic").click()
        row = page.locator("#stats tbody tr").nth(1)
        row.locator("select[data-f=kind]").select_option("histogram")
        row.locator("select[data-f=column]").select_option("region")
        page.wait_for_selector("#preview table")
        assert "Total cost: epsilon" in page.locator("#preview").inner_text()
        # tight accounting and the accuracy-versus-epsilon chart (issue 13.4)
        page.wait_for_selector("#spend")
        assert "epsilon (tight accounting)" in page.locator("#spend").inner_text()
        assert "like this one fit under the cap" in page.locator("#spend-fit").inner_text()
        page.wait_for_selector("#tradeoff-remaining")
        assert "still fits under the cap" in page.locator("#tradeoff-summary").inner_text()
        page.wait_for_selector("#tradeoff-chart .main-svg")
        assert page.locator("#tradeoff-numbers tbody tr").count() >= 18
        owner_pages.shot("builder-chart")
        owner_pages.shot("builder-preview")
        page.get_by_role("button", name="Save draft").click()
        page.wait_for_url("**/releases/*/")
        release = Release.objects.get(project=project, title="Regions of wave 1")
        page.get_by_role("button", name="Submit for review").click()
        page.wait_for_load_state()
        release.refresh_from_db()
        assert release.status == "submitted"
        owner_pages.shot("submitted")

        # --- the reviewer approves in the inbox -------------------------------------
        rpage = reviewer_pages.page
        login(reviewer_pages, reviewer)
        reviewer_pages.goto("/projects/inbox/")
        reviewer_pages.shot("inbox")
        rpage.get_by_role("link", name="Review").first.click()
        rpage.wait_for_load_state()
        reviewer_pages.shot("request")
        rpage.get_by_role("button", name="Approve and reserve").click()
        rpage.wait_for_load_state()

        # --- a real worker computes; the owner publishes ----------------------------
        wait_for(
            lambda: Release.objects.filter(pk=release.pk, status="computed").exists(),
            timeout=120,
            message="the worker did not compute the release: "
            + str(Release.objects.filter(pk=release.pk).values_list("status", flat=True)),
        )
        owner_pages.goto(f"/releases/{release.pk}/")
        owner_pages.shot("computed")
        public_url = f"/p/{project.slug}/releases/{release.pk}/"
        assert public_pages.goto(public_url).status == 404  # not public before publication
        # publishing shows the public page as a preview first, then asks to confirm
        page.get_by_role("link", name="Preview the public page and publish").click()
        page.wait_for_selector("body[data-charts-ready='1']")
        assert "Preview: not public yet" in page.locator("#publish-preview").inner_text()
        owner_pages.shot("publish-preview")
        release.refresh_from_db()
        assert release.status == "computed"
        page.get_by_role("button", name="Publish: make these results public").first.click()
        page.wait_for_load_state()
        release.refresh_from_db()
        assert release.status == "published"

        # --- an anonymous reader sees error bars of exactly the computed half-widths -
        public_pages.goto("/")
        public_pages.page.get_by_role("link", name=project.name).click()
        public_pages.page.get_by_role("link", name="Regions of wave 1").click()
        assert_release_page_charts(public_pages, release)
        hist = next(e for e in release.result.payload["statistics"] if e["kind"] == "histogram")
        bars = chart_error_bars(public_pages.page, hist["position"])
        # the four declared regions (plus any explicit cell for missing or other values)
        assert bars["x"][:4] == ["North", "South", "East", "West"]
        assert len(bars["error_y"]["array"]) == len(hist["values"])
        public_pages.shot("public-release")
        for p in (owner_pages, reviewer_pages, public_pages):
            assert p.outside == [], f"a page tried to reach the internet: {p.outside}"
            assert p.errors == [], f"JavaScript errors: {p.errors}"
    finally:
        for p in (owner_pages, reviewer_pages, public_pages):
            p.close()
