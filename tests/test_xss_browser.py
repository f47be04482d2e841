"""Stored XSS, end to end in chromium (issue 12.1's acceptance test).

A CSV whose column names and category labels are script payloads goes all the way:
uploaded through the page, ingested by a real worker, declared (the markup categories
included), used by releases that are built, submitted, approved, computed by the
worker and published. Then every owner, reviewer and public page that shows those
names is opened in chromium under the site's Content-Security-Policy, and the test
fails on any dialog, any console error (a CSP violation is one), any page error and
any element that came from data (an <img src=x>, an inline <script>, an onerror
attribute, a link to evil.example, in HTML or in Plotly's SVG). Screenshots go to
artifacts/e2e/.
"""

from __future__ import annotations

import csv
import io

import pytest

from tests import test_e2e_browser
from tests.test_e2e_browser import Pages, draw_every_chart, login

pytestmark = [pytest.mark.browser, pytest.mark.worker]

browser = test_e2e_browser.browser  # the same headless chromium fixture

IMG = '"><img src=x onerror=alert(1)>num'
SCRIPT = "<script>alert(2)</script>"
LINK = '<a href="https://evil.example/phish">Click here</a>'
TEMPLATE = "{{7*7}}"
QUOTES = "'\";alert(3)//"
COLUMNS = [IMG, SCRIPT, LINK, TEMPLATE, QUOTES]
# category labels (of the SCRIPT, LINK and QUOTES columns) with markup too
CATEGORIES = {
    SCRIPT: ["<img src=x onerror=alert(4)>", "<b>bold</b>", "plain"],
    LINK: [LINK, "{{7*7}}", "<svg onload=alert(5)>"],
    QUOTES: ["'\";alert(6)//", "</script><script>alert(7)</script>", "ok"],
}
TITLE = "<img src=x onerror=alert(8)> release"

# Elements that can only be there if markup from data was parsed as markup.
INJECTED = """() => {
    const found = [];
    const describe = (el) => el.outerHTML.slice(0, 160);
    for (const el of document.querySelectorAll('img')) {
        const src = el.getAttribute('src') || '';
        if (src === 'x' || src.endsWith('/x')) found.push(describe(el));
    }
    for (const el of document.querySelectorAll('script:not([src])')) {
        if (el.type !== 'application/json') found.push(describe(el));
    }
    for (const el of document.querySelectorAll('[onerror], [onload], [onclick]')) {
        found.push(describe(el));
    }
    const links = '[href*="evil.example"], [*|href*="evil.example"]';
    for (const el of document.querySelectorAll(links)) {
        found.push(describe(el));
    }
    for (const el of document.querySelectorAll('b')) {
        if (el.textContent === 'bold') found.push(describe(el));
    }
    return found;
}"""


