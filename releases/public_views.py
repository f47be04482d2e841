"""Anonymous pages: published projects, dashboards, release pages and their downloads.

Nothing unpublished is reachable from here: every lookup goes through
`releases.public_selectors`, which only returns published releases (404 otherwise).
Published results are immutable, so pages and downloads are cached (Django's
cache: Redis in production) under a key naming the release and its publication
time, and answered with an ETag and `Cache-Control: public`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.http import parse_etags
from django.views import View

from budgets import selectors as budget_selectors
from dpportal.errors import ValidationFailed
from releases import public_selectors as public
from releases.models import Release
from releases.public import data as public_data
from releases.public import downloads
from releases.public import options as public_options

logger = logging.getLogger(__name__)

CACHE_SECONDS = 24 * 3600
LOOKUP_SECONDS = 60
MAX_AGE = 300


def registry_url(*, slug: str) -> str:
    """The project's public epsilon registry page (built by the budgets app)."""
    for name in ("registry:detail", "registry:project", "budgets:registry"):
        try:
            return reverse(name, kwargs={"slug": slug})
        except NoReverseMatch:
            continue
    return f"/registry/{slug}/"


def _bad_request(request: HttpRequest, error: ValidationFailed, *, as_json: bool) -> HttpResponse:
    if as_json:
        body = {"error": {"code": error.code, "message": error.message}}
        return HttpResponse(json.dumps(body), status=400, content_type="application/json")
    return render(request, "public/bad_request.html", {"message": error.message}, status=400)


def _etag(version: str, variant: str) -> str:
    return '"' + hashlib.sha256(f"{version}|{variant}".encode()).hexdigest()[:32] + '"'


