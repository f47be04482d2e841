"""The owner's download of a computed release as an OpenDP program (releases.opendp_program).

The program is run in this process (its source compiled and executed, one dataframe
loaded once) on the release's own data file, 50 times, with OpenDP's fresh noise.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.urls import reverse

from releases import compute, kinds, lifecycle
from releases.models import Release
from releases.opendp_program import opendp_program, program_filename
from releases.public.data import release_public_data
from tests.factories import MembershipFactory, UserFactory
from tests.kinds_support import DELTA, SURVEY_STATISTICS, kinds_under, raise_caps, statistic_for
from tests.releases_support import REGIONS, make_dataset, submitted

pytest.importorskip("opendp")

ROWS = 10_000
BOUND = 2  # every person has exactly two rows: none is dropped, so the truth is fixed
RUNS = 50
LEVEL = "0.95"

STATISTICS = [
    # epsilon 2: the discrete law's tail at its 95 % half-width holds 97 % (fewer false
    # failures; see test_fifty_runs_fall_within_the_published_intervals)
    {"kind": "count", "epsilon": "2", "hold": True, "label": "All rows"},
    {"kind": "histogram", "column": "region", "label": "Rows by region"},
    {"kind": "mean", "column": "income", "lower": "0", "upper": "100000", "n_guess": 10000,
     "label": "Mean income"},
    {"kind": "quantiles", "column": "income", "quantiles": ["0.25", "0.5", "0.75"],
     "step": "5000", "label": "Income quartiles"},
    {"kind": "stddev", "column": "age", "n_guess": 10000, "label": "Spread of age"},
]  # fmt: skip


def _two_rows_each(dataset) -> None:
    """Rewrite the dataset's person column so that each person has exactly BOUND rows."""
    path = Path(settings.MEDIA_ROOT) / dataset.parquet_file
    table = pq.read_table(path)
    people = pa.array([f"p{i // BOUND}" for i in range(table.num_rows)], type=pa.string())
    pq.write_table(table.set_column(0, "person", people), path)


@pytest.fixture
def published(project, owner, reviewer):
    project.epsilon_cap = Decimal("5")
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(project=project, owner=owner, rows=ROWS, id_column="person", bound=BOUND)
    _two_rows_each(dataset)
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=STATISTICS, epsilon="5"
    )
    lifecycle.release_approve(release=release, reviewer=reviewer, comment="fine")
    assert compute.release_compute(release_id=release.pk) == "computed"
    release = Release.objects.get(pk=release.pk)
    return lifecycle.release_publish(release=release, actor=owner)


def _program(release) -> dict:
    """The program's source executed as a module (its main guard not run)."""
    namespace: dict = {"__name__": "opendp_program"}
    exec(compile(opendp_program(release), program_filename(release), "exec"), namespace)  # noqa: S102
    return namespace


def _truth(release) -> dict[str, object]:
    """Independent true values on the release's file (every row kept: two per person)."""
    table = pq.read_table(Path(settings.MEDIA_ROOT) / release.dataset.parquet_file)
    region = table.column("region").to_pylist()
    cells = [sum(1 for r in region if r == c) for c in REGIONS]
    other = sum(1 for r in region if r is not None and r not in REGIONS)
    missing = sum(1 for r in region if r is None)
    income = np.array([v for v in table.column("income").to_pylist() if v is not None])
    return {
        "count": table.num_rows,
        "histogram": [*cells, other, missing],
        "mean": float(np.clip(income, 0, 100000).mean()),
    }


@pytest.mark.django_db
def test_the_program_compiles_and_states_its_release(published):
    source = opendp_program(published)
    tree = ast.parse(source)
    assert ast.get_docstring(tree).startswith(f"dpportal release {published.pk} as an OpenDP")
    assert "SPENDS PRIVACY" in source and "OUTSIDE THE PORTAL'S LEDGER" in source
    assert "fresh noise" in source
    namespace = _program(published)
    release = namespace["RELEASE"]
    assert release["id"] == published.pk
    assert release["id_column"] == "person" and release["contribution_bound"] == BOUND
    by_label = {s["label"]: s for s in release["statistics"]}
    spec = {s["label"]: s for s in published.spec["statistics"]}
    for label, stat in by_label.items():
        assert stat["epsilon"] == float(Decimal(spec[label]["epsilon"]))
    assert by_label["Rows by region"]["axes"][0]["cells"] == [*REGIONS, "Other", "Missing"]
    mean = by_label["Mean income"]
    assert (mean["lower"], mean["upper"], mean["sum_share"]) == (0.0, 100000.0, 0.5)
    quartiles = by_label["Income quartiles"]
    assert quartiles["quantiles"] == [0.25, 0.5, 0.75]
    assert quartiles["candidates"][:3] == [0.0, 5000.0, 10000.0]
    assert quartiles["epsilon_points"] == quartiles["epsilon"] / 2
    # the owner's label reaches the source only inside the literal (repr), never as code
    assert by_label["Spread of age"]["program"] == "missing"


