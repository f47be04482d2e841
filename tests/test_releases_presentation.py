"""The members' results page shows the public page's numbers: noise in data units, same intervals.

A sum is noised on a grid of granularity gamma; its stored scale counts grid
steps. Issue 11 found the members' page printing that grid scale (44161725.0674)
where the public page printed the scale in the column's units (1347.71).
"""

from __future__ import annotations

from fractions import Fraction
from html import escape

import pytest
from django.urls import reverse

from dpportal import formatting
from releases import compute, lifecycle
from releases.presentation import results_for_display
from releases.public import data as public_data
from releases.public import options as public_options
from releases.results_text import noise_parameters, noise_text
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db


def test_a_sum_scale_is_converted_from_grid_steps_to_value_units():
    explanation = {"noise": "discrete_laplace", "scale": "44161725.0674", "granularity": "1/32768"}
    parameter = noise_parameters(explanation, kind="sum")[0]
    assert parameter.symbol == "scale"
    assert parameter.value == Fraction("44161725.0674") / 32768
    # 1347.71 to 3 significant digits (grouped or not, as formatting decides)
    assert parameter.text == f"scale {formatting.scale(parameter.value)}"
    assert formatting.scale(parameter.value).replace(",", "") == "1350"
    gaussian = {"noise": "discrete_gaussian", "sigma": "10/3", "granularity": "3"}
    assert noise_parameters(gaussian, kind="sum")[0].value == 10
    mean = {
        "sum": explanation,
        "count": {"noise": "discrete_laplace", "scale": "8", "granularity": "1/32768"},
    }
    # the count part is in rows whatever grid its explanation names
    assert noise_text(mean, kind="mean") == f"sum: {parameter.text}; count: scale 8"


@pytest.mark.parametrize(
    ("extra", "bound"),
    [
        pytest.param({"mechanism": "laplace"}, 1, id="laplace"),
        pytest.param({"mechanism": "gaussian", "delta": "0.000007"}, 3, id="gaussian-L3"),
    ],
)
def test_members_page_shows_the_public_scales_and_halfwidths(
    client, project, owner, reviewer, extra, bound
):
    dataset = make_dataset(
        project=project, owner=owner, rows=3000, id_column="person" if bound > 1 else "",
        bound=bound, people=1000,
    )  # fmt: skip
    release = submitted(project=project, owner=owner, dataset=dataset, **extra)
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    release.refresh_from_db()

    shown = results_for_display(release.result.payload)
    public = public_data.release_public_data(release=release)["statistics"]
    confidence = release.result.payload["confidence"]
    level = public_options.confidence_parse(value=confidence)
    grid_scales = []
    for item, stat in zip(shown, public, strict=True):
        assert item["label"] == stat["label"]
        if item["kind"] == "mean":
            parts = {p.part: p for p in item["noise"]}
            assert float(parts["sum"].value) == pytest.approx(stat["noise"]["sum"]["value"])
            assert float(parts["count"].value) == pytest.approx(stat["noise"]["count"]["value"])
            interval = stat["intervals"][level]["per_cell"]
            assert item["rows"][0]["low"] == pytest.approx(interval["lower"][0])
            assert item["rows"][0]["high"] == pytest.approx(interval["upper"][0])
        else:
            assert float(item["noise"][0].value) == pytest.approx(stat["noise"]["value"])
        if item["kind"] in ("count", "histogram", "sum"):
            per_cell = stat["intervals"][level]["per_cell"]["halfwidths"][0]
            assert item["halfwidth"] == pytest.approx(per_cell)
        if item["kind"] == "sum":
            explanation = release.result.payload["statistics"][4]["explanation"]
            grid = explanation.get("scale") or explanation.get("sigma")
            assert Fraction(explanation["granularity"]) < 1  # a real grid: the units differ
            grid_scales.append(formatting.scale(Fraction(grid)))
            assert item["noise"][0].value == Fraction(grid) * Fraction(explanation["granularity"])

    client.force_login(owner)
    html = client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    for item in shown:
        assert escape(item["noise_text"]) in html
        for row in item["rows"]:
            value = formatting.noisy(row["value"], row["halfwidth"])
            low = formatting.noisy(row["low"], row["halfwidth"])
            assert f'<td class="num">{value}</td>' in html
            assert f"[{low}, " in html
    for grid_scale in grid_scales:
        assert f"scale {grid_scale}" not in html and f"sigma {grid_scale}" not in html
