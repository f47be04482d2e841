"""The verification script anyone downloads recomputes every published interval and the total.

The script (releases/verify/dpportal_verify.py) is imported here as a standalone module,
the way a reader runs it, never through dpportal: the fast tests show that it passes an
untouched release and that it CAN fail (a tampered half-width, sigma or epsilon in the
record, a tampered mechanism record in the registry); the slow test runs it in a clean
virtual environment holding only numpy, scipy and dp-accounting at the product's pins,
on the demo's published release and on releases holding every statistic kind. The
pages that serve it are tested last.

The records are the product's own (releases.public.record.release_record, what
record.json serves).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse

from budgets.selectors.registry import project_registry
from releases import compute, lifecycle
from releases.models import Release
from releases.public.record import release_record
from tests.kinds_support import SURVEY_STATISTICS, kinds_under
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "releases" / "verify" / "dpportal_verify.py"
SCRIPT_LIBRARIES = ("numpy", "scipy", "dp-accounting")


def load_script():
    """The script as a module of its own (not through the releases package)."""
    spec = importlib.util.spec_from_file_location("dpportal_verify_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


verify_script = load_script()


def published_release(*, project, owner, reviewer, statistics, mechanism, epsilon, bound=2):
    """A release of `statistics`, approved, computed (noise drawn once) and published."""
    project.epsilon_cap = Decimal(50)
    project.save(update_fields=["epsilon_cap"])
    dataset = make_dataset(
        project=project, owner=owner, rows=3000, people=1200, id_column="person", bound=bound
    )
    extra = {"mechanism": mechanism}
    if mechanism == "gaussian":
        extra["delta"] = "0.00001"
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon=epsilon,
        statistics=[dict(s) for s in statistics], **extra,
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    release.refresh_from_db()
    cache.clear()
    return release


def documents_of(release: Release) -> tuple[dict, dict]:
    """(the release's record, its project's registry), as JSON round-trips them."""
    record = release_record(release)
    registry = project_registry(project=release.project)
    return json.loads(json.dumps(record)), json.loads(json.dumps(registry))


# --- fast: the script as a module ---------------------------------------------------------

#: a small Gaussian release: symmetric intervals, a mean's pivot and a cross-tabulation
SMALL = [
    {"kind": "count"},
    {"kind": "histogram", "column": "region"},
    {"kind": "mean", "column": "age", "n_guess": 3000},
    {"kind": "crosstab", "columns": ["region", "age"], "way": 1},
]
_SMALL_DOCUMENTS: dict[str, tuple[dict, dict]] = {}


@pytest.fixture
def small(project, owner, reviewer):
    """The small release's documents, built once for the module (pure JSON afterwards)."""
    if "small" not in _SMALL_DOCUMENTS:
        release = published_release(
            project=project, owner=owner, reviewer=reviewer, statistics=SMALL,
            mechanism="gaussian", epsilon="2",
        )  # fmt: skip
        _SMALL_DOCUMENTS["small"] = documents_of(release)
    record, registry = _SMALL_DOCUMENTS["small"]
    return copy.deepcopy(record), copy.deepcopy(registry)


def resealed(record: dict) -> dict:
    """The record with its record_sha256 recomputed: a forger's consistent document, so that
    only the recomputation of its numbers can catch the change."""
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    record["record_sha256"] = hashlib.sha256(verify_script.canonical(body)).hexdigest()
    return record


def run(record, registry=None):
    report = verify_script.verify(record, registry, quiet=True)
    return report, (1 if report.mismatches else 0)


def statistic(record, kind):
    return next(s for s in record["statistics"] if s["kind"] == kind)


def test_the_script_knows_every_registered_kind():
    """A kind added to the registry without its intervals in the script fails here by name
    (the script itself would say "not checked" for it, never pass it)."""
    from releases.kinds import REGISTRY

    assert sorted(verify_script.KINDS) == sorted(REGISTRY)


def test_an_untouched_release_and_registry_pass(small, capsys):
    record, registry = small
    report, status = run(record, registry)
    assert status == 0 and report.mismatches == []
    assert report.ok > 100
    assert report.unchecked == []