@pytest.mark.django_db
def test_the_program_refuses_to_run_without_the_budget_confirmation(published, capsys):
    namespace = _program(published)
    path = str(Path(settings.MEDIA_ROOT) / published.dataset.parquet_file)
    assert namespace["main"]([path], namespace["RELEASE"]) == 2
    assert "spends its privacy budget" in capsys.readouterr().err


@pytest.mark.django_db
def test_a_kind_without_counterpart_says_so(published, capsys):
    namespace = _program(published)
    path = str(Path(settings.MEDIA_ROOT) / published.dataset.parquet_file)
    flag = "--i-understand-this-spends-privacy-budget"
    assert namespace["main"]([path, flag], namespace["RELEASE"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "not available in OpenDP: Spread of age (OpenDP's variance needs" in "\n".join(lines)
    assert any(line.startswith("Income quartiles: ") for line in lines)
    assert len(lines) == len(STATISTICS)


@pytest.mark.django_db
def test_fifty_runs_fall_within_the_published_intervals(published):
    """OpenDP's outputs over 50 runs lie within the published release's 95 % intervals.

    The published interval is centred on one fixed noisy draw; a fresh draw lies in it
    with a probability anywhere from about 50 % to 95 % depending on that draw, so the
    check uses the published interval's half-width around the true value (count and
    histogram; for the mean, its longer side), which is a fact of the public noise
    parameters alone. For the quartiles the published interval is where the true
    quartile lies, checked as it is.

    The outputs of the 50 runs, pooled (50 counts, 300 histogram cells, 50 means, 150
    quartiles), must fall within in >= 90 % of cases, and each statistic's in >= 80 %.
    The true coverage of each check (independent runs):
    - count: OpenDP's discrete Laplace of scale b = L / epsilon = 1 within the published
      half-width h = 3 holds with 1 - 2 e^-(h+1)/b / (1 + e^-1/b) = 97.3 %:
      P(>= 6 misses of 50) = 0.2 %;
    - histogram: its cells pooled (50 runs x 6 cells, independent draws), b = 8/3,
      h = 8, coverage 95.9 %: P(>= 31 misses of 300) = 2e-6;
    - mean: the published interval's longer side around the truth held OpenDP's ratio
      in about 95 % of 1 900 runs measured (epsilon 0.75 and 0.8 alike): P(>= 6 misses
      of 50) = 3.8 % at 95 %;
    - quartiles: at these parameters OpenDP chose the true grid point in every one of
      those runs, inside the published intervals: P ~ 0.
    So the pooled coverage is about 96.5 %: >= 55 misses of 550 has probability < 1e-8;
    a statistic below 80 % (>= 11 misses of 50 at 95 %) about 1e-4 (the mean's).
    """
    truth = _truth(published)
    public = {s["position"]: s for s in release_public_data(release=published)["statistics"]}
    namespace = _program(published)
    release = namespace["RELEASE"]
    frame = namespace["load"](Path(settings.MEDIA_ROOT) / published.dataset.parquet_file)
    runs = [namespace["release_once"](frame, release) for _ in range(RUNS)]
    positions = [s["position"] for s in release["statistics"]]

    def interval(index: int) -> dict:
        return public[positions[index]]["intervals"][LEVEL]["per_cell"]

    count_h = interval(0)["halfwidths"][0]
    assert (release["statistics"][0]["epsilon"], count_h) == (2.0, 3.0)  # the docstring's
    count_hits = [abs(run[0]["values"][0] - truth["count"]) <= count_h for run in runs]

    cell_h = interval(1)["halfwidths"]
    assert set(cell_h) == {8.0}
    cell_hits = [
        abs(value - true) <= h
        for run in runs
        for value, true, h in zip(run[1]["values"], truth["histogram"], cell_h, strict=True)
    ]

    mean = public[positions[2]]
    low, high = interval(2)["lower"][0], interval(2)["upper"][0]
    mean_h = max(high - mean["values"][0], mean["values"][0] - low)
    mean_hits = [abs(run[2]["values"][0] - truth["mean"]) <= mean_h for run in runs]

    lows, highs = interval(3)["lower"], interval(3)["upper"]
    quartile_hits = [lows[j] <= run[3]["values"][j] <= highs[j] for run in runs for j in range(3)]
    checks = {
        "count": count_hits, "histogram": cell_hits, "mean": mean_hits,
        "quartiles": quartile_hits,
    }  # fmt: skip
    pooled = [hit for hits in checks.values() for hit in hits]
    assert sum(pooled) >= 0.9 * len(pooled), {k: sum(v) / len(v) for k, v in checks.items()}
    for name, hits in checks.items():
        assert sum(hits) >= 0.8 * len(hits), (name, sum(hits), len(hits))

    assert all(run[4]["missing"] for run in runs)


@pytest.mark.django_db
def test_only_the_owner_downloads_it(client, published, owner, reviewer):
    url = reverse("releases:opendp", args=[published.pk])
    assert url == f"/releases/{published.pk}/opendp.py"
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/x-python")
    assert program_filename(published) in response["Content-Disposition"]
    assert response.content.decode().startswith("#!/usr/bin/env python3")
    detail = client.get(reverse("releases:detail", args=[published.pk])).content.decode()
    assert url in detail and "Download as an OpenDP program (Python)" in detail

    client.force_login(reviewer)  # a member, not an owner
    assert client.get(url).status_code == 404
    assert url not in client.get(reverse("releases:detail", args=[published.pk])).content.decode()
    stranger = UserFactory(username="sam-stranger")
    client.force_login(stranger)
    assert client.get(url).status_code == 404
    client.logout()
    anonymous = client.get(url)
    assert anonymous.status_code in (302, 404)
    assert "import opendp" not in anonymous.content.decode()


@pytest.mark.django_db
def test_no_program_before_results(client, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=200)
    release = submitted(project=project, owner=owner, dataset=dataset,
                        statistics=[{"kind": "count"}], epsilon="0.5")  # fmt: skip
    client.force_login(owner)
    assert client.get(reverse("releases:opendp", args=[release.pk])).status_code == 404
    other_owner = UserFactory(username="oscar-other")
    MembershipFactory(project=project, user=other_owner, role="owner")
    client.force_login(other_owner)
    assert client.get(reverse("releases:opendp", args=[release.pk])).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_every_kind_is_mapped_or_named_as_missing(project, owner, mechanism, capsys):
    """Every kind of the registry (one each, tests.kinds_support) in one submitted release:
    the program runs once on its file and prints one line per statistic: values for the
    kinds OpenDP reproduces, "not available in OpenDP" with the reason for the others."""
    raise_caps(project)
    dataset = make_dataset(project=project, owner=owner, rows=600, id_column="person",
                           bound=3, people=300)  # fmt: skip
    statistics = [
        {**statistic_for(SURVEY_STATISTICS, kind), "label": f"The {kind}"}
        for kind in kinds_under(mechanism)
    ]
    extra = {"mechanism": mechanism, "delta": DELTA} if mechanism == "gaussian" else {}
    release = submitted(project=project, owner=owner, dataset=dataset,
                        statistics=statistics, epsilon="8", **extra)  # fmt: skip
    namespace = _program(release)
    path = str(Path(settings.MEDIA_ROOT) / dataset.parquet_file)
    flag = "--i-understand-this-spends-privacy-budget"
    assert namespace["main"]([path, flag], namespace["RELEASE"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(statistics)
    for line, stat in zip(lines, namespace["RELEASE"]["statistics"], strict=True):
        kind = kinds.get(stat["kind"])
        if stat["program"] == "missing":
            assert line == f"not available in OpenDP: {stat['label']} ({kind.opendp_missing})"
        else:
            assert line.startswith(f"{stat['label']}: "), line
            if kind.pure:
                assert stat["mechanism"] == "laplace" and stat["delta"] == 0.0
            else:
                assert stat["mechanism"] == mechanism
    mapped = {s["kind"] for s in namespace["RELEASE"]["statistics"] if s["program"] != "missing"}
    assert mapped == {"count", "histogram", "sum", "mean", "argmax", "quantiles"}


@pytest.mark.django_db
def test_the_program_runs_as_a_script_on_a_csv_copy(published, tmp_path):
    """The owner's way: the downloaded file run by Python on a CSV copy of the data."""
    table = pq.read_table(Path(settings.MEDIA_ROOT) / published.dataset.parquet_file)
    data = tmp_path / "survey.csv"
    pa_csv.write_csv(table, data)
    script = tmp_path / program_filename(published)
    script.write_text(opendp_program(published), encoding="utf-8")
    refused = subprocess.run([sys.executable, str(script), str(data)], capture_output=True,
                             text=True, timeout=120, check=False)  # fmt: skip
    assert refused.returncode == 2 and "WARNING" in refused.stderr and not refused.stdout
    done = subprocess.run(
        [sys.executable, str(script), str(data), "--i-understand-this-spends-privacy-budget"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        "All rows", "Rows by region", "Mean income", "Income quartiles",
        "not available in OpenDP",
    ]  # fmt: skip
    truth = _truth(published)
    assert abs(float(lines[0].split(": ")[1]) - truth["count"]) < 50  # b = 1: |noise| < 50
    assert len(lines[1].split(": ")[1].split(", ")) == 6
