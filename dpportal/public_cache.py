"""Public answers from the cache before Django's middleware stack runs.

A public page that is cached under its project's public version (the release page,
data.json, record.json, the registry JSON: budgets.public_version) costs, served the
usual way, far more in the middleware stack (sessions, locale, CSRF, auth, messages,
CSP...) than in its view. `PublicAnswerMiddleware` sits right after SecurityMiddleware
and whitenoise, and answers such a request itself with the very response the whole
stack produced for the same request before: its status, every header the inner
middleware added (CSP, X-Frame-Options, Vary, Content-Language, ETag, gzip's) and its
body. SecurityMiddleware, outside it, adds its headers to either alike.

How an answer is kept. A view offers its public response with `offer()`, naming the
cache entries its content was read under (`depends`: the project's token, the
release's publication lookup) with the values it read, and the ETag it compared
If-None-Match with. On the way out, the middleware keeps the response finished by the
inner stack (the body as sent: compressed when it was) under a key of what selects it:
the method, the path, the language LocaleMiddleware chose and whether GZipMiddleware
compresses. It keeps nothing that set a cookie, used the CSRF token, carries a CSP
nonce, was streamed, or varies on a header the key does not name.

How it is answered. A request is looked at only when everything that could change the
answer is in that key: GET or HEAD, no query string, a valid Host, and no cookie but
the language cookie and a well-formed CSRF cookie (a session cookie, a messages cookie
or any other: the normal path). Then one round trip to the cache reads the current
values of the depended-on entries (and the kept answer, when this process has no copy
of it); the kept answer is sent only when every value equals what its view read. Those
values are what the view would read now, so the view would answer the same: a change
that renews the token (budgets.public_version) is seen at once, an expired lookup or
token falls through to the view, which reads the database as it always did. Nothing is
served staler than the view's own cache would serve it.

A 304 is answered the same way: the view's 304 for the same key is kept beside its
200 and sent when If-None-Match matches (`not_modified`, the one rule the views use).

Compressed bodies are kept with the random padding of their first compression
(GZipMiddleware's "Heal the Breach" bytes). BREACH needs a secret in the body that an
attacker's input sits beside: a kept answer carries neither (no CSRF token, no
session, no query string).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.conf.urls.i18n import is_language_prefix_patterns_used
from django.core.cache import cache
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.http.response import ResponseHeaders
from django.middleware.csrf import InvalidTokenFormat, _check_token_format
from django.middleware.gzip import re_accepts_gzip
from django.utils import translation
from django.utils.http import parse_etags

from dpportal.local_copies import LocalCopies

#: how long a kept answer stays in the cache: the depended-on entries expire sooner
#: (a minute), so this only bounds the memory a page no one reads again holds
ENTRY_SECONDS = 600
#: a larger body is not kept (it is served the usual way, from the view's cache)
MAX_BODY_BYTES = 2 << 20
#: the headers a kept answer may vary on: each is part of the key
_KEYED_VARY = frozenset({"accept-encoding", "accept-language", "cookie"})
_CSP_HEADERS = ("Content-Security-Policy", "Content-Security-Policy-Report-Only")


def not_modified(header: str | None, etag: str) -> bool:
    """Whether If-None-Match `header` matches `etag`: "*", or the tag by weak comparison
    (RFC 9110 13.1.2: GZipMiddleware sends the tag weak, and a browser sends it back so)."""
    if not header:
        return False
    bare = etag.removeprefix("W/")
    return any(tag == "*" or tag.removeprefix("W/") == bare for tag in parse_etags(header))


@dataclass(frozen=True)
class Offer:
    """What a view read its public response under (see `offer`)."""

    depends: tuple[tuple[str, Any], ...]
    etag: str
    valid_until: float | None


def offer(
    response: HttpResponseBase,
    *,
    depends: Mapping[str, Any],
    etag: str,
    valid_until: float | None = None,
) -> HttpResponseBase:
    """Let the early path answer later requests for this URL with `response`.

    `depends`: each cache key (as given to django.core.cache) whose value the response
    was built under, with that value; the response is answered early only while
    every key holds the same value. `etag`: the tag `not_modified` is asked about.
    `valid_until`: a time.time() after which the response is not answered early (a
    content that changes with the day). A value of None in `depends` (the cache was
    down) makes the offer void.
    """
    if depends and all(value is not None for value in depends.values()):
        response.public_answer_offer = Offer(  # type: ignore[attr-defined]
            depends=tuple(sorted(depends.items())), etag=etag, valid_until=valid_until
        )
    return response


@dataclass(frozen=True)
class _Key:
    path: tuple[str, str]
    entry: str


def _entry_size(entry: dict) -> int:
    """About the bytes a kept answer holds: its bodies and its headers."""
    return 2048 + sum(len(slot[2]) for slot in (entry["ok"], entry["not_modified"]) if slot)


#: kept answers copied in this process
local_copies = LocalCopies(max_entries=256)
#: paths a view has offered an answer for in this process -> the keys it depends on
#: (a function of the path alone); bounded: emptied when full
_known: dict[tuple[str, str], tuple[str, ...]] = {}
_KNOWN_MAX = 8192


def forget_local() -> None:
    """Drop this process's copies and known paths (tests)."""
    local_copies.clear()
    _known.clear()


