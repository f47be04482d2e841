"""Every surface states the same facts of every statistic kind.

One release holding a statistic of every registered kind is computed and
published (Laplace, then Gaussian). Its kind (releases.kinds) is the one source of
each statistic's mechanism, noise parts (parameter and unit) and intervals; the
review document, the owner's results (page and API), the public data with its
data.json, data.csv and public API, the registry and the public page must all state
the same ones. A kind added to the registry without a case in STATISTICS fails here.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from fractions import Fraction

import pytest
from django.core.cache import cache
from django.urls import reverse

from dpportal.privacy.joint_quantiles import joint_levels
from dpportal.privacy.partition_selection import KeySelection
from releases import compute, kinds, lifecycle
from releases.presentation import results_for_display
from releases.public.data import release_public_data
from releases.results_text import mechanism_name
from releases.review.selectors import review_document_get
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.django_db

#: one statistic per registered kind, on tests.releases_support.make_dataset's survey file
STATISTICS = {
    "count": {"kind": "count"},
    "histogram": {"kind": "histogram", "column": "region"},
    "argmax": {"kind": "argmax", "column": "region"},
    "sum": {"kind": "sum", "column": "income"},
    "mean": {"kind": "mean", "column": "age", "n_guess": 3000},
    "grouped_sum": {"kind": "grouped_sum", "column": "income", "group_by": "region"},
    "grouped_mean": {
        "kind": "grouped_mean", "column": "age", "group_by": "region", "n_guess": 500,
    },
    "quantiles": {"kind": "quantiles", "column": "age", "quantiles": "0.25, 0.5", "step": "5"},
    "stddev": {"kind": "stddev", "column": "age", "n_guess": 3000},
    "variance": {"kind": "variance", "column": "age", "group_by": "region", "n_guess": 500},
    "crosstab": {"kind": "crosstab", "columns": ["region", "age"], "way": 2, "total": True},
    "bounds": {"kind": "bounds", "column": "income", "epsilon": "0.5"},
    "keys": {"kind": "keys", "column": "region"},
    "rows_per_person": {"kind": "rows_per_person", "cap": "50"},
}  # fmt: skip


def _drawn_under(mechanism: str) -> list[str]:
    """The registry's kinds a release of `mechanism` can hold (a cross-tabulation is
    Gaussian only)."""
    return [name for name in kinds.REGISTRY if not kinds.get(name).mechanism_problem(mechanism)]


CONFIDENCE = "0.95"


def test_every_registered_kind_has_a_case_and_a_stored_code():
    from releases.models import Statistic

    assert sorted(kinds.REGISTRY) == sorted(Statistic.Kind.values)
    assert sorted(STATISTICS) == sorted(kinds.REGISTRY)


@pytest.fixture(params=["laplace", "gaussian"])
def published(request, project, owner, reviewer):
    project.epsilon_cap = Decimal(10)
    project.save(update_fields=["epsilon_cap"])
    # a person column: rows per person needs one
    dataset = make_dataset(project=project, owner=owner, rows=3000, people=1200, id_column="person")
    extra = {"mechanism": request.param}
    if request.param == "gaussian":
        extra["delta"] = "0.00001"
    release = submitted(
        project=project, owner=owner, dataset=dataset, epsilon="5",
        statistics=[dict(STATISTICS[name]) for name in _drawn_under(request.param)], **extra,
    )  # fmt: skip
    lifecycle.release_approve(release=release, reviewer=reviewer)
    assert compute.release_compute(release_id=release.pk) == "computed"
    release.refresh_from_db()
    lifecycle.release_publish(release=release, actor=owner)
    release.refresh_from_db()
    cache.clear()
    return release


def _facts(entry, release_mechanism):
    """What the kind states: mechanism code, noise parts, intervals at CONFIDENCE."""
    kind = kinds.get(entry["kind"])
    return (
        kind.result_mechanism(entry, release_mechanism),
        kind.noise_parts(entry["explanation"]),
        kind.intervals(entry, confidence=CONFIDENCE),
    )


def _close(a, b):
    return a == pytest.approx(float(b), rel=1e-9, abs=1e-12)


def test_every_surface_states_the_same_mechanism_noise_and_halfwidths(client, published, owner):
    release = published
    payload = release.result.payload
    entries = sorted(payload["statistics"], key=lambda e: int(e["position"]))
    assert [e["kind"] for e in entries] == _drawn_under(release.mechanism)
    facts = [_facts(e, payload["mechanism"]) for e in entries]

    # the review document: planned before any data, the same parts and units as stated
    review = review_document_get(budget_request=release.budget_request)
    for stat, (mechanism, parts, cells) in zip(review.statistics, facts, strict=True):
        assert stat.mechanism == mechanism, stat.kind
        assert [n.scale for n in stat.noise] == [p.value for p in parts], stat.kind
        assert [n.granularity for n in stat.noise] == [p.factor for p in parts], stat.kind
        symmetric = [c.halfwidth for c in cells if c.halfwidth is not None]
        if symmetric and kinds.get(stat.kind).pure is False and stat.kind not in ("mean",):
            # noise-only half-widths do not depend on the data: planned == published (the
            # widest, where a cross-tabulation's tables differ)
            assert _close(stat.halfwidth, max(symmetric)), stat.kind
        ranks = [c.rank_error for c in cells if c.rank_error is not None]
        if ranks:
            assert _close(stat.halfwidth, max(ranks)), stat.kind

    # the owner's results page
    owner_rows = results_for_display(payload)
    for item, (mechanism, parts, cells) in zip(owner_rows, facts, strict=True):
        assert item["mechanism"] == mechanism_name(mechanism), item["kind"]
        assert [p.value for p in item["noise"]] == [p.value for p in parts], item["kind"]
        assert [r["halfwidth"] for r in item["rows"]] == [
            c.halfwidth if c.halfwidth is not None or c.low is None
            else max(c.high - c.value, c.value - c.low)
            for c in cells
        ], item["kind"]  # fmt: skip

    # the public data, and what every public download and API serves from it
    data = release_public_data(release=release)
    client.force_login(owner)
    slug = release.project.slug
    json_download = json.loads(
        client.get(reverse("public:release-json", args=[slug, release.pk])).content
    )
    api_public = client.get(
        reverse("api:public-release", kwargs={"slug": slug, "release_id": release.pk})
    ).json()
    api_member = client.get(
        reverse("api:releases-results", kwargs={"release_id": release.pk})
    ).json()
    csv_rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(reverse("public:release-csv", args=[slug, release.pk]))
                .getvalue()
                .decode()
            )
        )
    )
    for i, (mechanism, parts, cells) in enumerate(facts):
        stat = data["statistics"][i]
        kind = stat["kind"]
        assert stat["mechanism"] == mechanism, kind
        for served in (json_download, api_public, api_member):
            assert served["statistics"][i]["mechanism"] == mechanism, kind
            assert served["statistics"][i]["noise"] == json.loads(json.dumps(stat["noise"]))
        noise = stat["noise"]
        if not parts:
            assert noise["parameter"] is None, kind
        elif len(parts) == 1 and not parts[0].part:
            assert _close(noise["value"], parts[0].value) and noise["unit"] == parts[0].unit
        else:
            for part in parts:
                assert _close(noise[part.part]["value"], part.value), (kind, part.part)
                assert noise[part.part]["unit"] == part.unit, (kind, part.part)
        per_cell = stat["intervals"][CONFIDENCE]["per_cell"]
        assert per_cell["halfwidths"] == [c.halfwidth for c in cells], kind
        assert per_cell["lower"] == [c.low for c in cells], kind
        downloaded = json_download["statistics"][i]["cells"]
        assert [c["halfwidth"] for c in downloaded] == [c.halfwidth for c in cells], kind
        rows = [r for r in csv_rows if r["kind"] == kind]
        assert {r["mechanism"] for r in rows} <= {mechanism}, kind
        assert {r["noise_parameter"] for r in rows} <= {noise.get("parameter_text")}, kind

    # the registry lists every mechanism of the release with the parameters stated above
    registry = client.get(reverse("registry:project_json", kwargs={"slug": slug})).json()
    (listed,) = [r for r in registry["releases"] if r["id"] == release.pk]
    parameters = {
        Fraction(str(m.get("scale") or m.get("sigma")))
        for m in listed["mechanisms"]
        if m.get("scale") or m.get("sigma")
    }
    selections = [m for m in listed["mechanisms"] if m["kind"] == "permute_and_flip"]
    noisy_max = {
        Fraction(m["epsilon"]) for m in listed["mechanisms"] if m["kind"] == "report_noisy_max"
    }
    for entry, (mechanism, parts, _) in zip(entries, facts, strict=True):
        if entry["kind"] == "argmax":  # recorded by its epsilon (L / b)
            assert Fraction(entry["epsilon"]) in noisy_max
            continue
        if entry["kind"] == "crosstab":  # one zCDP Gaussian; its parts are the tables' cells
            assert Fraction(entry["explanation"]["plan"]["sigma"]) in parameters
            continue
        if entry["kind"] == "keys":  # recorded as the selection states its records
            selection = KeySelection.from_dict(entry["explanation"])
            listed_kinds = {(m["kind"], Fraction(m["epsilon"])) for m in listed["mechanisms"]}
            for record in selection.records():
                assert (record.kind, record.epsilon) in listed_kinds
            continue
        for part in parts:  # stated in its unit: the registry's is in noise units
            assert part.value / part.factor in parameters, (entry["kind"], part.part)
        if mechanism == "permute_and_flip":  # the joint draw's levels, then 2 ends each
            k = len(entry["quantiles"])
            eps, levels = Fraction(entry["epsilon"]), joint_levels(k)
            assert sum(m["count"] for m in selections) == levels + 2 * k
            assert {Fraction(m["epsilon"]) for m in selections} == {
                eps / 2 / levels,
                eps / 2 / (2 * k),
            }
    registry_page = client.get(reverse("registry:project", kwargs={"slug": slug}))
    assert registry_page.status_code == 200

    # the public page names each statistic's own mechanism: a selection is not "Gaussian"
    page = client.get(reverse("public:release", args=[slug, release.pk])).content.decode()
    quantiles = next(s for s in data["statistics"] if s["kind"] == "quantiles")
    assert quantiles["mechanism"] == "permute_and_flip"
    assert quantiles["mechanism_label"].startswith("Exact permute-and-flip")
    assert page.count("permute-and-flip") >= 1


def test_a_spread_count_part_is_stated_in_rows(published):
    """The standard deviation's count part is a number of rows, whatever grid its sum uses."""
    payload = published.result.payload
    entry = next(e for e in payload["statistics"] if e["kind"] == "stddev")
    parts = {p.part: p for p in kinds.get("stddev").noise_parts(entry["explanation"])}
    assert parts["count"].unit == "rows" and parts["count"].factor == 1
    count = entry["explanation"]["count"]
    raw = Fraction(str(count.get("sigma", count.get("scale"))))
    assert parts["count"].value == raw
    assert parts["sum"].factor == Fraction(entry["explanation"]["granularity"]) / 2
