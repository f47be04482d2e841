"""Anonymous pages: published projects, dashboards, release pages and their downloads.

Nothing unpublished is reachable from here: every lookup goes through
`releases.public.selectors`, which only returns published releases (404 otherwise).
Published results are immutable, so pages and downloads are cached (Django's
cache: Redis in production) under a key naming the release and its publication
time, and answered with an ETag and `Cache-Control: public`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import NoReverseMatch, reverse
from django.utils.cache import patch_vary_headers
from django.utils.http import content_disposition_header
from django.utils.translation import get_language
from django.views import View

from budgets import selectors as budget_selectors
from budgets.public_version import local_copies, project_public_version, public_version_key
from dpportal import formatting, public_cache
from dpportal.errors import ValidationFailed
from dpportal.product import PRODUCT_NAME, product_version
from releases.models import Release
from releases.public import data as public_data
from releases.public import downloads, facts, page, page_words, paging, record, summary
from releases.public import options as public_options
from releases.public import selectors as public

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
    # the rule the early answers use too (dpportal.public_cache)
    return public_cache.not_modified(request.headers.get("If-None-Match"), etag)


def _public_headers(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    # the language comes from the switcher's cookie or Accept-Language (LocaleMiddleware adds that)
    patch_vary_headers(response, ("Cookie",))
    return response


def _lookup_key(*, slug: str, release_id: int) -> str:
    """A short cache key whatever the URL's slug (memcached refuses keys over 250 bytes)."""
    return f"public:lookup:{release_id}:" + hashlib.sha256(slug.encode()).hexdigest()[:32]


def _published_version(*, slug: str, release_id: int) -> tuple[str, dict[str, str]]:
    """(version, what it was read from): the version key of a published release and of
    its project's public pages.

    The release's part (its publication) is looked up in the cache for a minute:
    publication is final (the lifecycle has no move out of "published") and the key
    includes the publication time, so a cached lookup can only be as stale as a
    release that was never unpublished. Anything not published is looked up in the
    database every time (NotFound), so a new publication shows at once. The project's
    part is its public token (budgets.public_version), renewed by every change a
    page shows beside the release (the project's texts, caps and ledger). Both come
    in one round trip to the cache: a request when nothing changed makes no query.

    The second part maps the two cache keys to the values the version was made of:
    a page built under this version may be answered early while both hold them
    (dpportal.public_cache).
    """
    key, token_key = _lookup_key(slug=slug, release_id=release_id), public_version_key(slug=slug)
    found = cache.get_many([key, token_key])
    version, token = found.get(key), found.get(token_key)
    if version is None:
        release = public.release_get_published(slug=slug, release_id=release_id)
        version = public.release_version_key(release=release)
        cache.set(key, version, LOOKUP_SECONDS)
    if token is None:  # read before the page's data is
        token = project_public_version(slug=slug)
    return f"{version}|{token}", {key: version, token_key: token}


def _cached(
    request: HttpRequest,
    *,
    slug: str,
    release_id: int,
    variant: str,
    build: Callable[[Release], tuple[str | Iterable[str], str, dict[str, str]]],
    published: tuple[str, dict[str, str]] | None = None,
) -> HttpResponse:
    """Answer from the cache (or build once): 304 on a matching If-None-Match.

    `published`: the release's `_published_version`, when the caller has read it.
    A non-streamed answer is offered to the early path (dpportal.public_cache) under
    the cache values its version was made of.
    """
    version, depends = published or _published_version(slug=slug, release_id=release_id)
    # the same release in each language; FORMAT: pages made from data of an older shape go
    variant = f"{variant}|{get_language()}|{public_data.FORMAT}"
    etag = _etag(version, variant)
    if _not_modified(request, etag):
        response = _public_headers(HttpResponse(status=304), etag)
        return public_cache.offer(response, depends=depends, etag=etag)
    key = "public:" + hashlib.sha256(f"{version}|{variant}".encode()).hexdigest()
    entry = local_copies.get(key) or cache.get(key)
    if entry is not None and isinstance(entry[0], str):
        local_copies.put(key, entry, size=len(entry[0]))
    if entry is None:
        release = public.release_get_published(slug=slug, release_id=release_id)
        fresh = public.release_version_key(release=release) + "|" + version.split("|")[-1]
        if fresh != version:  # published again since the lookup was cached
            cache.delete(_lookup_key(slug=slug, release_id=release_id))
            version, etag = fresh, _etag(fresh, variant)
            depends = {}  # not what the cache holds: offered to no early answer
            key = "public:" + hashlib.sha256(f"{version}|{variant}".encode()).hexdigest()
        entry = build(release)
        if not isinstance(entry[0], str):  # chunks: streamed, and cached as they go
            body, content_type, headers = entry
            entry = (_stream_and_cache(key, body, content_type, headers), content_type, headers)
        else:
            cache.set(key, entry, CACHE_SECONDS)
    body, content_type, headers = entry
    response: HttpResponse | StreamingHttpResponse
    if isinstance(body, str) and not isinstance(body, Streamed):
        response = HttpResponse(body, content_type=content_type)
    else:
        response = StreamingHttpResponse(_slices(body), content_type=content_type)
    for name, value in headers.items():
        response[name] = value
    return public_cache.offer(_public_headers(response, etag), depends=depends, etag=etag)