def payload_csv() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for i in range(300):
        writer.writerow(
            [
                str(i % 90),
                CATEGORIES[SCRIPT][i % 3],
                CATEGORIES[LINK][(i // 3) % 3],
                str(i % 7),
                CATEGORIES[QUOTES][(i // 9) % 3],
            ]
        )
    return out.getvalue().encode()


#: The one refusal a chart page may log: plotly.js probes whether the browser scales a
#: heatmap's image pixelated by giving a test <image> a style attribute, which the policy
#: refuses (the heatmap is then drawn on a canvas: the same picture). The refused value
#: is empty (this is the SHA-256 of no bytes), so no injected style can pass as it.
PLOTLY_PROBE_REFUSAL = (
    "Applying inline style violates the following Content Security Policy directive "
    "'style-src-attr 'none''. Either the 'unsafe-inline' keyword, a hash "
    "('sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=')"
)


class Watch:
    """Everything a page does that it must not: dialogs, console errors, page errors."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.problems: list[str] = []
        page = pages.page
        page.on("dialog", self._dialog)
        page.on("console", self._console)

    def _dialog(self, dialog) -> None:
        self.problems.append(f"{self.pages.page.url}: dialog {dialog.type} {dialog.message!r}")
        dialog.dismiss()

    def _console(self, message) -> None:
        if message.type == "error" and not message.text.startswith(PLOTLY_PROBE_REFUSAL):
            self.problems.append(f"{self.pages.page.url}: console error {message.text[:300]}")

    def visit(self, path: str, label: str, *, ready: str | None = None) -> None:
        response = self.pages.goto(path)
        if response is None:  # already there (a redirect after login): load it afresh
            response = self.pages.page.reload()
        if response is None or response.status != 200:
            status = response.status if response else "no response"
            self.problems.append(f"{path}: status {status}")
        self.pages.page.wait_for_load_state("networkidle")
        if ready:
            self.pages.page.wait_for_selector(ready)
        draw_every_chart(self.pages.page)  # charts are drawn as they scroll into view
        self.pages.page.wait_for_timeout(300)  # late scripts, Plotly's hover layers
        for element in self.pages.page.evaluate(INJECTED):
            self.problems.append(f"{path}: injected element {element}")
        for error in self.pages.errors:
            self.problems.append(f"{path}: page error {error[:300]}")
        self.pages.errors.clear()
        self.pages.shot(label)


def declare(dataset, owner):
    from datasets.services import dataset_declare

    columns = {
        IMG: {"kind": "numeric", "lower": "0", "upper": "100", "bin_edges": "0,30,60,100"},
        SCRIPT: {"kind": "categorical", "categories": CATEGORIES[SCRIPT], "missing": "category"},
        LINK: {"kind": "categorical", "categories": CATEGORIES[LINK]},
        TEMPLATE: {"kind": "numeric", "lower": "0", "upper": "10"},
        QUOTES: {"kind": "categorical", "categories": CATEGORIES[QUOTES]},
    }
    return dataset_declare(dataset=dataset, actor=owner, columns=columns, unit="row")


def statistics() -> list[dict]:
    return [
        {"kind": "count", "label": TITLE},
        {"kind": "count", "column": SCRIPT, "category": CATEGORIES[SCRIPT][0]},
        {"kind": "histogram", "column": SCRIPT},
        {"kind": "histogram", "column": LINK},
        {"kind": "histogram", "column": LINK, "column2": QUOTES},
        {"kind": "histogram", "column": IMG},
        {"kind": "sum", "column": TEMPLATE},
        {"kind": "mean", "column": IMG, "n_guess": 300},
        {"kind": "argmax", "column": QUOTES},
    ]


def release_data(dataset, title: str) -> dict:
    return {
        "title": title,
        "dataset": dataset.pk,
        "mechanism": "laplace",
        "confidence": "0.95",
        "epsilon": "0.2",
        "statistics": statistics(),
    }


@pytest.mark.django_db(transaction=True)
def test_script_payloads_in_data_never_run_or_render_as_markup(
    browser, live_server, celery_workers, project, owner, reviewer, tmp_path
):
    from datasets.models import Dataset
    from releases import lifecycle, services
    from releases.models import Release
    from tests.conftest import wait_for

    celery_workers.start(concurrency=2)
    csv_path = tmp_path / "hostile.csv"
    csv_path.write_bytes(payload_csv())
    owner_pages = Pages(browser, live_server, "xss-owner")
    reviewer_pages = Pages(browser, live_server, "xss-reviewer")
    public_pages = Pages(browser, live_server, "xss-public")
    watches = [Watch(p) for p in (owner_pages, reviewer_pages, public_pages)]
    own, rev, pub = watches
    try:
        # --- upload through the page; a real worker ingests ---------------------------
        login(owner_pages, owner)
        owner_pages.goto(f"/datasets/upload/{project.slug}/")
        owner_pages.page.get_by_label("Name", exact=True).fill(SCRIPT + " data")
        owner_pages.page.set_input_files("input[type=file]", str(csv_path))
        owner_pages.page.get_by_role("button", name="Upload").click()
        owner_pages.page.wait_for_load_state()
        dataset = wait_for(
            lambda: Dataset.objects.filter(project=project, status="ready").first(),
            timeout=120,
            message="the worker did not ingest the hostile CSV: "
            + str(Dataset.objects.values_list("status", "failure_reason")),
        )
        assert sorted(dataset.columns.values_list("name", flat=True)) == sorted(COLUMNS)
        dataset = declare(dataset, owner)

        # --- releases: published, computed (unpublished), pending, draft ---------------
        def approved(title: str) -> Release:
            release = services.release_save_draft(
                project=project, actor=owner, data=release_data(dataset, title)
            )
            lifecycle.release_submit(release=release, actor=owner)
            return lifecycle.release_approve(release=release, reviewer=reviewer)

        published = approved(TITLE)
        computed = approved(TITLE + " 2")
        for release in (published, computed):
            wait_for(
                lambda r=release: Release.objects.filter(pk=r.pk, status="computed").exists(),
                timeout=180,
                message="the worker did not compute the release: "
                + str(Release.objects.values_list("status", "failure_reason")),
            )
        lifecycle.release_publish(release=published, actor=owner)
        pending = services.release_save_draft(
            project=project, actor=owner, data=release_data(dataset, TITLE + " 3")
        )
        pending = lifecycle.release_submit(release=pending, actor=owner)
        draft = services.release_save_draft(
            project=project, actor=owner, data=release_data(dataset, TITLE + " 4")
        )

        # --- every page that shows the payloads, as owner, reviewer and reader ----------
        slug = project.slug
        own.visit(f"/projects/{slug}/", "project")
        own.visit(f"/datasets/project/{slug}/", "datasets")
        own.visit(f"/datasets/{dataset.pk}/", "dataset")
        own.visit(f"/datasets/{dataset.pk}/declare/", "declare")
        own.visit(f"/releases/new/{slug}/", "builder-new", ready="#preview table")
        page = owner_pages.page
        options = page.locator("#stats tbody tr select[data-f=column] option").all_text_contents()
        assert f"{IMG} (numeric)" in options and f"{SCRIPT} (categorical)" in options
        # the chart (Plotly legend and hover texts, its table) carries the labels too
        own.visit(f"/releases/{draft.pk}/edit/", "builder-draft", ready="#tradeoff-chart .main-svg")
        rows = page.locator("#stats tbody tr")
        assert rows.count() == len(statistics())
        assert (
            rows.nth(1).locator("input[data-f=category]").input_value() == (CATEGORIES[SCRIPT][0])
        )
        assert rows.nth(4).locator("select[data-f=column2]").input_value() == QUOTES
        # the preview's labels are text too (the builder's own rows carry no label)
        assert (
            f"Rows with {SCRIPT} = {CATEGORIES[SCRIPT][0]}" in page.locator("#preview").inner_text()
        )
        own.visit(f"/releases/{draft.pk}/", "draft-detail")
        own.visit(f"/releases/{published.pk}/", "published-detail")
        own.visit(f"/releases/{computed.pk}/", "computed-detail")
        own.visit(
            f"/releases/{computed.pk}/publish/",
            "publish-preview",
            ready="body[data-charts-ready='1']",
        )
        own.visit(f"/projects/{slug}/budget/", "budget")

        login(reviewer_pages, reviewer)
        rev.visit("/projects/inbox/", "inbox")
        rev.visit(f"/projects/requests/{pending.budget_request_id}/", "request-pending")
        rev.visit(f"/projects/requests/{published.budget_request_id}/", "request-decided")
        rev.visit(f"/releases/{pending.pk}/", "release-pending")

        pub.visit("/", "home")
        pub.visit(f"/p/{slug}/", "public-project")
        pub.visit(
            f"/p/{slug}/releases/{published.pk}/",
            "public-release",
            ready="body[data-charts-ready='1']",
        )
        # the labels reach the reader as text, exactly as declared
        table_text = public_pages.page.locator(
            "main table"
        ).all_text_contents()  # tables fold under their statistic
        for label in (CATEGORIES[SCRIPT][0], CATEGORIES[LINK][0], CATEGORIES[QUOTES][1]):
            assert any(label in t for t in table_text), label
        pub.visit(f"/registry/{slug}/", "registry")

        problems = [p for w in watches for p in w.problems]
        assert problems == [], "\n".join(problems)
        for p in (owner_pages, reviewer_pages, public_pages):
            assert p.outside == [], f"a page tried to reach another host: {p.outside}"
    finally:
        for p in (owner_pages, reviewer_pages, public_pages):
            p.close()
