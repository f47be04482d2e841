"""The reviewer's request page in chromium: every parameter of every statistic kind.

A Gaussian release of every kind is computed and published first (an earlier
release on the same dataset), then a Laplace release of every kind is submitted;
the reviewer opens its review document. Screenshots: artifacts/review-page.png
(pending) and artifacts/review-page-decided.png (after the approval).
"""

from __future__ import annotations

import pytest

from releases import dispatch
from tests.review_support import (
    KINDS,
    gaussian_release,
    laplace_release,
    person_dataset,
    review_project,
)
from tests.test_e2e_browser import ARTIFACTS, Pages, browser, login  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser]

SHOTS = ARTIFACTS.parent

# every parameter a reviewer must judge, per statistic (data-param of its table row)
PER_STATISTIC = [
    "kind", "columns", "clip", "out-of-range", "missing", "unit", "mechanism", "epsilon",
    "delta", "sensitivity", "scale", "halfwidth", "halfwidth-simultaneous",
]  # fmt: skip


def statistic_params(page, number: int) -> dict[str, str]:
    """The text of each parameter row of statistic `number` (several noise rows joined)."""
    return page.evaluate(
        """(number) => {
            const out = {};
            const section = document.getElementById('statistic-' + number);
            for (const cell of section.querySelectorAll('td[data-param]')) {
                const key = cell.dataset.param;
                out[key] = (out[key] ? out[key] + ' | ' : '') + cell.innerText.trim();
            }
            out.title = section.querySelector('h3').innerText;
            out.kind_code = section.dataset.kind;
            return out;
        }""",
        number,
    )


@pytest.mark.django_db(transaction=True)
def test_review_page_states_every_parameter(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    project,
    owner,
    reviewer,
    monkeypatch,
):
    # no worker here: the releases are computed in-process, nothing is sent to a broker
    monkeypatch.setattr(dispatch, "release_dispatch", lambda *, release_id: True)
    review_project(project)
    dataset = person_dataset(project=project, owner=owner)
    earlier = gaussian_release(project=project, owner=owner, reviewer=reviewer, dataset=dataset)
    release = laplace_release(project=project, owner=owner, dataset=dataset)

    pages = Pages(browser, live_server, "review")
    try:
        page = pages.page
        login(pages, reviewer)
        pages.goto("/projects/inbox/")
        page.get_by_role("link", name="Review").first.click()
        page.wait_for_selector("#statistic-1")
        page.screenshot(path=str(SHOTS / "review-page.png"), full_page=True)

        params = [statistic_params(page, n) for n in range(1, len(KINDS) + 1)]
        assert [p["kind_code"] for p in params] == KINDS
        for p in params:
            missing = [key for key in PER_STATISTIC if not p.get(key)]
            assert missing == [], f"{p['title']}: no {missing}"
            assert "L = 3" in p["unit"], p["title"]
            assert "±" in p["halfwidth"] and "±" in p["halfwidth-simultaneous"], p["title"]
            for marker in ("None", "{'", "Decimal(", "nan"):
                assert marker not in " ".join(p.values()), (p["title"], marker)
        by_kind = {}
        for p in params:
            by_kind.setdefault(p["kind_code"], []).append(p)
        count, category = by_kind["count"]
        assert "every row" in count["columns"]
        assert "“south”" in category["category"]
        categorical, binned, two_way = by_kind["histogram"]
        assert "4 declared categories: north, south, east, west" in categorical["columns"]
        assert "“Other” cell" in categorical["out-of-range"]
        assert "“Missing” cell" in categorical["missing"]
        assert "bin edges 0, 18, 40, 65, 100" in binned["columns"]
        assert "clamped into the edge bins" in binned["out-of-range"]
        assert "for all 24 cells at once" in two_way["halfwidth-simultaneous"]
        (total,) = by_kind["sum"]
        assert total["clip"].startswith("0 to 100,000")
        assert "scale b = 3,000,000 units of income" in total["scale"]
        assert "300,000 units of income" in total["sensitivity"]
        (mean,) = by_kind["mean"]
        assert mean["scale"].count("scale b =") == 2  # the sum's and the count's
        assert "units of age" in mean["scale"] and "rows" in mean["scale"]
        (top,) = by_kind["argmax"]
        assert top["mechanism"].startswith("Report Noisy Max")
        for p in params:
            assert ("Laplace" in p["mechanism"]) and p["epsilon"] == "0.1"

        glance = page.locator("#glance tbody tr")
        assert glance.count() == len(KINDS)
        assert "no interval" in glance.nth(len(KINDS) - 1).inner_text()  # the argmax
        overview = page.locator("#overview").inner_text()
        assert "One person, identified by the column “person”" in overview
        assert "95 %" in overview
        budget = page.locator("#budget").inner_text()
        assert "Remaining now" in budget and "Remaining after approval" in budget
        assert "3.4" in budget and "2.6" in budget
        spend = page.locator("#spend").inner_text()
        assert "epsilon (tight)" in spend and "Committed now" in spend and "1.6" in spend
        assert "releases like this one fit" in page.locator("[data-param=fit]").inner_text()
        listed = page.locator("#earlier").inner_text()
        assert "Wave 1 (Gaussian)" in listed and "Published" in listed and "1.6" in listed

        # the earlier, Gaussian release's page: sigma, the l2 sensitivity, its delta
        pages.goto(f"/projects/requests/{earlier.budget_request_id}/")
        gaussian = [statistic_params(page, n) for n in range(1, len(KINDS) + 1)]
        for p in gaussian:
            if p["kind_code"] == "argmax":
                assert p["delta"] == "0" and "Laplace" in p["scale"]
            else:
                assert "sigma =" in p["scale"] and "(l1 and l2)" in p["sensitivity"]
                assert p["delta"] != "0"
        page.screenshot(path=str(SHOTS / "review-page-gaussian.png"), full_page=True)

        pages.goto(f"/projects/requests/{release.budget_request_id}/")
        page.get_by_role("button", name="Approve and reserve").click()
        page.wait_for_selector("#budget")
        budget = page.locator("#budget").inner_text()
        assert "Remaining before the approval" in budget
        assert "3.4" in budget and "2.6" in budget  # as at the decision, not subtracted twice
        assert "Before the approval" in page.locator("#spend").inner_text()
        page.screenshot(path=str(SHOTS / "review-page-decided.png"), full_page=True)
        assert pages.outside == [], f"the page tried to reach the internet: {pages.outside}"
        assert pages.errors == [], f"JavaScript errors: {pages.errors}"
    finally:
        pages.close()