def _not_modified(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match")
    if not header:
        return False
    tags = parse_etags(header)
    return "*" in tags or etag in tags or etag.strip('"') in tags


def _public_headers(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    return response


def _lookup_key(*, slug: str, release_id: int) -> str:
    """A short cache key whatever the URL's slug (memcached refuses keys over 250 bytes)."""
    return f"public:lookup:{release_id}:" + hashlib.sha256(slug.encode()).hexdigest()[:32]


def _published_version(*, slug: str, release_id: int) -> str:
    """The version key of a published release, looked up in the cache for a minute.

    Publication is final (the lifecycle has no move out of "published") and the
    key includes the publication time, so a cached lookup can only be as stale as
    a release that was never unpublished. Anything not published is looked up in
    the database every time (NotFound), so a new publication shows at once.
    """
    key = _lookup_key(slug=slug, release_id=release_id)
    version = cache.get(key)
    if version is None:
        release = public.release_get_published(slug=slug, release_id=release_id)
        version = public.release_version_key(release=release)
        cache.set(key, version, LOOKUP_SECONDS)
    return version


def _cached(
    request: HttpRequest,
    *,
    slug: str,
    release_id: int,
    variant: str,
    build: Callable[[Release], tuple[str, str, dict[str, str]]],
) -> HttpResponse:
    """Answer from the cache (or build once): 304 on a matching If-None-Match."""
    version = _published_version(slug=slug, release_id=release_id)
    etag = _etag(version, variant)
    if _not_modified(request, etag):
        return _public_headers(HttpResponse(status=304), etag)
    key = "public:" + hashlib.sha256(f"{version}|{variant}".encode()).hexdigest()
    entry = cache.get(key)
    if entry is None:
        release = public.release_get_published(slug=slug, release_id=release_id)
        fresh = public.release_version_key(release=release)
        if fresh != version:  # published again since the lookup was cached
            cache.delete(_lookup_key(slug=slug, release_id=release_id))
            version, etag = fresh, _etag(fresh, variant)
            key = "public:" + hashlib.sha256(f"{version}|{variant}".encode()).hexdigest()
        entry = build(release)
        cache.set(key, entry, CACHE_SECONDS)
    body, content_type, headers = entry
    response = HttpResponse(body, content_type=content_type)
    for name, value in headers.items():
        response[name] = value
    return _public_headers(response, etag)


def _release_data(*, release: Release) -> dict[str, Any]:
    """The release's public data, computed once per publication and cached."""
    key = "public:data:" + public.release_version_key(release=release)
    data = cache.get(key)
    if data is None:
        data = public_data.release_public_data(release=release)
        cache.set(key, data, CACHE_SECONDS)
    return data


class PublicHomeView(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        projects = list(public.project_list_published())
        for project in projects:
            project.registry_url = registry_url(slug=project.slug)
        return render(request, "public/home.html", {"projects": projects})


class ProjectDashboardView(View):
    def get(self, request: HttpRequest, slug: str) -> HttpResponse:
        project = public.project_get_published(slug=slug)
        releases = list(public.release_list_published(project=project))
        for release in releases:
            release.epsilon_text = public.exact_text(release.epsilon)
            release.delta_text = public.exact_text(release.delta)
        context = {
            "project": project,
            "budget": _budget_context(project=project),
            "releases": releases,
            "registry_url": registry_url(slug=project.slug),
        }
        return render(request, "public/project.html", context)


def _budget_context(*, project) -> dict[str, Any]:
    """The registry's summary (budgets.selectors.project_registry) plus bar widths."""
    registry = budget_selectors.project_registry(project=project)

    def percent(amount: str, cap: str) -> float:
        cap_value = float(cap)
        return 0.0 if cap_value <= 0 else min(100.0, round(float(amount) / cap_value * 100, 1))

    caps, spent, committed = registry["caps"], registry["spent"], registry["committed"]
    return {
        **registry,
        "epsilon_spent_percent": percent(spent["epsilon"], caps["epsilon"]),
        "epsilon_committed_percent": percent(committed["epsilon"], caps["epsilon"]),
        "delta_spent_percent": percent(spent["delta"], caps["delta"]),
        "has_delta": float(caps["delta"]) > 0,
    }


def _fill(name: str, value: str) -> str:
    return format_html('<span data-fill="{}">{}</span>', name, value)


class ReleasePageView(View):
    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        if request.user.is_authenticated:
            # The header names the signed-in user: render per request from cached data.
            release = public.release_get_published(slug=slug, release_id=release_id)
            options = self._options(request)
            if isinstance(options, HttpResponse):
                return options
            response = HttpResponse(self._render(request, release=release, options=options))
            response["Cache-Control"] = "private, no-cache"
            return response
        _published_version(slug=slug, release_id=release_id)  # 404 before 400
        options = self._options(request)
        if isinstance(options, HttpResponse):
            return options
        return _cached(
            request,
            slug=slug,
            release_id=release_id,
            variant="page:" + options.cache_variant,
            build=lambda release: (
                self._render(request, release=release, options=options),
                "text/html; charset=utf-8",
                {},
            ),
        )

    def _options(self, request: HttpRequest) -> public_options.ViewOptions | HttpResponse:
        try:
            return public_options.view_options_parse(query=request.GET.dict())
        except ValidationFailed as error:
            return _bad_request(request, error, as_json=False)

    def _render(self, request: HttpRequest, *, release: Release, options) -> str:
        data = _release_data(release=release)
        context = {
            "project": release.project,
            "release": release,
            "data": data,
            "view": {
                "confidence": options.confidence,
                "confidence_label": public_options.CONFIDENCE_LABELS[options.confidence],
                "intervals": options.intervals,
                "display": options.display,
            },
            "statistics": [
                _statistic_context(stat, data=data, options=options) for stat in data["statistics"]
            ],
            "chart_data": {**data, "default_confidence": options.confidence},
            "registry_url": registry_url(slug=release.project.slug),
        }
        return render_to_string("public/release.html", context, request=request)


def _fmt(x: float | None) -> str:
    """A number for reading: 4 significant digits at the extremes, else 1-4 decimals."""
    if x is None:
        return ""
    a = abs(x)
    if a != 0 and (a >= 1e7 or a < 1e-3):
        return f"{x:.4g}"
    digits = 1 if a >= 100 else 2 if a >= 1 else 4
    text = f"{x:,.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _statistic_context(stat: dict, *, data: dict, options) -> dict[str, Any]:
    """What the template shows for one statistic at the reader's chosen options."""
    chosen = stat["intervals"][options.confidence][options.intervals]
    per_cell = stat["intervals"][options.confidence]["per_cell"]
    simultaneous = stat["intervals"][options.confidence]["simultaneous"]
    rows = []
    for i, cell in enumerate(stat["cells"] if stat["kind"] != "argmax" else []):
        value = stat["values"][i]
        if options.display == "rounded" and stat["clampable"]:
            value = max(0, round(value))
        row = {
            "cell": cell,
            "value": _fmt(value),
            "lower": _fmt(chosen["lower"][i]),
            "upper": _fmt(chosen["upper"][i]),
            "halfwidth": _fmt(chosen["halfwidths"][i]),
        }
        if stat["layout"] == "heatmap":
            cols = stat["shape"][1]
            row["row_label"] = stat["row_labels"][i // cols]
            row["col_label"] = stat["col_labels"][i % cols]
        rows.append(row)
    noise = stat["noise"] or {}
    confidence = _fill("confidence", public_options.CONFIDENCE_LABELS[options.confidence])
    columns_text = " and ".join(stat["columns"]) or "category"
    kind = stat["kind"]
    noise_words = format_html("{} ({})", noise.get("name", ""), noise.get("parameter_text", ""))
    if kind in ("count", "histogram"):
        things = "cell" if stat["layout"] == "heatmap" else "bar"
        k = stat["k"]
        explanation = format_html(
            "Each {} is the true count plus random noise drawn from a {}. With {} confidence the "
            "true value of any one {} lies within plus or minus {} of it{}.",
            things,
            noise_words,
            confidence,
            things,
            _fill("halfwidth", _fmt(per_cell["halfwidths"][0])),
            format_html(
                "; all {} {}s at once lie within plus or minus {}",
                k,
                things,
                _fill("simultaneous-halfwidth", _fmt(simultaneous["halfwidths"][0])),
            )
            if k > 1
            else "",
        )
        alt = (
            f"{'Heatmap' if stat['layout'] == 'heatmap' else 'Bar chart'} of {stat['label']}: "
            + (
                "; ".join(
                    f"{c} {_fmt(v)}" for c, v in zip(stat["cells"], stat["values"], strict=True)
                )
            )
        )
        caption = (
            "Hover over a cell for its interval at the chosen confidence level."
            if stat["layout"] == "heatmap"
            else "Error bars: the interval at the chosen confidence level."
        )
    elif kind == "sum":
        explanation = format_html(
            "The figure is the true sum of {} (each value clipped to the public bounds and rounded "
            "to the public grid) plus random noise drawn from a {}. With {} confidence the true "
            "clipped sum lies within plus or minus {} of it.",
            columns_text,
            noise_words,
            confidence,
            _fill("halfwidth", _fmt(per_cell["halfwidths"][0])),
        )
        alt = f"{stat['label']}: {_fmt(stat['values'][0])}"
        caption = "The line shows the interval at the chosen confidence level."
    elif kind == "mean":
        explanation = format_html(
            "The mean is a noisy sum of {} (values clipped to the public bounds) divided by a "
            "noisy count, each with its own noise from a {}. With {} confidence the true "
            "clipped mean lies between {} and {}.",
            columns_text,
            noise_words,
            confidence,
            _fill("lower", _fmt(per_cell["lower"][0])),
            _fill("upper", _fmt(per_cell["upper"][0])),
        )
        alt = f"{stat['label']}: {_fmt(stat['values'][0])}"
        caption = "The line shows the interval at the chosen confidence level."
    else:
        explanation = format_html(
            "Chosen by Report Noisy Max: noise from a {} was added to the count of every "
            "declared category and only the category with the largest noisy count is published; "
            "the counts themselves are not. It may not be the truly most common one when "
            "counts are close.",
            noise_words,
        )
        alt = ""
        caption = ""
    return {
        **stat,
        "rows": rows,
        "columns_text": columns_text,
        "explanation_html": explanation,
        "mechanism_text": data["mechanism_label"] if kind != "argmax" else "Report Noisy Max",
        "alt_text": alt,
        "caption": caption,
    }


def _download(request: HttpRequest, slug: str, release_id: int, *, fmt: str) -> HttpResponse:
    _published_version(slug=slug, release_id=release_id)  # 404 before 400
    try:
        confidence = public_options.confidence_parse(value=request.GET.get("confidence"))
    except ValidationFailed as error:
        return _bad_request(request, error, as_json=True)

    def build(release: Release) -> tuple[str, str, dict[str, str]]:
        filename = f"{release.project.slug}-release-{release.pk}"
        data = _release_data(release=release)
        if fmt == "json":
            record = downloads.release_download_data(data=data, confidence=confidence)
            return (
                json.dumps(record, indent=1),
                "application/json",
                {"Content-Disposition": f'inline; filename="{filename}.json"'},
            )
        return (
            downloads.release_download_csv(data=data, confidence=confidence),
            "text/csv; charset=utf-8",
            {"Content-Disposition": f'attachment; filename="{filename}.csv"'},
        )

    return _cached(
        request, slug=slug, release_id=release_id, variant=f"{fmt}:{confidence}", build=build
    )


class ReleaseDataJsonView(View):
    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        return _download(request, slug, release_id, fmt="json")


class ReleaseDataCsvView(View):
    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        return _download(request, slug, release_id, fmt="csv")
