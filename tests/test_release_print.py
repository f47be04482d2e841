"""A published release printed: its facts section states the record's values, a print
stylesheet is served and linked, and the print button is a static script's, not inline."""

from __future__ import annotations

import html
import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client

from budgets.selectors import accountant_description
from dpportal import formatting
from dpportal.product import product_version
from releases.demo import PUBLISHED_TITLE
from releases.models import Release
from releases.public.data import release_public_data

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def section(page: str, element_id: str) -> str:
    start = page.index(f'id="{element_id}"')
    return page[start : page.index("</section>", start)]


def fact(text: str, name: str) -> str:
    """The text of the <dd data-fact="name"> (tags removed, entities decoded)."""
    match = re.search(rf'<dd data-fact="{name}">(.*?)</dd>', text, re.S)
    assert match, name
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))


def statistic_row(text: str, position: int) -> list[str]:
    match = re.search(rf'<tr data-fact-statistic="{position}">(.*?)</tr>', text, re.S)
    assert match, position
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", match.group(1), re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells]


@pytest.fixture
def demo() -> Release:
    call_command("seed_demo", stdout=StringIO())
    return Release.objects.get(title=PUBLISHED_TITLE)


def test_the_facts_of_the_release_state_the_record(demo):
    url = f"/p/{demo.project.slug}/releases/{demo.pk}/"
    page = Client().get(url).content.decode()
    facts = section(page, "release-facts")
    assert "Facts of this release" in facts
    data = release_public_data(release=demo, levels=("0.95",))
    assert fact(facts, "project") == demo.project.name
    assert fact(facts, "dataset") == demo.dataset.name
    assert fact(facts, "privacy-unit") == data["privacy_unit"]
    unit = data["privacy_unit_parameters"]
    assert unit == {"unit": "person", "id_column": "person_id", "contribution_bound": 2}
    assert fact(facts, "contribution-bound") == "2 (person identified by the column “person_id”)"
    # budgets as every page writes them (4 significant digits), the exact value in a title
    assert fact(facts, "epsilon") == formatting.budget(demo.epsilon)
    assert f'data-fact="epsilon"><span class="amount" title="{data["epsilon"]}">' in facts
    assert fact(facts, "delta") == formatting.budget(demo.delta)
    assert fact(facts, "confidence") == "95 %"
    day = demo.budget_request.decided_at.date().isoformat()
    assert fact(facts, "approval") == f"a reviewer of the project on {day}"
    assert fact(facts, "published") == demo.published_at.date().isoformat()
    assert fact(facts, "product") == f"dpportal {product_version()}"
    accountant = accountant_description()
    assert accountant["version"] in fact(facts, "accountant")
    assert accountant["library"] in fact(facts, "accountant")

    # every statistic with its exact noise parameter (not the 3 digits the charts show)
    assert len(re.findall(r"data-fact-statistic=", facts)) == len(data["statistics"])
    exact_seen = 0
    for stat in data["statistics"]:
        label, _mechanism, noise, epsilon, delta = statistic_row(facts, stat["position"])
        assert label == stat["label"]
        assert epsilon == formatting.budget(stat["epsilon"])
        assert delta == formatting.budget(stat["delta"])
        parts = [stat["noise"]] + [
            stat["noise"][p] for p in ("sum", "count", "squares") if p in stat["noise"]
        ]
        for part in parts:
            if part.get("value_exact"):
                assert formatting.exact_fraction(part["value_exact"]) in noise, label
                exact_seen += 1
        if stat["kind"] == "quantiles":
            assert "permute-and-flip over" in noise
        if stat["kind"] == "bounds":
            assert noise == "AboveThreshold search (pure epsilon-differential privacy)"
    assert exact_seen >= len(data["statistics"]) - 2


def test_the_print_stylesheet_is_served_linked_and_hides_the_controls(demo):
    page = Client().get(f"/p/{demo.project.slug}/releases/{demo.pk}/").content.decode()
    link = re.search(r'<link rel="stylesheet" href="([^"]*release-print[^"]*)" media="print"', page)
    assert link, "the release page links its print stylesheet"
    served = Client().get(link.group(1))
    assert served.status_code == 200
    css = b"".join(served.streaming_content if served.streaming else [served.content]).decode()
    assert css == Path(finders.find("css/release-print.css")).read_text()
    assert "@media print" in css
    hidden = css[css.index("@media print") : css.index("display: none !important")]
    for selector in ("header.site", ".crumbs", "#interval-controls", "button", "form"):
        assert selector in hidden, selector
    assert ".downloads" in hidden
    assert "break-inside: avoid" in css and ".statistic" in css
    assert "details::details-content" in css
    # the breadcrumbs are marked for it; the print button is a button the script reveals
    assert '<p class="muted crumbs">' in page
    assert re.search(r'<button type="button" class="link-button" data-print hidden>', page)
    script = (ROOT / "static/js/public-release.js").read_text()
    assert "window.print()" in script and "[data-print]" in script


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("10/3", "10/3"),
        ("0.0009765625", "0.0009765625"),
        ("1500", "1,500"),
        ("-7/2", "-3.5"),
        ("500000000000/16666666669", "500,000,000,000/16,666,666,669"),
    ],
)
def test_an_exact_parameter_is_written_whole(value, text):
    assert formatting.exact_fraction(value) == text