class Streamed(str):
    """A cached download's whole text, sent back in slices as a streamed response."""


#: characters per slice of a streamed download
STREAM_SLICE = 64 * 1024


def _slices(body: str | Iterable[str]) -> Iterator[str]:
    if isinstance(body, str):
        for start in range(0, len(body), STREAM_SLICE):
            yield body[start : start + STREAM_SLICE]
    else:
        yield from body


def _stream_and_cache(
    key: str, chunks: Iterable[str], content_type: str, headers: dict[str, str]
) -> Iterator[str]:
    """Yield each chunk as it is made; once the last is sent, cache the whole text as one
    entry (so a cached download is all there or not at all)."""
    sent = []
    for chunk in chunks:
        sent.append(chunk)
        yield chunk
    cache.set(key, (Streamed("".join(sent)), content_type, headers), CACHE_SECONDS)


def _release_data(*, release: Release, level: str) -> dict[str, Any]:
    """The release's public data with its intervals at confidence `level`, computed once
    per publication and level, and cached."""
    key = f"public:data:{public_data.FORMAT}:{level}:" + public.release_version_key(release=release)
    data = cache.get(key)
    if data is None:
        data = public_data.release_public_data(release=release, levels=(level,))
        cache.set(key, data, CACHE_SECONDS)
    return data


class FaviconView(View):
    """/favicon.ico, which browsers ask for on their own: the static icon's address.

    A temporary redirect (cached a day): in collected mode the icon's name carries
    its content hash, so the target changes when the icon does.
    """

    def get(self, request: HttpRequest) -> HttpResponse:
        response = HttpResponseRedirect(static("favicon.ico"))
        response["Cache-Control"] = "public, max-age=86400"
        return response


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
            release.epsilon_text = formatting.budget(release.epsilon)
            release.delta_text = formatting.budget(release.delta)
            release.published_on = facts.day_text(release.published_at)
        context = {
            "project": project,
            "budget": _budget_context(project=project),
            "releases": releases,
            "registry_url": registry_url(slug=project.slug),
        }
        return render(request, "public/project.html", context)


