"""A published cross-tabulation reads back on every surface (members' results, public page,
data.json and data.csv) with its tables' cells."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import numpy as np
import pytest
from django.urls import reverse

from dpportal.privacy.rng import SeededTestRandom
from releases import dp, lifecycle
from releases.compute.readers import Axis
from releases.kinds.crosstab import stored_plan
from releases.models import Release, ReleaseResult, Statistic
from releases.public.data import release_public_data, statistic_texts
from tests.factories import PASSWORD
from tests.public_builders import _domain, build_release
from tests.test_public_pages import embedded_data, release_url

pytestmark = pytest.mark.django_db

TRUTH = np.array([[4813, 2719, 1091], [2207, 6151, 3771]], dtype=np.int64)  # test DATA, not noise


def crosstab_entry(position: int) -> tuple[dict, dict]:
    """(result entry, spec entry) of a 2 x 3 cross-tabulation with its margins and total."""
    sex = _domain("sex", categories=["female"])  # female + Other
    band = _domain("band", categories=["young", "old"])  # + Other
    spec = {
        "position": position, "kind": "crosstab", "label": "Sex by age band",
        "columns": [sex, band], "category": None, "epsilon": "0.5", "delta": "0.000001",
        "marginals": [[], [0], [1], [0, 1]], "total": True,
    }  # fmt: skip
    entry = dp.noisy_entry(
        entry=spec, aggregate=[TRUTH], mechanism="gaussian", confidence="0.95",
        contribution_bound=1, cells=[Axis.from_domain(d) for d in spec["columns"]],
        rng=SeededTestRandom(3),
    )  # fmt: skip
    return entry, spec


@pytest.fixture
def release(project, owner, reviewer):
    release = build_release(
        project=project, owner=owner, reviewer=reviewer, publish=False,
        mechanism="gaussian", delta_each="0.000001",
    )  # fmt: skip
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    entry, spec_entry = crosstab_entry(len(payload["statistics"]))
    payload["statistics"].append(entry)
    spec = dict(release.spec)
    spec["statistics"] = [*spec["statistics"], spec_entry]
    Statistic.objects.create(
        release=release, position=entry["position"], kind="crosstab", label=entry["label"],
        epsilon=Decimal("0.5"), delta=Decimal("0.000001"),
    )  # fmt: skip
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    Release.objects.filter(pk=release.pk).update(spec=spec)
    release = Release.objects.get(pk=release.pk)
    return lifecycle.release_publish(release=release, actor=owner)


def test_every_surface_reads_a_crosstab(client, release, owner):
    for url in (
        release_url(release),
        release_url(release, "public:release-json"),
        release_url(release, "public:release-csv"),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode()
        assert "Sex by age band" in body, url
        assert "sex: female / band: old" in body, url
    assert client.login(username=owner.username, password=PASSWORD)
    detail = client.get(reverse("releases:detail", args=[release.pk]))
    assert detail.status_code == 200 and "Sex by age band" in detail.content.decode()


def test_the_public_page_draws_each_table(client, release):
    response = client.get(release_url(release))
    html = response.content.decode()
    position = Statistic.objects.get(kind="crosstab").position
    assert f'id="crosstab-{position}"' in html
    for marginal in ("", "0", "1", "0-1"):
        assert f'data-table="{marginal}"' in html
    assert "sex \\ band" in html and "each count within plus or minus" in html
    data = embedded_data(response)
    (stat,) = [s for s in data["statistics"] if s["kind"] == "crosstab"]
    assert [t["name"] for t in stat["tables"]] == ["All rows", "sex", "band", "sex × band"]
    assert stat["layout"] == "crosstabs"
    # the two-way grid: row "female", its three cells, in the flattened order
    start = stat["tables"][3]["start"]
    assert f'data-value-of="{start}"' in html and f'data-value-of="{start + 5}"' in html
    assert "ResidualPlanner" in html
    # a heatmap above the two-way table, bars above each one-way table, no chart for the
    # total (the page's script draws them)
    assert f'id="chart-{position}-3"' in html and "Heatmap of sex × band" in html
    assert f'id="chart-{position}-1" role="img" aria-label="Bar chart of sex"' in html
    assert f'id="chart-{position}-2"' in html and f'id="chart-{position}-0"' not in html


def test_each_table_is_unbiased_with_its_stated_variance():
    """Released minus true over many draws: mean 0 and variance the table's stated
    per-cell variance (loose bounds: a false failure needs a > 6 sigma deviation)."""
    _, spec = crosstab_entry(0)
    runs = 300
    draws = [
        dp.noisy_entry(
            entry=spec,
            aggregate=[TRUTH],
            mechanism="gaussian",
            confidence="0.95",
            contribution_bound=1,
            cells=[Axis.from_domain(d) for d in spec["columns"]],
            rng=SeededTestRandom(100 + r),
        )  # fmt: skip
        for r in range(runs)
    ]
    plan = stored_plan(draws[0])
    truth = {(): TRUTH.sum(keepdims=False), (0,): TRUTH.sum(axis=1), (1,): TRUTH.sum(axis=0)}
    truth[(0, 1)] = TRUTH
    for table in draws[0]["tables"]:
        m, size = tuple(table["marginal"]), math.prod(table["shape"])
        start = table["start"]
        released = np.array([d["values"][start : start + size] for d in draws])
        errors = released - np.asarray(truth[m], dtype=float).reshape(-1)
        variance = float(plan.cell_variance(m))
        # a table's cells are correlated (they share residuals): bound with the draws alone,
        # each draw's average error having a variance of at most the cells' own
        assert abs(errors.mean()) <= 6 * math.sqrt(variance / runs), m
        # the sample variance of `runs` normal draws has a relative sd of sqrt(2 / runs)
        assert abs(errors.var() / variance - 1) <= 6 * math.sqrt(2 / runs), m


def test_data_json_places_each_cell_in_its_table(client, release):
    response = client.get(release_url(release, "public:release-json"))
    body = b"".join(response.streaming_content) if response.streaming else response.content
    data = json.loads(body)
    (stat,) = [s for s in data["statistics"] if s["kind"] == "crosstab"]
    assert [t["name"] for t in stat["tables"]] == ["All rows", "sex", "band", "sex × band"]
    cells = stat["cells"]
    assert (cells[0]["table"], cells[0]["coordinates"]) == ("All rows", {})
    last = cells[-1]
    assert last["table"] == "sex × band" and last["cell"] == "sex: Other / band: Other"
    assert last["coordinates"] == {"sex": "Other", "band": "Other"}
    assert all(c["halfwidth"] > 0 for c in cells)


def test_the_whole_number_display_keeps_the_tables_agreeing(release):
    data = release_public_data(release=Release.objects.get(pk=release.pk))
    (stat,) = [s for s in data["statistics"] if s["kind"] == "crosstab"]
    shown = stat["display_values"]
    assert all(isinstance(d, int) and d >= 0 for d in shown)
    total, by_sex, by_band = shown[0], shown[1:3], shown[3:6]
    start = stat["tables"][3]["start"]
    rows, cols = stat["tables"][3]["shape"]
    cross = np.asarray(shown[start : start + rows * cols]).reshape(rows, cols)
    assert list(cross.sum(axis=1)) == by_sex and list(cross.sum(axis=0)) == by_band
    assert cross.sum() == total
    # each shown number's interval holds the unbiased one's and stays at or above 0
    per_cell = stat["intervals"]["0.95"]["per_cell"]
    for i, d in enumerate(shown):
        assert per_cell["rounded_lower"][i] <= min(d, max(0.0, per_cell["lower"][i])) + 1e-9
        assert per_cell["rounded_upper"][i] >= max(d, per_cell["upper"][i]) - 1e-9
        assert per_cell["rounded_lower"][i] >= 0
    assert statistic_texts(stat)["rounded"] == [f"{d:,}" for d in shown]
