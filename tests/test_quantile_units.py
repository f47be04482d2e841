"""Quantiles' accuracy in the data's units beside their rank error, on every surface.

Before the release (preview, accuracy-versus-epsilon chart, draft page, inbox, review)
a planning figure from public inputs only: the owner's guess of n, the grid's range
and step; after it (owner's results, public page, JSON, CSV) an estimate read through
the released quantiles themselves. Each is checked against the math of
dpportal.privacy.quantiles, and the estimate's coverage on data that meets its
assumption.
"""

from __future__ import annotations

import csv
import io
import json
import math
from fractions import Fraction
from html import unescape

import numpy as np
import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse
from django.utils import translation

from budgets.selectors.review import KIND_TEXT, statistic_lines
from datasets.models import Column
from dpportal import formatting
from dpportal.catalogues import compile_all
from dpportal.privacy import quantile_units, quantiles
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, kinds, lifecycle, services
from releases.kinds import quantile_words
from releases.kinds.quantile_words import value_basis
from releases.models import Release, Statistic
from releases.review import stats_text as review_sentences
from tests.releases_support import builder_data, make_dataset

QUARTILES = {
    "kind": "quantiles",
    "column": "income",
    "quantiles": "0.25, 0.5, 0.75",
    "step": "1000",
    "lower": "0",
    "upper": "200000",
    "n_guess": 4000,
}


# --- the math -----------------------------------------------------------------------


def test_planning_value_error_is_the_ranks_share_of_the_range_plus_one_step():
    # 10,000 values evenly over 0..200,000: 20 units per rank; 150 ranks = 3,000, + step
    got = quantile_units.planning_value_error(
        rank_error=150, n_guess=10_000, first=0, last=200_000, step=1000
    )
    assert got == pytest.approx(4000)
    # more values: a smaller figure; never wider than the grid
    more = quantile_units.planning_value_error(
        rank_error=150, n_guess=100_000, first=0, last=200_000, step=1000
    )
    assert more == pytest.approx(1300) and more < got
    assert quantile_units.planning_value_error(
        rank_error=10**6, n_guess=10, first=0, last=50, step=5
    ) == pytest.approx(50)


def test_grid_step_is_the_widest_gap():
    assert quantile_units.grid_step([0, 18, 40, 65, 100]) == 35
    assert quantile_units.grid_step(quantiles.candidate_grid(0, 10, "0.5")) == Fraction(1, 2)


def test_released_range_on_an_even_shape_matches_the_planning_figure():
    # released quartiles exactly where an even spread puts them: the same figure
    (low, high) = quantile_units.value_range_from_released(
        quantiles=["0.25", "0.5", "0.75"], values=[50_000, 100_000, 150_000],
        rank_errors=[150, 150, 150], n=10_000, first=0, last=200_000, step=1000,
    )[1]  # fmt: skip
    width = quantile_units.planning_value_error(
        rank_error=150, n_guess=10_000, first=0, last=200_000, step=1000
    )
    assert (low, high) == pytest.approx((100_000 - width, 100_000 + width))


def test_released_range_follows_the_released_shape():
    # the quartiles are close together: the data is dense there, the range narrow;
    # the tails are wide: the range of the lower quartile stretches towards 0
    ranges = quantile_units.value_range_from_released(
        quantiles=["0.25", "0.5", "0.75"], values=[40_000, 42_000, 44_000],
        rank_errors=[100, 100, 100], n=1000, first=0, last=200_000, step=100,
    )  # fmt: skip
    (l0, h0), (l1, h1), (l2, h2) = ranges
    assert h1 - l1 < 2_000 < h2 - l2
    assert l0 < 40_000 - 10_000 and h2 > 44_000 + 10_000
    assert all(0 <= lo <= hi <= 200_000 for lo, hi in ranges)


def test_released_range_covers_the_true_quantile_when_the_assumption_holds():
    """Data spread evenly, n known: the range holds the true quantile at least as often
    as the rank statement's confidence (it adds the grid step, so it is conservative)."""
    rng = np.random.default_rng(7)
    seeded = SeededTestRandom(27)
    grid = quantiles.candidate_grid(0, 1000, 10)
    qs = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
    trials, held = 200, 0
    for _ in range(trials):
        data = rng.uniform(0, 1000, 2000)
        counter = quantiles.RankCounter(grid)
        counter.add(data)
        result = quantiles.release_quantiles(
            counter.rank_counts(), counter.n, candidates=grid, quantiles=qs, epsilon="0.3",
            rng=seeded,
        )  # fmt: skip
        explanation = result.to_dict()
        errors = quantiles.quantile_rank_errors(explanation, confidence="0.95")
        ranges = quantile_units.value_range_from_released(
            quantiles=qs, values=[p.value for p in result.parts], rank_errors=errors,
            n=counter.n, first=0, last=1000, step=10,
        )  # fmt: skip
        truth = np.quantile(data, [float(q) for q in qs])
        held += all(lo <= t <= hi for t, (lo, hi) in zip(truth, ranges, strict=True))
    assert held / trials >= 0.95