def _budget_context(*, project) -> dict[str, Any]:
    """The registry's summary (budgets.selectors.project_registry) plus bar widths.

    The bars show the registry's `spend`, the figure every page states (unbounded: full).
    """
    registry = budget_selectors.project_registry(project=project)

    def share(amount: str, cap: str) -> Decimal:
        """The fraction of the cap, between 0 and 1 (for people: formatting.percent)."""
        cap_value = Decimal(cap)
        return Decimal(0) if cap_value <= 0 else min(Decimal(1), Decimal(amount) / cap_value)

    # the one spend figure (budgets.selectors.spend_figure): tight at the cap's delta
    caps, spend = registry["caps"], registry["spend"]
    spent_share = share(spend["spent_epsilon"] or caps["epsilon"], caps["epsilon"])
    committed_share = share(spend["committed_epsilon"] or caps["epsilon"], caps["epsilon"])
    return {
        **registry,
        "epsilon_spent_share": spent_share,
        "epsilon_committed_share": committed_share,
        # widths of the bar (CSS, not text): one decimal place is plenty
        "epsilon_spent_percent": formatting.exact(round(spent_share * 100, 1)),
        "epsilon_committed_percent": formatting.exact(round(committed_share * 100, 1)),
        "has_delta": Decimal(caps["delta"]) > 0,
    }


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
        published = _published_version(slug=slug, release_id=release_id)  # 404 before 400
        options = self._options(request)
        if isinstance(options, HttpResponse):
            return options
        return _cached(
            request,
            slug=slug,
            release_id=release_id,
            published=published,
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

    def _render(
        self,
        request: HttpRequest,
        *,
        release: Release,
        options,
        data: dict[str, Any] | None = None,
        template: str = "public/release.html",
        extra: dict[str, Any] | None = None,
    ) -> str:
        if data is None:
            data = _release_data(release=release, level=options.confidence)
        data = _page_data(data, page=options.page)
        statistics = [
            page.statistic_context(stat, data=data, options=options) for stat in data["statistics"]
        ]
        context = {
            "project": release.project,
            "release": release,
            "data": data,
            "view": {
                "confidence": options.confidence,
                "confidence_label": public_options.CONFIDENCE_LABELS[options.confidence],
                "intervals": options.intervals,
                "display": options.display,
                "page": options.page,
            },
            "statistics": statistics,
            "summary": summary.summary_rows(statistics),
            "chart_data": {**data, "default_confidence": options.confidence},
            "chart_text": page.chart_text(),
            "registry_url": registry_url(slug=release.project.slug),
            # the facts a printed release lists: the product that made it, its accountant
            "product": {"name": PRODUCT_NAME, "version": product_version()},
            "accountant": budget_selectors.accountant_description(),
            # the release's own loss by the one spend figure's rule (tight at the cap's delta)
            "release_spend": budget_selectors.release_spend_figure(
                project=release.project, budget_request_id=release.budget_request_id
            ),
        }
        return render_to_string(template, {**context, **(extra or {})}, request=request)


def _page_data(data: dict[str, Any], *, page: int) -> dict[str, Any]:
    """The public data as one HTML page shows it: each statistic cut to its page of cells,
    with the texts of those cells only, in the reader's language."""
    statistics = []
    for stat in data["statistics"]:
        shown = paging.statistic_page(stat, page=page)
        shown["text"] = public_data.statistic_texts(shown)
        statistics.append(shown)
    return page_words.localised({**data, "statistics": statistics})


def _download(request: HttpRequest, slug: str, release_id: int, *, fmt: str) -> HttpResponse:
    published = _published_version(slug=slug, release_id=release_id)  # 404 before 400
    try:
        confidence = public_options.confidence_parse(value=request.GET.get("confidence"))
        bom = fmt == "csv" and downloads.bom_parse(
            value=request.GET.get("bom"), language=get_language()
        )
    except ValidationFailed as error:
        return _bad_request(request, error, as_json=True)

    def build(release: Release) -> tuple[str | Iterable[str], str, dict[str, str]]:
        filename = f"{release.project.slug}-release-{release.pk}"
        data = _release_data(release=release, level=confidence)
        if fmt == "json":
            record = downloads.release_download_data(data=data, confidence=confidence)
            return (
                json.dumps(record, indent=1),
                "application/json",
                {"Content-Disposition": content_disposition_header(False, f"{filename}.json")},
            )
        return (
            downloads.release_download_csv_chunks(data=data, confidence=confidence, bom=bom),
            "text/csv; charset=utf-8",
            # a slug in any script: filename*=utf-8'' (RFC 6266) when it is not ASCII
            {"Content-Disposition": content_disposition_header(True, f"{filename}.csv")},
        )

    return _cached(
        request,
        slug=slug,
        release_id=release_id,
        published=published,
        variant=f"{fmt}:{confidence}:{bom}",
        build=build,
    )


class ReleaseDataJsonView(View):
    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        return _download(request, slug, release_id, fmt="json")


class ReleaseDataCsvView(View):
    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        return _download(request, slug, release_id, fmt="csv")


class ReleaseRecordJsonView(View):
    """The release record (releases.public.record): one document with every confidence
    level, so it takes no options; found, cached and answered like data.json."""

    def get(self, request: HttpRequest, slug: str, release_id: int) -> HttpResponse:
        def build(release: Release) -> tuple[str, str, dict[str, str]]:
            filename = f"{release.project.slug}-release-{release.pk}-record.json"
            return (
                json.dumps(
                    record.release_record(
                        release,
                        # each level as the page and data.json read it (cached)
                        public_data_at=lambda level: _release_data(release=release, level=level),
                    ),
                    indent=1,
                ),
                "application/json",
                {"Content-Disposition": content_disposition_header(False, filename)},
            )

        return _cached(
            request,
            slug=slug,
            release_id=release_id,
            variant=f"record:{record.RECORD_VERSION}",
            build=build,
        )


class ReleaseRecordSchemaView(View):
    """The release record's JSON Schema: the same for everyone, cached by its digest."""

    def get(self, request: HttpRequest) -> HttpResponse:
        text, digest = record.record_schema()
        etag = f'"{digest}"'
        if _not_modified(request, etag):
            response = HttpResponse(status=304)
        else:
            response = HttpResponse(text, content_type="application/schema+json")
        response["ETag"] = etag
        response["Cache-Control"] = f"public, max-age={MAX_AGE}"
        return response


def release_preview_html(
    request: HttpRequest, *, release: Release, options, template: str, extra: dict[str, Any]
) -> str:
    """The public page of a computed, unpublished release, for its owners to check.

    The same context as the public page, built from the stored results on every
    request and never cached: the public caches are keyed by the publication time,
    which a preview does not have. The caller checks that the user is an owner.
    """
    return ReleasePageView()._render(
        request,
        release=release,
        options=options,
        data=public_data.release_public_data(release=release, levels=(options.confidence,)),
        template=template,
        extra=extra,
    )