def _locale_language(request: HttpRequest) -> str:
    """The language LocaleMiddleware activates for this request, by its own steps."""
    urlconf = getattr(request, "urlconf", settings.ROOT_URLCONF)
    i18n_patterns_used, prefixed_default_language = is_language_prefix_patterns_used(urlconf)
    language = translation.get_language_from_request(request, check_path=i18n_patterns_used)
    if i18n_patterns_used and not prefixed_default_language:
        if not translation.get_language_from_path(request.path_info):
            language = settings.LANGUAGE_CODE
    return language


def _cookies_change_nothing(request: HttpRequest) -> bool:
    """Only cookies that cannot change the answer beyond the key: the language cookie
    (its language is in the key) and a well-formed CSRF cookie (a malformed one is
    replaced, a Set-Cookie). A session or messages cookie, or any other: False."""
    for name, value in request.COOKIES.items():
        if name == settings.LANGUAGE_COOKIE_NAME:
            continue
        if name == settings.CSRF_COOKIE_NAME and not settings.CSRF_USE_SESSIONS:
            try:
                _check_token_format(value)
            except InvalidTokenFormat:
                return False
            continue
        return False
    return True


def _key(request: HttpRequest, path: tuple[str, str]) -> _Key | None:
    """The kept answer's key for this request, or None when the request carries
    something the key does not name (then the normal path answers)."""
    if request.META.get("QUERY_STRING"):
        return None
    if not _cookies_change_nothing(request):
        return None
    try:
        request.get_host()  # the normal path refuses a Host not allowed (400)
    except DisallowedHost:
        return None
    gzip = bool(re_accepts_gzip.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))
    text = "\x00".join((request.method or "", *path, _locale_language(request), str(gzip)))
    return _Key(path=path, entry="public:answer:" + hashlib.sha256(text.encode()).hexdigest())


def _current(entry: dict | None, values: Mapping[str, Any]) -> bool:
    if entry is None:
        return False
    if entry["valid_until"] is not None and time.time() >= entry["valid_until"]:
        return False
    return all(values.get(key) == value for key, value in entry["depends"])


def _response(slot: tuple[int, tuple[tuple[str, str], ...], bytes]) -> HttpResponse:
    status, headers, body = slot
    response = HttpResponse(body, status=status)
    response.headers = ResponseHeaders(dict(headers))
    return response


class PublicAnswerMiddleware:
    """Answers a public request its view offered before from the cache, or passes it on
    and keeps the finished response the view offers (module docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        path = (request.path, request.path_info)
        known = _known.get(path)
        key = _key(request, path)
        if key is None:
            return self.get_response(request)
        seen = None
        if known is not None:
            answer, seen = self._answer(request, key, known)
            if answer is not None:
                return answer
        response = self.get_response(request)
        self._keep(request, key, response, seen)
        return response

    def _answer(
        self, request: HttpRequest, key: _Key, depends: tuple[str, ...]
    ) -> tuple[HttpResponse | None, dict | None]:
        """(the kept answer if it is current, the entry read), in one round trip when
        nothing changed."""
        entry = local_copies.get(key.entry)
        values = cache.get_many([*depends] if entry is not None else [*depends, key.entry])
        if entry is None:
            entry = values.get(key.entry)
            if entry is not None:
                local_copies.put(key.entry, entry, size=_entry_size(entry))
        elif not _current(entry, values):  # this process's copy is older: the cache's?
            entry = cache.get(key.entry)
            if entry is not None:
                local_copies.put(key.entry, entry, size=_entry_size(entry))
        if not _current(entry, values):
            return None, None
        if not_modified(request.META.get("HTTP_IF_NONE_MATCH"), entry["etag"]):
            slot = entry["not_modified"]
        else:
            slot = entry["ok"]
        return (_response(slot) if slot is not None else None), entry

    def _keep(
        self,
        request: HttpRequest,
        key: _Key,
        response: HttpResponseBase,
        seen: dict | None,
    ) -> None:
        """Keep `response` if its view offered it and nothing in it is the reader's own."""
        found = getattr(response, "public_answer_offer", None)
        if not isinstance(found, Offer) or not keepable(request, response):
            return
        slot = (response.status_code, tuple(response.items()), response.content)
        fields = {"depends": found.depends, "etag": found.etag, "valid_until": found.valid_until}
        if seen is not None and all(seen[name] == value for name, value in fields.items()):
            entry = dict(seen)
        else:
            entry = {**fields, "ok": None, "not_modified": None}
        entry["ok" if response.status_code == 200 else "not_modified"] = slot
        cache.set(key.entry, entry, ENTRY_SECONDS)
        local_copies.put(key.entry, entry, size=_entry_size(entry))
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[key.path] = tuple(name for name, _ in found.depends)


def keepable(request: HttpRequest, response: HttpResponseBase) -> bool:
    """Whether a finished response is the same for every reader the key matches."""
    if response.status_code not in (200, 304) or response.streaming:
        return False
    if response.cookies or response.has_header("Set-Cookie"):
        return False
    # the page used the CSRF token (a form), or the cookie is renewed
    if request.META.get("CSRF_COOKIE_USED") or request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return False
    if any("nonce-" in response.get(name, "") for name in _CSP_HEADERS):
        return False
    vary = {v.strip().lower() for v in response.get("Vary", "").split(",") if v.strip()}
    if not vary <= _KEYED_VARY:
        return False
    return len(response.content) <= MAX_BODY_BYTES