# --- before the release -----------------------------------------------------------------


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=3000)


def _planning_width(preview_stat, plan_n=4000, key="rank_error"):
    return quantile_units.planning_value_error(
        rank_error=preview_stat[key], n_guess=plan_n, first=0, last=200_000, step=1000
    )


@pytest.mark.django_db
def test_preview_states_the_planning_figure_beside_the_rank_error(project, dataset):
    data = builder_data(dataset, statistics=[QUARTILES], epsilon="0.5")
    stat = services.release_preview(project=project, data=data)["statistics"][0]
    assert stat["n_guess"] == 4000 and stat["rank_error"] > 0
    assert stat["value_error"] == pytest.approx(_planning_width(stat))
    assert stat["value_error_simultaneous"] == pytest.approx(
        _planning_width(stat, key="rank_error_simultaneous")
    )
    # the confidence interval's planned reach, in ranks and in the data's units
    assert stat["interval_rank_reach"] > stat["rank_error"] > 0
    assert stat["interval_value_reach"] == pytest.approx(
        _planning_width(stat, key="interval_rank_reach")
    )
    width = formatting.halfwidth(stat["interval_value_reach"])
    ranks = formatting.integer(math.ceil(stat["rank_error"]))
    assert f"interval about ± {width} in the data's units" in stat["accuracy_text"]
    n, last = formatting.integer(4000), formatting.significant(200_000, 15)
    spread = f"if about {n} values were spread evenly from 0 to {last}"
    assert spread in stat["accuracy_text"]
    assert stat["accuracy_text"].endswith(f"rank ± {ranks} values")
    # without a guess of n: the rank error, and how to get the data-unit figure
    bare = {k: v for k, v in QUARTILES.items() if k != "n_guess"}
    data = builder_data(dataset, statistics=[bare], epsilon="0.5")
    stat = services.release_preview(project=project, data=data)["statistics"][0]
    assert stat["value_error"] is None and stat["interval_value_reach"] is None
    reach = formatting.rank(stat["interval_rank_reach"])
    assert f"interval about ± {reach} values around the quantile" in stat["accuracy_text"]


@pytest.mark.django_db
def test_tradeoff_chart_draws_quantiles_and_fills_their_column(project, dataset):
    data = builder_data(dataset, statistics=[QUARTILES, {"kind": "count"}], epsilon="0.5")
    chart = services.release_preview(project=project, data=data, chart=True)["tradeoff"]
    series = chart["series"][0]
    assert series["kind"] == "quantiles" and series["unit"] == "value"
    assert all(h is not None and h > 0 for h in series["halfwidth"])
    assert all(
        t.startswith("interval about ") and "(rank ± " in t for t in series["halfwidth_text"]
    )
    # larger total epsilon, smaller error: the line goes down
    assert series["halfwidth"][0] > series["halfwidth"][-1]
    bare = {k: v for k, v in QUARTILES.items() if k != "n_guess"}
    data = builder_data(dataset, statistics=[bare], epsilon="0.5")
    chart = services.release_preview(project=project, data=data, chart=True)["tradeoff"]
    series = chart["series"][0]
    assert series["unit"] == "ranks" and series["legend"].endswith("(ranks)")
    assert all(h and t.startswith("interval ± ") for h, t in zip(
        series["halfwidth"], series["halfwidth_text"], strict=True))  # fmt: skip


def test_inbox_kind_labels_are_the_kinds_own_labels():
    assert {k: str(v) for k, v in KIND_TEXT.items()} == {
        k: str(v) for k, v in Statistic.Kind.choices
    }


def test_inbox_states_quantile_accuracy_and_three_values():
    compile_all()  # the Chinese catalogue, for the kinds' labels
    summary = {
        "statistics": [
            {"kind": "quantiles", "label": "", "columns": ["income"], "epsilon": "0.5",
             "delta": "0", "cells": 3, "halfwidth": None, "halfwidth_simultaneous": None,
             "rank_error": 300.2, "rank_error_simultaneous": 350.9, "value_error": 16000.0,
             "value_error_simultaneous": 18500.0, "n_guess": 4000, "grid_first": 0.0,
             "grid_last": 200000.0},
            {"kind": "grouped_mean", "label": "By region", "columns": ["income"],
             "epsilon": "0.5", "delta": "0", "cells": 6, "halfwidth": 10.0,
             "halfwidth_simultaneous": None},
        ]
    }  # fmt: skip
    lines = statistic_lines(summary=summary)
    for language, kind_label in (("en", "Median and quantiles"), ("zh-hans", None)):
        with translation.override(language):
            html = render_to_string("budgets/_statistics.html", {"lines": lines})
            if kind_label:
                assert kind_label in html and "Mean by group" in html
            else:
                assert "中位数与分位数" in html
            assert "<td>quantiles</td>" not in html and "grouped_mean" not in html
            wide = (formatting.halfwidth(16000), formatting.halfwidth(18500))
            rank = "rank" if language == "en" else "秩"
            assert f"± {wide[0]}" in html and f"± {wide[1]}" in html and f"{rank} ± 301" in html
            assert f"{rank} ± 351" in html
    with translation.override("en"):
        html = render_to_string("budgets/_statistics.html", {"lines": lines})
    assert "3 values at once:" in html and "one value" not in html
    assert "6 values: not recorded" in html