def test_a_tampered_halfwidth_is_a_mismatch(small):
    record, _ = small
    count = statistic(record, "count")
    per_cell = count["intervals"]["0.95"]["per_cell"]
    per_cell["halfwidths"][0] += 1.0
    report, status = run(record)
    assert status == 1
    assert report.mismatches == [
        "record_sha256 (canonical JSON without it)",
        "statistic 0 (count: Rows) 0.95 per_cell halfwidths[0]",
    ]
    report, status = run(resealed(record))
    assert status == 1
    assert report.mismatches == ["statistic 0 (count: Rows) 0.95 per_cell halfwidths[0]"]


def test_a_tampered_interval_end_of_a_mean_is_a_mismatch(small):
    record, _ = small
    mean = statistic(record, "mean")
    mean["intervals"]["0.9"]["simultaneous"]["upper"][0] *= 1 + 1e-6
    report, status = run(resealed(record))
    assert status == 1 and len(report.mismatches) == 1
    assert "0.9 simultaneous upper[0]" in report.mismatches[0]


def test_a_tampered_sigma_is_a_mismatch(small):
    """A smaller sigma in the explanation than the noise the intervals were built from: every
    half-width it implies disagrees with the published ones, and so does the stated noise."""
    record, _ = small
    histogram = statistic(record, "histogram")
    histogram["explanation"]["sigma"] = str(Decimal(histogram["explanation"]["sigma"]) / 2)
    report, status = run(resealed(record))
    assert status == 1
    assert any("histogram" in m and "halfwidths" in m for m in report.mismatches)
    assert any("noise parameter" in m for m in report.mismatches)
    assert not any("count: Rows" in m for m in report.mismatches)


def test_a_tampered_epsilon_is_a_mismatch(small):
    record, _ = small
    statistic(record, "count")["epsilon"] = "0.9"
    report, status = run(resealed(record))
    assert status == 1
    assert "statistic 0 (count: Rows) epsilon" in report.mismatches
    assert "release epsilon = sum of its statistics' epsilons" in report.mismatches


def test_a_tampered_registry_record_changes_the_total(small):
    record, registry = small
    mechanisms = registry["releases"][0]["mechanisms"]
    gaussian = next(m for m in mechanisms if m["kind"] == "discrete_gaussian")
    gaussian["sigma"] = str(Decimal(gaussian["sigma"]) / 4)  # far less noise: a larger loss
    report, status = run(None, registry)
    assert status == 1
    assert any(m.startswith("PLD epsilon at the cap's delta") for m in report.mismatches)
    # the release's own record still lists the published mechanisms: they now disagree
    report, _ = run(record, registry)
    assert any("the record's mechanisms = the registry's" in m for m in report.mismatches)


def test_the_command_line_exits_non_zero_on_a_mismatch(small, tmp_path, capsys):
    record, registry = small
    statistic(record, "count")["intervals"]["0.99"]["simultaneous"]["lower"][0] -= 1
    (tmp_path / "record.json").write_text(json.dumps(record))
    (tmp_path / "registry.json").write_text(json.dumps(registry))
    status = verify_script.main(
        [str(tmp_path / "record.json"), "--registry", str(tmp_path / "registry.json"), "--quiet"]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert "MISMATCH  statistic 0 (count: Rows) 0.99 simultaneous lower[0]" in out
    assert "Some published numbers do NOT match" in out
    assert verify_script.main([str(tmp_path / "missing.json")]) == 2


def test_an_unknown_kind_is_not_checked_never_passed(small):
    record, _ = small
    record["statistics"].append({**statistic(record, "count"), "kind": "new_kind", "position": 9})
    report, _ = run(record)
    assert any(u.startswith("statistic 9 (new_kind") for u in report.unchecked)


# --- slow: a clean virtual environment, the demo and every kind ---------------------------


def pins() -> list[str]:
    """numpy, scipy and dp-accounting as requirements.txt pins them."""
    text = (ROOT / "requirements.txt").read_text()
    found = []
    for name in SCRIPT_LIBRARIES:
        match = re.search(rf"^{re.escape(name)}==(\S+)$", text, re.MULTILINE)
        assert match, f"{name} is not pinned in requirements.txt"
        found.append(f"{name}=={match.group(1)}")
    return found


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory) -> Path:
    """A fresh virtual environment holding only the script's three libraries (and theirs)."""
    where = tmp_path_factory.mktemp("verify-venv")
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    python = where / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins()],
        check=True,
        timeout=1200,
    )
    return python


