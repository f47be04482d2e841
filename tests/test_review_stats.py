"""The review document of grouped statistics, quantiles and spread (issue 14)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from django.urls import reverse

from dpportal import formatting
from releases import dp, lifecycle, services
from releases.review.selectors import review_document_get
from tests.releases_support import builder_data, make_dataset

pytestmark = pytest.mark.django_db

NEW = [
    {"kind": "grouped_mean", "column": "income", "group_by": "region", "group_by2": "age",
     "n_guess": 200},
    {"kind": "quantiles", "column": "income", "quantiles": "0.25, 0.5, 0.75", "step": "1000"},
    {"kind": "stddev", "column": "age", "n_guess": 5000},
]  # fmt: skip


@pytest.fixture
def submitted(project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    data = builder_data(dataset, statistics=NEW, epsilon="1")
    release = services.release_save_draft(project=project, actor=owner, data=data)
    return lifecycle.release_submit(release=release, actor=owner), data


def test_each_new_kind_states_domains_grid_split_sensitivity_and_accuracy(submitted, project):
    release, data = submitted
    document = review_document_get(budget_request=release.budget_request)
    assert document.notice == ""
    mean, quantiles, sd = document.statistics
    plan = services.release_plan_parse(project=project, data=data)
    # grouped mean: value column and both grouping columns with their declared domains
    assert [c.name for c in mean.columns] == ["income", "region", "age"]
    details = {heading: text for heading, text, _ in mean.details}
    assert "24 groups" in details["Groups"] and "region × age" in details["Groups"]
    assert "L different groups" in details["Group bound"]
    assert details["Epsilon split"] == "sum 1/2, count 1/2 of the statistic's epsilon"
    assert [n.part for n in mean.noise] == ["sum", "count"]
    preview = dp.statistic_accuracy(plan=plan, stat=plan.statistics[0])
    assert mean.halfwidth == preview["halfwidth"]
    assert "smallest group" in mean.halfwidth_text
    # quantiles: permute-and-flip, the owner's grid, equal split, sensitivity, rank error
    assert quantiles.mechanism == "permute_and_flip" and quantiles.delta == 0
    assert "Permute-and-flip" in quantiles.mechanism_text
    details = {heading: text for heading, text, _ in quantiles.details}
    assert details["Candidate grid"].startswith("every 1,000 from 0 to 150,000: 151 candidates")
    half = formatting.budget(Fraction(quantiles.epsilon) / 2)
    level = formatting.budget(Fraction(quantiles.epsilon) / 4)  # 3 quantiles: 2 levels
    end = formatting.budget(Fraction(quantiles.epsilon) / 12)  # 6 interval ends
    assert details["Epsilon split"].startswith(
        f"half ({half}) to the quantiles, drawn jointly in 2 levels of {level} each"
    )
    assert f"6 selections of {end} each" in details["Epsilon split"]
    assert "holds the true quantile with 95 % confidence" in details["Confidence interval"]
    assert "0.5: 0.5 ranks" in details["Sensitivity of the rank utility"]
    q_preview = dp.statistic_accuracy(plan=plan, stat=plan.statistics[1])
    assert quantiles.unit == "ranks" and quantiles.halfwidth == q_preview["rank_error"]
    # the rank error as the builder and the public page write it: whole records, rounded up
    ranks = formatting.rank(q_preview["rank_error"])
    assert f"rank ± {ranks} values" in quantiles.halfwidth_text
    assert quantiles.noise == ()
    # spread: three parts in the data's units, the split, the interval rule
    assert [n.part for n in sd.noise] == ["count", "centred sum", "sum of squares"]
    assert sd.noise[2].unit == "squared units of age"
    details = {heading: text for heading, text, _ in sd.details}
    assert details["Epsilon split"] == "count 1/4, centred sum 1/4, sum of squares 1/2"
    assert "clamped to 0" in details["Interval"]
    assert sd.halfwidth_simultaneous_text.endswith("(one value: the same interval)")
    assert "5,000 rows have a value per cell" in sd.halfwidth_text


def test_reviewer_page_shows_the_new_rows_without_reprs(client, submitted, reviewer):
    release, _ = submitted
    client.force_login(reviewer)
    page = client.get(reverse("review:request_detail", args=[release.budget_request_id]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-param="grid"' in html and 'data-param="group-bound"' in html
    assert "Permute-and-flip" in html and "ranks for each quantile" in html
    assert not re.search(r"Fraction\(|Decimal\(|\{'", html)
