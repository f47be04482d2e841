"""Downloads of published releases (JSON, CSV) and the caching of public pages."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from dpportal.privacy import accuracy
from releases.models import ReleaseResult
from releases.public.downloads import csv_cell
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def url(release, name, query=""):
    return reverse(name, args=[release.project.slug, release.pk]) + query


def test_json_download_has_values_intervals_and_the_privacy_record(client, published):
    response = client.get(url(published, "public:release-json", "?confidence=0.9"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    record = json.loads(response.content)
    assert record["confidence"] == "0.9"
    meta = record["release"]
    assert meta["id"] == published.pk
    assert meta["mechanism"] == "laplace"
    assert meta["epsilon"] == "0.3" and meta["delta"] == "0"
    assert meta["privacy_unit"].startswith("One respondent of the survey.")
    assert meta["approval"]["by"] == "a reviewer of the project"
    assert meta["approval"]["decided_at"]
    assert "before any rounding or clamping" in record["interval_note"]
    payload = published.result.payload["statistics"]
    hist = record["statistics"][1]
    h = accuracy.result_halfwidth(payload[1]["explanation"], confidence="0.9")
    big_h = accuracy.result_halfwidth(
        payload[1]["explanation"], confidence="0.9", simultaneous=True
    )
    assert [c["cell"] for c in hist["cells"]] == ["North", "South", "East", "West"]
    for cell, value in zip(hist["cells"], payload[1]["values"], strict=True):
        assert cell["value"] == value
        assert cell["halfwidth"] == h and cell["lower"] == value - h and cell["upper"] == value + h
        assert cell["simultaneous_halfwidth"] == big_h
    assert hist["noise"]["name"] == "discrete Laplace distribution"
    assert hist["noise"]["value"] == 20.0
    assert hist["epsilon"] == "0.05"
    heat = record["statistics"][2]
    assert heat["shape"] == [2, 3]
    assert (heat["cells"][4]["row"], heat["cells"][4]["column"]) == ("male", "35-64")
    mean = record["statistics"][4]
    _, low, high = accuracy.mean_interval(payload[4]["explanation"], confidence="0.9")
    assert (mean["cells"][0]["lower"], mean["cells"][0]["upper"]) == (low, high)
    top = record["statistics"][5]
    assert top["cells"] == [] and top["argmax"] == payload[5]["argmax"]


def test_json_download_confidence_changes_only_the_intervals(client, published):
    a = json.loads(client.get(url(published, "public:release-json", "?confidence=0.9")).content)
    b = json.loads(client.get(url(published, "public:release-json", "?confidence=0.99")).content)
    cells_a, cells_b = a["statistics"][1]["cells"], b["statistics"][1]["cells"]
    assert [c["value"] for c in cells_a] == [c["value"] for c in cells_b]
    assert cells_b[0]["halfwidth"] > cells_a[0]["halfwidth"]


def test_default_confidence_is_95_percent(client, published):
    record = json.loads(client.get(url(published, "public:release-json")).content)
    assert record["confidence"] == "0.95"


@pytest.mark.parametrize("name", ["public:release-json", "public:release-csv"])
@pytest.mark.parametrize("bad", ["0.5", "1", "ninety", "0.95;drop"])
def test_download_with_bad_confidence_is_a_clear_400(client, published, name, bad):
    response = client.get(url(published, name), {"confidence": bad})
    assert response.status_code == 400
    body = json.loads(response.content)
    assert "confidence must be one of 0.9, 0.95 or 0.99" in body["error"]["message"]


def test_csv_download_one_row_per_value(client, published):
    response = client.get(url(published, "public:release-csv", "?confidence=0.99"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.getvalue().decode())))
    # 1 count + 4 regions + 6 cells + sum + mean + argmax
    assert len(rows) == 1 + 4 + 6 + 1 + 1 + 1
    payload = published.result.payload["statistics"]
    north = rows[1]
    h = accuracy.result_halfwidth(payload[1]["explanation"], confidence="0.99")
    assert north["cell"] == "North"
    assert float(north["value"]) == payload[1]["values"][0]
    assert float(north["halfwidth"]) == h
    assert north["confidence"] == "0.99"
    assert north["mechanism"] == "laplace"
    assert north["noise_parameter"] == "scale b = 20"
    assert north["epsilon"] == "0.05" and north["delta"] == "0"
    assert north["approved_by"] == "a reviewer of the project"
    assert north["privacy_unit"].startswith("One respondent")
    assert rows[-1]["kind"] == "argmax"
    assert rows[-1]["value"] == payload[5]["argmax"]["label"]


def test_csv_escapes_formula_injection(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    payload["statistics"][1]["cells"] = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)"]
    payload["statistics"][1]["label"] = "=cmd|' /C calc'!A0"
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    response = client.get(url(release, "public:release-csv"))
    rows = list(csv.DictReader(io.StringIO(response.getvalue().decode())))
    cells = [row["cell"] for row in rows[1:5]]
    assert cells == ['\'=HYPERLINK("http://x")', "'+1+1", "'-2+3", "'@SUM(A1)"]
    assert rows[1]["statistic_label"] == "'=cmd|' /C calc'!A0"
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@")), value


@pytest.mark.parametrize(
    "raw, escaped",
    [
        ("=1+1", "'=1+1"),
        ("+41", "'+41"),
        ("-12", "-12"),  # negative numbers (noisy values can be) stay numbers
        ("-3.5", "-3.5"),
        (-3.5, "-3.5"),
        ("-1e-05", "-1e-05"),
        ("-", "'-"),
        ("-A1", "'-A1"),
        ("@x", "'@x"),
        ("\t=1", "'\t=1"),
        ("North", "North"),
        (None, ""),
    ],
)
def test_csv_cell(raw, escaped):
    assert csv_cell(raw) == escaped


def test_public_responses_carry_etag_and_cache_control(client, published):
    for name in ("public:release", "public:release-json", "public:release-csv"):
        response = client.get(url(published, name))
        assert response.status_code == 200
        assert response["Cache-Control"] == "public, max-age=300"
        etag = response["ETag"]
        assert etag.startswith('"') and len(etag) > 10
        again = client.get(url(published, name), HTTP_IF_NONE_MATCH=etag)
        assert again.status_code == 304
        assert again.content == b""
        assert again["ETag"] == etag
        assert client.get(url(published, name), HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_etag_differs_per_query_and_per_publication(client, published):
    page = client.get(url(published, "public:release"))["ETag"]
    page99 = client.get(url(published, "public:release", "?confidence=0.99"))["ETag"]
    json95 = client.get(url(published, "public:release-json"))["ETag"]
    assert len({page, page99, json95}) == 3
    type(published).objects.filter(pk=published.pk).update(published_at=timezone.now())
    cache.clear()  # the lookup of a published release is cached for a minute
    assert client.get(url(published, "public:release"))["ETag"] != page


def test_pages_and_downloads_are_served_from_the_cache(client, published):
    first_page = client.get(url(published, "public:release")).content
    first_json = client.get(url(published, "public:release-json")).content
    # Results never change; if they did in the database, the cache would still answer
    # with what was published -- which proves the answer came from the cache.
    result = ReleaseResult.objects.get(release=published)
    payload = result.payload
    payload["statistics"][1]["values"] = [1, 2, 3, 4]
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    assert client.get(url(published, "public:release")).content == first_page
    assert client.get(url(published, "public:release-json")).content == first_json
    cache.clear()
    fresh = json.loads(client.get(url(published, "public:release-json")).content)
    assert [c["value"] for c in fresh["statistics"][1]["cells"]] == [1, 2, 3, 4]


def test_cache_key_is_ignored_for_unknown_query_parameters(client, published):
    a = client.get(url(published, "public:release", "?utm_source=x"))
    b = client.get(url(published, "public:release"))
    assert a["ETag"] == b["ETag"]