# --- through the compute path to every surface ------------------------------------------


def _computed(project, owner, reviewer, dataset, statistics):
    data = builder_data(dataset, statistics=statistics, epsilon="0.5")
    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    release = lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk, rng=SeededTestRandom(3)) == "computed"
    return Release.objects.get(pk=release.pk)


@pytest.mark.django_db
def test_released_quantiles_carry_their_confidence_intervals(project, owner, reviewer, dataset):
    release = _computed(project, owner, reviewer, dataset, [QUARTILES])
    assert release.spec["statistics"][0]["method"] == "joint"
    entry = release.result.payload["statistics"][0]
    assert entry["interval_confidence"] == "0.95"
    cells = kinds.get("quantiles").intervals(entry, confidence="0.95")
    errors = quantiles.quantile_rank_errors(entry["explanation"], confidence="0.95")
    ends = entry["intervals"]["ends"]
    assert [(c.low, c.high) for c in cells] == [
        (float(Fraction(e["low"])), float(Fraction(e["high"]))) for e in ends
    ]
    assert all(c.low <= c.high and c.about_low is None for c in cells)
    assert all(c.rank_error == pytest.approx(t) for c, t in zip(cells, errors, strict=True))

    client = Client()
    client.force_login(owner)
    owner_page = unescape(
        client.get(reverse("releases:detail", args=[release.pk])).content.decode()
    )
    owned = kinds.get("quantiles").intervals(entry, confidence=str(release.confidence))[1]
    about = kinds.get("quantiles").cell_accuracy_text(owned)
    assert about.startswith("true value between ") and "; rank error ± " in about
    assert about in owner_page
    release = lifecycle.release_publish(release=release, actor=owner)
    args = [project.slug, release.pk]
    page = unescape(Client().get(reverse("public:release", args=args)).content.decode())
    assert "The true quantile lies" in page and "whatever the data" in page
    low, high = quantile_words.about_range_texts(cells[1].low, cells[1].high)
    assert f'<td class="num" data-q="about">{low} to {high}</td>' in page
    record = json.loads(Client().get(reverse("public:release-json", args=args)).content)
    median = record["statistics"][0]["cells"][1]
    assert median["lower"] == pytest.approx(cells[1].low)
    assert median["upper"] == pytest.approx(cells[1].high)
    assert median["simultaneous_lower"] is None  # 3 intervals at 95 % do not hold at 95 % at once
    response = Client().get(reverse("public:release-csv", args=args))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert Fraction(rows[1]["lower"]) == Fraction(ends[1]["low"])
    assert Fraction(rows[1]["upper"]) == Fraction(ends[1]["high"])


@pytest.mark.django_db
def test_without_a_guess_of_n_the_interval_is_still_released(project, owner, reviewer, dataset):
    bare = {k: v for k, v in QUARTILES.items() if k != "n_guess"}
    release = _computed(project, owner, reviewer, dataset, [bare])
    assert "n_guess" not in release.spec["statistics"][0]
    entry = release.result.payload["statistics"][0]
    assert value_basis(entry) is None
    cells = kinds.get("quantiles").intervals(entry, confidence="0.95")
    assert all(c.low is not None and c.rank_error > 0 for c in cells)


@pytest.mark.django_db
def test_a_column_without_an_upper_bound_gets_the_open_grid(project, owner, reviewer, dataset):
    Column.objects.filter(dataset=dataset, name="income").update(upper=None)
    median = {"kind": "quantiles", "column": "income", "quantiles": "0.5", "step": "1"}
    data = builder_data(dataset, statistics=[median], epsilon="0.5")
    plan = services.release_plan_parse(project=project, data=data)
    assert len(plan.statistics[0].grid) == 10_802
    assert review_sentences.grid_words(plan.statistics[0]).startswith(
        "an open grid (no upper bound declared): 0, then 0 plus every number"
    )
    stat = services.release_preview(project=project, data=data)["statistics"][0]
    assert stat["open_grid"] is True and stat["interval_value_reach"] is None
    assert stat["candidates"] == 10_802 and stat["rank_error"] > 0
    release = _computed(project, owner, reviewer, dataset, [median])
    grid = release.spec["statistics"][0]["grid"]
    assert grid["open"] is True and Fraction(grid["lower"]) == 0 and "upper" not in grid
    entry = release.result.payload["statistics"][0]
    (cell,) = kinds.get("quantiles").intervals(entry, confidence="0.95")
    assert 0 <= cell.low <= cell.high and cell.rank_error > 0
