"""The cross-tabulation kind: declared through the API and the builder, Gaussian only,
previewed table by table, reviewed with its workload and strategy, noised consistently."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from budgets.models import BudgetRequest
from dpportal.errors import ValidationFailed
from dpportal.privacy.marginal_release import MarginalRelease
from dpportal.privacy.marginal_workload import Workload
from dpportal.privacy.rng import SeededTestRandom
from releases import compute, dp, kinds, lifecycle, services
from releases.compute.readers import Axis
from releases.kinds.crosstab import entry_workload
from releases.models import Release, ReleaseResult, Statistic
from releases.review.selectors import review_document_get
from tests.factories import PASSWORD
from tests.releases_support import builder_data, make_dataset, submitted

CROSSTAB = {"kind": "crosstab", "columns": ["region", "age"], "way": 2, "total": True}


def gaussian(dataset, statistics, **extra):
    return builder_data(
        dataset, statistics=statistics, mechanism="gaussian", delta="1e-6", epsilon="1", **extra
    )


@pytest.fixture
def dataset(project, owner):
    return make_dataset(project=project, owner=owner, rows=400)


def test_the_api_creates_a_crosstab_and_reads_it_back(project, owner, dataset):
    client = APIClient()
    client.force_authenticate(owner)
    statistic = {
        "kind": "crosstab",
        "columns": ["region", "age"],
        "marginals": [["region", "age"], ["age"]],
        "total": True,
    }
    response = client.post(
        f"/api/v1/projects/{project.slug}/releases/create/",
        gaussian(dataset, [statistic]),
        format="json",
    )
    assert response.status_code == 201, response.content
    stored = response.json()["statistics"][0]
    assert stored["kind"] == "crosstab"
    assert stored["crosstab"] == {
        "columns": ["region", "age"],
        "way": None,
        "marginals": [["age"], ["region", "age"]],
        "total": True,
    }
    assert stored["label"] == "Cross-tabulation of region x age"
    row = Statistic.objects.get(release_id=response.json()["id"])
    assert row.crosstab["marginals"] == [[1], [0, 1]]
    assert row.crosstab["total"] is True


def test_a_laplace_release_refuses_a_crosstab(project, owner, dataset):
    client = APIClient()
    client.force_authenticate(owner)
    data = builder_data(dataset, statistics=[CROSSTAB], epsilon="1")  # Laplace
    response = client.post(f"/api/v1/projects/{project.slug}/releases/create/", data, format="json")
    assert response.status_code == 400, response.content
    assert "A cross-tabulation needs the Gaussian mechanism" in response.content.decode()
    assert not Release.objects.exists()


@pytest.mark.parametrize(
    ("statistic", "words"),
    [
        ({"kind": "crosstab"}, "Choose the columns"),
        ({"kind": "crosstab", "columns": ["region"]}, "Choose the tables"),
        ({"kind": "crosstab", "columns": ["income"]}, "needs declared bin edges"),
        ({"kind": "crosstab", "columns": ["region", "region"], "way": 1}, "once"),
        ({"kind": "crosstab", "columns": ["region"], "way": 1, "marginals": "region"}, "not both"),
        ({"kind": "crosstab", "columns": ["region"], "marginals": "age"}, "'age' is not one"),
        ({"kind": "crosstab", "columns": ["region"], "way": 4}, "1 to 3 columns"),
    ],
)
def test_a_bad_crosstab_is_refused_with_a_clear_message(project, owner, dataset, statistic, words):
    with pytest.raises(ValidationFailed) as refused:
        services.release_save_draft(
            project=project, actor=owner, data=gaussian(dataset, [statistic])
        )
    assert words in refused.value.message
    assert refused.value.message.startswith("Statistic 1 (cross-tabulation): ")
    assert not Release.objects.exists()


def test_typed_tables_parse_like_listed_ones(project, dataset):
    typed = {"kind": "crosstab", "columns": "region, age", "marginals": "region × age; age"}
    plan = services.release_plan_parse(project=project, data=gaussian(dataset, [typed]))
    assert plan.statistics[0].marginals == ((1,), (0, 1))
    assert not plan.statistics[0].total


def test_the_preview_gives_each_table_its_halfwidth(project, dataset):
    preview = services.release_preview(
        project=project, data=gaussian(dataset, [CROSSTAB]), accounting=False
    )
    stat = preview["statistics"][0]
    sizes = (4 + 1 + 1, 4)  # region: 4 categories + Other + Missing; age: 4 bins
    workload = Workload.of(sizes, [(), (0,), (1,), (0, 1)])
    assert stat["cells"] == workload.published_cells == 1 + 6 + 4 + 24
    tables = stat["marginals"]
    assert [t["marginal"] for t in tables] == [[], [0], [1], [0, 1]]
    assert stat["halfwidth"] == max(t["halfwidth"] for t in tables)
    for t in tables:
        assert 0 < t["halfwidth"] < t["halfwidth_simultaneous"]
        assert t["halfwidth"] == pytest.approx(1.959964 * t["sd"], rel=1e-5)
    assert stat["columns"] == ["region", "age"]


def test_a_target_halfwidth_is_met_by_the_widest_table(project, dataset):
    targeted = {**CROSSTAB, "target_halfwidth": 60}
    plan = services.release_plan_parse(
        project=project, data=gaussian(dataset, [targeted, {"kind": "count"}])
    )
    preview = kinds.get("crosstab").accuracy(plan=plan, stat=plan.statistics[0])
    assert preview["halfwidth"] <= 60
    assert Decimal(plan.statistics[0].epsilon) < 1


def test_the_cell_limit_refuses_a_large_crosstab(project, dataset, settings):
    settings.RELEASE_MAX_CELLS_PER_STATISTIC = 30
    with pytest.raises(ValidationFailed) as refused:
        services.release_plan_parse(project=project, data=gaussian(dataset, [CROSSTAB]))
    assert "at most 30 cells per statistic" in refused.value.message


def test_the_review_document_lists_the_tables_and_the_strategy(project, owner, dataset):
    submitted(project=project, owner=owner, dataset=dataset, statistics=[CROSSTAB],
              mechanism="gaussian", delta="1e-6", epsilon="1")  # fmt: skip
    document = review_document_get(budget_request=BudgetRequest.objects.get())
    (stat,) = document.statistics
    assert stat.kind == "crosstab"
    assert [c.name for c in stat.columns] == ["region", "age"]
    details = {param: text for _, text, param in stat.details}
    assert details["marginals"] == (
        "All rows: 1 cell; region: 6 cells; age: 4 cells; region × age: 24 cells"
    )
    assert "ResidualPlanner" in details["strategy"] and "rho = " in details["strategy"]
    assert details["table-noise"].count("standard deviation") == 4
    assert stat.cells == 35 and stat.halfwidth > 0
    assert [n.part for n in stat.noise] == ["All rows", "region", "age", "region × age"]


def test_the_draft_round_trips_through_the_builder_input(project, owner, dataset):
    release = services.release_save_draft(
        project=project, actor=owner, data=gaussian(dataset, [CROSSTAB])
    )
    again = services.release_form_data(release=release)["statistics"][0]
    assert again["columns"] == ["region", "age"] and again["way"] == 2 and again["total"]
    spec = services.release_spec_build(release=release)["statistics"][0]
    assert [c["name"] for c in spec["columns"]] == ["region", "age"]
    assert spec["marginals"] == [[], [0], [1], [0, 1]] and spec["total"] is True
    assert Fraction(spec["epsilon"]) == 1


def test_the_builder_page_saves_a_crosstab_as_its_script_sends_it(client, project, owner, dataset):
    assert client.login(username=owner.username, password=PASSWORD)
    url = reverse("releases:new", args=[project.slug])
    page = client.get(url)
    assert page.status_code == 200 and b"crosstab_ways" in page.content
    # the script's payload: the picked columns as a list, the way ("" for a typed list)
    typed = {"kind": "crosstab", "column": "", "columns": ["region", "age"], "way": "",
             "marginals": "region × age", "total": True, "weight": "1"}  # fmt: skip
    response = client.post(url, {"payload": json.dumps(gaussian(dataset, [typed]))})
    assert response.status_code == 302, response.content[:500]
    release = Release.objects.get()
    again = services.release_form_data(release=release)["statistics"][0]
    assert again["marginals"] == [["region", "age"]] and again["way"] == ""
    detail = client.get(reverse("releases:detail", args=[release.pk]))
    assert detail.status_code == 200


def test_the_builder_page_shows_the_laplace_refusal(client, project, owner, dataset):
    assert client.login(username=owner.username, password=PASSWORD)
    data = builder_data(dataset, statistics=[CROSSTAB], epsilon="1")
    response = client.post(
        reverse("releases:new", args=[project.slug]), {"payload": json.dumps(data)}
    )
    assert response.status_code == 400
    assert "A cross-tabulation needs the Gaussian mechanism" in response.content.decode()
    assert not Release.objects.exists()


def test_a_fake_aggregate_gives_consistent_public_tables(project, owner, dataset):
    release = services.release_save_draft(
        project=project, actor=owner, data=gaussian(dataset, [CROSSTAB])
    )
    entry = services.release_spec_build(release=release)["statistics"][0]
    axes = [Axis.from_domain(d) for d in entry["columns"]]
    workload = entry_workload(entry)
    assert workload.maximal == ((0, 1),)
    truth = np.arange(24, dtype=np.int64).reshape(6, 4)  # test DATA, not noise
    out = dp.noisy_entry(
        entry=entry, aggregate=[truth], mechanism="gaussian", confidence="0.95",
        contribution_bound=1, cells=axes, rng=SeededTestRandom(7),
    )  # fmt: skip
    assert out["kind"] == "crosstab" and kinds.get("crosstab").layout(out) == "crosstabs"
    assert [t["marginal"] for t in out["tables"]] == [[], [0], [1], [0, 1]]
    assert out["tables"][3]["labels"] == [axes[0].labels, axes[1].labels]
    assert len(out["values"]) == len(out["cells"]) == 35
    assert out["cells"][0] == "All rows" and out["cells"][1] == "region: north"
    assert out["cells"][-1] == f"region: {axes[0].labels[-1]} / age: {axes[1].labels[-1]}"
    # no true value is stored: the exact tables come back from the noisy measurements alone
    stored = json.loads(json.dumps(out))
    again = MarginalRelease.from_dict(stored["explanation"])
    full = again.exact((0, 1))
    total, by_region, by_age = again.exact(()), again.exact((0,)), again.exact((1,))
    as_fraction = lambda d, n: np.vectorize(lambda v: Fraction(int(v), d))(n)  # noqa: E731
    cross = as_fraction(*full)
    assert (as_fraction(*by_region) == cross.sum(axis=1)).all()
    assert (as_fraction(*by_age) == cross.sum(axis=0)).all()
    assert as_fraction(*total).sum() == cross.sum()
    flat = np.asarray(out["values"][11:]).reshape(6, 4)
    assert np.allclose(flat, cross.astype(float))
    # each cell's interval is its table's half-width around the unbiased value
    kind = kinds.get("crosstab")
    cells = kind.intervals(stored, confidence="0.95")
    together = kind.intervals(stored, confidence="0.95", simultaneous=True)
    plan = again.plan
    assert cells[0].halfwidth == pytest.approx(plan.halfwidth((), "0.95"))
    assert cells[-1].halfwidth == pytest.approx(plan.halfwidth((0, 1), "0.95"))
    assert all(t.halfwidth > c.halfwidth for t, c in zip(together, cells, strict=True))
    assert [c.value for c in cells] == out["values"]
    parts = kind.noise_parts(stored["explanation"])
    assert [p.part for p in parts] == ["All rows", "region", "age", "region × age"]
    assert all(p.distribution == "discrete_gaussian" for p in parts)
    planned = services.release_plan_parse(project=project, data=gaussian(dataset, [CROSSTAB]))
    (record,) = kind.records(plan=planned, stat=planned.statistics[0])
    assert record.to_dict() == plan.records()[0].to_dict()


def test_the_reviewer_reads_the_tables_on_the_page_and_in_the_api(
    client, project, owner, reviewer, dataset
):
    submitted(project=project, owner=owner, dataset=dataset, statistics=[CROSSTAB],
              mechanism="gaussian", delta="1e-6", epsilon="1")  # fmt: skip
    request = BudgetRequest.objects.get()
    assert client.login(username=reviewer.username, password=PASSWORD)
    page = client.get(reverse("review:request_detail", args=[request.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-param="marginals"' in html and "region × age: 24 cells" in html
    assert 'data-param="strategy"' in html and 'data-param="table-noise"' in html
    api = APIClient()
    api.force_authenticate(reviewer)
    body = api.get(f"/api/v1/budget-requests/{request.pk}/").json()
    (stat,) = body["review"]["statistics"]
    assert stat["kind"] == "crosstab" and stat["cells"] == 35


def test_the_live_preview_accounts_and_charts_a_crosstab(client, project, owner, dataset):
    assert client.login(username=owner.username, password=PASSWORD)
    preview = services.release_preview(
        project=project, data=gaussian(dataset, [CROSSTAB]), chart=True
    )
    assert preview["fits"] and preview["spend"] is not None
    assert preview["tradeoff"] is not None
    response = client.post(
        reverse("releases:preview", args=[project.slug]),
        gaussian(dataset, [CROSSTAB]),
        content_type="application/json",
    )
    assert response.status_code == 200
    (stat,) = response.json()["preview"]["statistics"]
    assert stat["halfwidth_text"] and len(stat["marginals"]) == 4


def test_a_total_alone_is_a_crosstab_too(project, owner, dataset):
    only = {"kind": "crosstab", "columns": ["region"], "total": True}
    release = services.release_save_draft(
        project=project, actor=owner, data=gaussian(dataset, [only])
    )
    entry = services.release_spec_build(release=release)["statistics"][0]
    assert entry["marginals"] == [[]] and entry["total"] is True
    assert entry_workload(entry).maximal == ((),)
    out = dp.noisy_entry(
        entry=entry, aggregate=[np.int64(400)], mechanism="gaussian", confidence="0.95",
        contribution_bound=1, cells=[Axis.from_domain(entry["columns"][0])],
        rng=SeededTestRandom(1),
    )  # fmt: skip
    assert out["cells"] == ["All rows"] and len(out["values"]) == 1


def test_a_crosstab_computes_end_to_end(project, owner, reviewer, dataset):
    """Draft, submit, approve and compute with the real engine: the stored tables agree."""
    release = submitted(project=project, owner=owner, dataset=dataset,
                        statistics=[CROSSTAB, {"kind": "count"}], mechanism="gaussian",
                        delta="1e-6", epsilon="1")  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    entry = ReleaseResult.objects.get(release=release).payload["statistics"][0]
    assert entry["kind"] == "crosstab" and len(entry["values"]) == 35
    again = MarginalRelease.from_dict(entry["explanation"])
    d, cross = again.exact((0, 1))
    d0, by_region = again.exact((0,))
    assert [Fraction(int(n), d0) for n in by_region] == [
        sum((Fraction(int(n), d) for n in row), Fraction(0)) for row in cross
    ]
    assert entry["tables"][0]["labels"] == []
    assert entry["tables"][3]["labels"][1] == ["[0, 18)", "[18, 40)", "[40, 65)", "[65, 100]"]
