"""Private bounds from the builder to a mean that uses them, in chromium.

The owner of a dataset whose income column has no declared bounds asks, in the
builder, for private bounds of income (epsilon 1); the reviewer reads the method
(AboveThreshold) in the review document and approves; a real worker computes it;
the owner reads the estimate on the results page, declares it as the column's bounds
with the button there, and publishes it. Then the owner builds a mean of income (its
clipping range: the declared, estimated bounds), which the reviewer approves and the
worker computes; once published, its public page says the bounds were estimated
privately, at what cost, with a link to the estimate's public page, and the project's
registry lists the estimate's spend like any release's.
"""

from __future__ import annotations

import pytest

from datasets.models import Column
from releases.models import Release
from tests.conftest import wait_for
from tests.releases_support import make_dataset
from tests.test_e2e_browser import (  # noqa: F401 (the chromium fixture)
    Pages,
    browser,
    login,
    publish,
    submit_for_review,
)

pytestmark = [pytest.mark.browser, pytest.mark.worker]

BOUNDS_TITLE = "Where income lies"
MEAN_TITLE = "Mean income"


def _build(pages: Pages, project, *, title: str, fill) -> Release:
    page = pages.page
    pages.goto(f"/releases/new/{project.slug}/")
    page.locator("#builder[data-ready]").wait_for()
    page.locator("#f-title").fill(title)
    page.locator("#f-epsilon").fill("1")
    fill(page.locator("#stats tbody tr").first)
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url("**/releases/*/")
    return Release.objects.get(project=project, title=title)


def _approve_and_compute(pages: Pages, release: Release, *, method: str = "") -> None:
    pages.goto(f"/projects/requests/{release.budget_request_id}/")
    if method:
        assert method in pages.page.locator("main").inner_text()
    pages.page.get_by_role("button", name="Approve and reserve").click()
    pages.page.wait_for_load_state()
    wait_for(
        lambda: Release.objects.filter(pk=release.pk, status="computed").exists(),
        timeout=180,
        message="the worker did not compute the release",
    )
    release.refresh_from_db()


def _bounds_row(row) -> None:
    row.locator("select[data-f=kind]").select_option("bounds")
    row.locator("select[data-f=column]").select_option("income")
    row.locator("input[data-f=outside]").fill("5")
    row.page.locator("#preview table tr[data-kind=bounds]").wait_for()
    text = row.page.locator("#preview table tr[data-kind=bounds]").inner_text()
    assert "at most" in text and "values lie beyond each bound" in text, text


def _mean_row(row) -> None:
    row.locator("select[data-f=kind]").select_option("mean")
    row.locator("select[data-f=column]").select_option("income")
    row.locator("input[data-f=n_guess]").fill("3000")
    row.page.locator("#preview table tr[data-kind=mean]").wait_for()


@pytest.mark.django_db(transaction=True)
def test_bounds_are_estimated_declared_and_stated_on_a_later_mean(
    browser,  # noqa: F811
    live_server,
    celery_workers,
    project,
    owner,
    reviewer,
):
    celery_workers.start(concurrency=1)
    project.epsilon_cap = 10
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner, rows=3000)
    Column.objects.filter(dataset=dataset, name="income").update(lower=None, upper=None)
    opened: list[Pages] = []

    def open_pages(name: str, user) -> Pages:
        pages = Pages(browser, live_server, name)
        if user is not None:
            login(pages, user)
        opened.append(pages)
        return pages

    try:
        owner_pages = open_pages("bounds-owner", owner)
        reviewer_pages = open_pages("bounds-reviewer", reviewer)
        estimate = _build(owner_pages, project, title=BOUNDS_TITLE, fill=_bounds_row)
        submit_for_review(owner_pages, estimate)
        _approve_and_compute(reviewer_pages, estimate, method="AboveThreshold")
        (entry,) = estimate.result.payload["statistics"]
        assert None not in entry["bounds"].values(), "a search reached its limit (rare)"

        page = owner_pages.page
        owner_pages.goto(f"/releases/{estimate.pk}/")
        assert "Estimated bounds of income" in page.locator("main").inner_text()
        page.get_by_role("button", name="Declare as the bounds of column income").click()
        page.wait_for_load_state()
        column = Column.objects.get(dataset=dataset, name="income")
        assert column.bounds_estimate["release"] == estimate.pk
        assert column.lower is not None and column.upper is not None
        publish(owner_pages, estimate)

        mean = _build(owner_pages, project, title=MEAN_TITLE, fill=_mean_row)
        submit_for_review(owner_pages, mean)
        _approve_and_compute(reviewer_pages, mean)
        publish(owner_pages, mean)

        public = open_pages("bounds-public", None)
        public.goto(f"/p/{project.slug}/releases/{mean.pk}/")
        provenance = public.page.locator("[data-param=bounds-estimated]").first
        assert "bounds of income estimated privately at ε = 1" in provenance.inner_text()
        link = provenance.locator("a").get_attribute("href")
        assert link == f"/p/{project.slug}/releases/{estimate.pk}/"
        public.goto(link)
        assert "Estimated bounds of income" in public.page.locator("main").inner_text()
        public.goto(f"/registry/{project.slug}/")
        assert BOUNDS_TITLE in public.page.locator("main").inner_text()
        for p in opened:
            assert p.outside == [], f"a page tried to reach the internet: {p.outside}"
            assert p.errors == [], f"JavaScript errors: {p.errors}"
    finally:
        for p in opened:
            p.close()