def halfwidth_count(record: dict) -> int:
    return sum(
        len(iv["halfwidths"])
        for stat in record["statistics"]
        for level in stat["intervals"].values()
        for iv in level.values()
    )


def run_clean(python: Path, tmp_path: Path, record: dict, registry: dict, name: str):
    paths = tmp_path / f"{name}-record.json", tmp_path / f"{name}-registry.json"
    paths[0].write_text(json.dumps(record))
    paths[1].write_text(json.dumps(registry))
    done = subprocess.run(
        [str(python), str(SCRIPT), str(paths[0]), "--registry", str(paths[1])],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=tmp_path,  # nothing of the project on the path
    )
    return done


def assert_reproduced(done, record: dict) -> None:
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert not re.search(r"^  MISMATCH", done.stdout, re.MULTILINE)
    assert ", 0 MISMATCH," in done.stdout
    reproduced = re.findall(r"^  OK        .* halfwidths\[\d+\]:", done.stdout, re.MULTILINE)
    assert len(reproduced) == halfwidth_count(record)
    assert "OK        spend.spent_epsilon (the stated spend)" in done.stdout
    assert "OK        PLD epsilon at the cap's delta" in done.stdout


@pytest.mark.slow
def test_a_clean_environment_reproduces_the_demo_and_every_kind(
    clean_python, tmp_path, project, owner, reviewer
):
    # the script imports nothing but the three libraries
    probe = subprocess.run(
        [str(clean_python), "-c", "import django"], capture_output=True, cwd=tmp_path
    )
    assert probe.returncode != 0

    call_command("seed_demo", stdout=StringIO())
    from releases.demo import PUBLISHED_TITLE

    demo = Release.objects.get(title=PUBLISHED_TITLE)
    cache.clear()
    record, registry = documents_of(demo)
    assert_reproduced(run_clean(clean_python, tmp_path, record, registry, "demo"), record)

    for mechanism in ("laplace", "gaussian"):
        release = published_release(
            project=project, owner=owner, reviewer=reviewer, mechanism=mechanism, epsilon="8",
            statistics=[SURVEY_STATISTICS[k] for k in kinds_under(mechanism)],
        )  # fmt: skip
        record, registry = documents_of(release)
        assert {s["kind"] for s in record["statistics"]} == set(kinds_under(mechanism))
        done = run_clean(clean_python, tmp_path, record, registry, mechanism)
        assert_reproduced(done, record)


# --- the pages ----------------------------------------------------------------------------


def test_the_script_is_served_as_a_python_download(client):
    response = client.get(reverse("public:verify-script"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/x-python")
    assert 'filename="dpportal_verify.py"' in response["Content-Disposition"]
    assert response.content == SCRIPT.read_bytes()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_guide_names_the_pinned_libraries_and_the_command(client, language):
    response = client.get(reverse("public:verify"), HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    page = response.content.decode()
    assert "pip install " + " ".join(pins()) in page
    assert "python dpportal_verify.py record.json --registry registry.json" in page
    assert reverse("public:verify-script") in page


def test_a_release_page_links_the_script(client, project, owner, reviewer):
    release = published_release(
        project=project, owner=owner, reviewer=reviewer, statistics=[{"kind": "count"}],
        mechanism="laplace", epsilon="1",
    )  # fmt: skip
    page = client.get(reverse("public:release", args=[project.slug, release.pk])).content.decode()
    assert reverse("public:verify-script") in page
    assert "Check this release yourself (Python script)" in page
    assert reverse("public:verify") in page
