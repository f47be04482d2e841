"""Public answers from the cache before the middleware stack (dpportal.public_cache).

The early answer must be the normal path's answer: the same status, headers (Date
aside) and body for every cached URL, in each language and encoding, 200 and 304;
never another reader's page (a signed-in reader, a Chinese reader), never a response
that set a cookie or used a CSRF token; and never older than the view's own cache
would serve it.
"""

from __future__ import annotations

import gzip
from contextlib import contextmanager
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.cache import cache
from django.http import HttpResponse, StreamingHttpResponse
from django.middleware.locale import LocaleMiddleware
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse
from django.utils import translation

from budgets import selectors as budget_selectors
from budgets.public_version import project_public_changed
from dpportal import cache as cache_module
from dpportal import public_cache
from dpportal.catalogues import compile_all
from releases.models import Release
from releases.public import views as public_views
from tests.public_builders import build_release

pytestmark = pytest.mark.django_db

EARLY = "dpportal.public_cache.PublicAnswerMiddleware"
GZIP = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}


@pytest.fixture(autouse=True, scope="module")
def _catalogues():
    compile_all()


@pytest.fixture(autouse=True)
def _forget_local():
    """Each test starts with no copies in this process (the cache is emptied by conftest)."""
    public_cache.forget_local()
    yield
    public_cache.forget_local()


@pytest.fixture
def release(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _urls(release: Release) -> dict[str, str]:
    slug = release.project.slug
    return {
        "page": reverse("public:release", args=[slug, release.pk]),
        "data.json": reverse("public:release-json", args=[slug, release.pk]),
        "record.json": reverse("public:release-record", args=[slug, release.pk]),
        "registry": reverse("registry:project_json", args=[slug]),
    }


@contextmanager
def no_view():
    """Fails the request if a view of the cached pages runs: an answer given inside
    came from the early path."""
    ran = AssertionError("the view ran")
    with (
        mock.patch.object(public_views, "_published_version", side_effect=ran),
        mock.patch.object(budget_selectors, "project_registry_json_cached", side_effect=ran),
    ):
        yield


@contextmanager
def counting_views():
    """Counts the cached pages' views that run (the normal path)."""
    calls = {"n": 0}
    release_version = public_views._published_version
    registry_json = budget_selectors.project_registry_json_cached

    def count(function):
        def wrapper(*args, **kwargs):
            calls["n"] += 1
            return function(*args, **kwargs)

        return wrapper

    with (
        mock.patch.object(public_views, "_published_version", count(release_version)),
        mock.patch.object(budget_selectors, "project_registry_json_cached", count(registry_json)),
    ):
        yield calls


def normal_client(**defaults) -> Client:
    """A client whose stack has no early middleware (built at its first request)."""
    client = Client(**defaults)
    middleware = [name for name in settings.MIDDLEWARE if name != EARLY]
    with override_settings(MIDDLEWARE=middleware):
        client.get("/favicon.ico")  # loads the handler's middleware now
    return client


def _request(client: Client, method: str, url: str, **headers):
    return getattr(client, method.lower())(url, **headers)


def _headers(response) -> dict[str, str]:
    return {name: value for name, value in response.items() if name != "Date"}


def _body(response) -> bytes:
    if response.get("Content-Encoding") == "gzip":
        return gzip.decompress(response.content)
    return response.content


def _same(early, normal, *, compressed: bool) -> None:
    assert early.status_code == normal.status_code
    early_headers, normal_headers = _headers(early), _headers(normal)
    if compressed:  # the random padding of each compression differs in length
        length = int(early_headers.pop("Content-Length"))
        assert length == len(early.content) or early.request["REQUEST_METHOD"] == "HEAD"
        normal_headers.pop("Content-Length")
    assert early_headers == normal_headers
    assert _body(early) == _body(normal)


# --- the rule shared with the views ------------------------------------------------------


def test_if_none_match_rule():
    etag = '"abc"'
    assert public_cache.not_modified('"abc"', etag)
    assert public_cache.not_modified('W/"abc"', etag)  # gzip's weak tag: weak comparison
    assert public_cache.not_modified('"x", W/"abc"', etag)
    assert public_cache.not_modified("*", etag)
    assert not public_cache.not_modified("abc", etag)  # not a tag (RFC 9110: quoted)
    assert public_cache.not_modified('"abc"', 'W/"abc"')
    assert not public_cache.not_modified('"abd"', etag)
    assert not public_cache.not_modified("", etag)
    assert not public_cache.not_modified(None, etag)


# --- equality with the normal path ----------------------------------------------------


READERS = {
    "english (nothing said)": {},
    "chinese (cookie)": {"cookie": "zh-hans"},
    "chinese (Accept-Language)": {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"},
    "english (cookie beats Accept-Language)": {
        "cookie": "en",
        "HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9",
    },
}


def _client(reader: dict, *, normal: bool) -> tuple[Client, dict]:
    headers = {k: v for k, v in reader.items() if k != "cookie"}
    client = normal_client() if normal else Client()
    if "cookie" in reader:
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = reader["cookie"]
    return client, headers


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("compressed", [False, True], ids=["identity", "gzip"])
def test_early_answers_equal_the_normal_path(release, reader, compressed):
    """For each cached URL: the early 200 and 304 equal the normal path's, headers and
    body, in each language and encoding (GET; HEAD where the view answers it)."""
    normal, headers = _client(READERS[reader], normal=True)
    early, _ = _client(READERS[reader], normal=False)
    headers = {**headers, **(GZIP if compressed else {})}
    for name, url in _urls(release).items():
        for method in ("GET", "HEAD"):
            reference = _request(normal, method, url, **headers)
            if name == "registry" and method == "HEAD":
                assert reference.status_code == 405  # require_GET: never kept
                assert _request(early, method, url, **headers).status_code == 405
                assert _request(early, method, url, **headers).status_code == 405
                continue
            assert reference.status_code == 200, (name, method)
            first = _request(early, method, url, **headers)  # the normal path, kept
            _same(first, reference, compressed=compressed)
            with no_view():
                again = _request(early, method, url, **headers)
            _same(again, reference, compressed=compressed)
            assert again.content == first.content  # the kept bytes themselves
            assert _headers(again) == _headers(first)
            # a 304 for the tag the reader was given, kept and answered the same way
            conditional = {**headers, "HTTP_IF_NONE_MATCH": reference["ETag"]}
            reference_304 = _request(normal, method, url, **conditional)
            assert reference_304.status_code == 304, (name, method)
            _same(_request(early, method, url, **conditional), reference_304, compressed=False)
            with no_view():
                _same(_request(early, method, url, **conditional), reference_304, compressed=False)
                # a stale tag: the kept 200
                stale = {**headers, "HTTP_IF_NONE_MATCH": '"stale"'}
                _same(_request(early, method, url, **stale), reference, compressed=compressed)
    if compressed:
        page = _request(early, "GET", _urls(release)["page"], **headers)
        assert page["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in page["Vary"]


def test_each_encoding_is_kept_apart(release):
    """A reader who accepts gzip gets the compressed answer, one who does not the plain
    one, whichever was kept first."""
    for url in _urls(release).values():
        client = Client()
        plain = client.get(url).content
        first = client.get(url, **GZIP)
        with no_view():
            assert client.get(url).content == plain
            compressed = client.get(url, **GZIP)
        assert compressed["Content-Encoding"] == first["Content-Encoding"] == "gzip"
        assert gzip.decompress(compressed.content) == plain


def test_headers_of_the_early_page(release, settings):
    """The security headers of the normal path, SecurityMiddleware's included."""
    settings.SECURE_HSTS_SECONDS = 3600
    client = Client()
    url = _urls(release)["page"]
    client.get(url, secure=True)
    with no_view():
        page = client.get(url, secure=True)
    assert page["Strict-Transport-Security"].startswith("max-age=3600")
    assert page["X-Frame-Options"] == "DENY"
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["Referrer-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in page["Content-Security-Policy"]
    assert "nonce-" not in page["Content-Security-Policy"]
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert page["Content-Language"].startswith("en")
    assert {v.strip() for v in page["Vary"].split(",")} >= {"Cookie", "Accept-Language"}
    assert page["ETag"] and page["Cache-Control"].startswith("public")


# --- language ---------------------------------------------------------------------------


LANGUAGE_CASES = [
    ({}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "zh-CN"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "zh-Hans-CN,en;q=0.1"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "zh-TW"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "fr, de;q=0.5"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "*"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "en-GB,zh;q=0.9"}, {}),
    ({"HTTP_ACCEPT_LANGUAGE": "zh-CN"}, {"django_language": "en"}),
    ({"HTTP_ACCEPT_LANGUAGE": "en"}, {"django_language": "zh-hans"}),
    ({"HTTP_ACCEPT_LANGUAGE": "zh-CN"}, {"django_language": "fr"}),
    ({}, {"django_language": "zh-Hans"}),
    ({}, {"django_language": "zh_hans"}),
    ({"HTTP_ACCEPT_LANGUAGE": "x" * 600}, {}),
]


@pytest.mark.parametrize(("meta", "cookies"), LANGUAGE_CASES)
def test_the_key_language_is_the_one_locale_middleware_activates(meta, cookies):
    request = RequestFactory().get("/p/x/releases/1/", **meta)
    request.COOKIES.update(cookies)
    keyed = public_cache._locale_language(request)
    LocaleMiddleware(lambda r: HttpResponse()).process_request(request)
    chosen = translation.get_language()
    translation.activate(keyed)
    assert translation.get_language() == chosen


def test_a_chinese_reader_never_gets_the_english_page_nor_the_reverse(release):
    url = _urls(release)["page"]
    english, chinese, by_header = Client(), Client(), Client()
    chinese.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
    assert 'lang="en"' in english.get(url).content.decode()  # kept in English first
    with counting_views() as calls:
        assert 'lang="zh-hans"' in chinese.get(url).content.decode()
        assert 'lang="zh-hans"' in by_header.get(url, **zh).content.decode()
    assert calls["n"] == 1  # Chinese was built once, then answered early
    with no_view():
        for _ in range(2):
            assert 'lang="en"' in english.get(url).content.decode()
            assert 'lang="zh-hans"' in chinese.get(url).content.decode()
            assert 'lang="zh-hans"' in by_header.get(url, **zh).content.decode()
            assert chinese.get(url)["Content-Language"] == "zh-hans"
            assert english.get(url)["Content-Language"] == "en"


# --- readers whose page differs -----------------------------------------------------------


def test_a_signed_in_reader_is_never_answered_early_nor_kept(release, owner):
    url = _urls(release)["page"]
    anonymous = Client()
    anonymous.get(url)  # kept for anonymous readers
    signed_in = Client()
    signed_in.force_login(owner)
    with counting_views() as calls:
        page = signed_in.get(url).content.decode()
    assert owner.username in page and "csrfmiddlewaretoken" in page  # the logout form
    assert calls["n"] == 0  # the signed-in page is rendered per request, never cached
    with no_view():
        again = anonymous.get(url).content.decode()
    assert owner.username not in again and "csrfmiddlewaretoken" not in again


def test_a_signed_in_readers_downloads_are_not_kept(release, owner):
    signed_in = Client()
    signed_in.force_login(owner)
    for url in _urls(release).values():
        assert signed_in.get(url).status_code == 200
    assert public_cache._known == {}
    with counting_views() as calls:
        for url in _urls(release).values():
            Client().get(url)
    assert calls["n"] == 4  # the anonymous requests found nothing kept: the views ran


@pytest.mark.parametrize(
    "cookie",
    [
        (settings.SESSION_COOKIE_NAME, "a" * 32),  # a session that does not exist
        (settings.SESSION_COOKIE_NAME, "not\x00valid"),
        (CookieStorage.cookie_name, "x"),
        ("tracker", "1"),
        (settings.CSRF_COOKIE_NAME, "short"),  # malformed: the normal path renews it
    ],
    ids=["session", "malformed session", "messages", "other", "malformed csrf"],
)
def test_requests_with_cookies_that_may_matter_take_the_normal_path(release, cookie):
    url = _urls(release)["page"]
    Client().get(url)
    client = Client()
    client.cookies[cookie[0]] = cookie[1]
    with counting_views() as calls:
        response = client.get(url)
    assert response.status_code == 200
    assert calls["n"] == 1
    if cookie[0] == settings.CSRF_COOKIE_NAME:
        assert settings.CSRF_COOKIE_NAME in response.cookies  # the answer set a cookie


def test_a_well_formed_csrf_cookie_changes_nothing(release):
    url = _urls(release)["page"]
    reference = normal_client()
    reference.cookies[settings.CSRF_COOKIE_NAME] = "A" * 32
    expected = reference.get(url)
    assert not expected.cookies
    Client().get(url)
    client = Client()
    client.cookies[settings.CSRF_COOKIE_NAME] = "A" * 32
    with no_view():
        _same(client.get(url), expected, compressed=False)


def test_a_query_string_or_a_bad_host_takes_the_normal_path(release):
    url = _urls(release)["page"]
    client = Client()
    client.get(url)
    with counting_views() as calls:
        assert client.get(url + "?confidence=0.9").status_code == 200
        assert client.get(url, HTTP_HOST="evil.example").status_code == 400
    assert calls["n"] == 1  # the host is refused before any view


# --- what is never kept ----------------------------------------------------------------


def _offered(response):
    return public_cache.offer(response, depends={"public:test:token": "t1"}, etag='"e"')


@pytest.mark.parametrize(
    "make",
    [
        lambda request: _set_cookie(_offered(HttpResponse("x" * 300))),
        lambda request: _csrf_used(request, _offered(HttpResponse("x" * 300))),
        lambda request: _nonce(_offered(HttpResponse("x" * 300))),
        lambda request: _vary(_offered(HttpResponse("x" * 300)), "Authorization"),
        lambda request: _offered(StreamingHttpResponse(iter([b"x" * 300]))),
        lambda request: _offered(HttpResponse("missing", status=404)),
        lambda request: HttpResponse("not offered"),
        lambda request: public_cache.offer(
            HttpResponse("cache down"), depends={"public:test:token": None}, etag='"e"'
        ),
    ],
    ids=[
        "set-cookie",
        "csrf token used",
        "csp nonce",
        "vary not keyed",
        "streamed",
        "404",
        "not offered",
        "cache down",
    ],
)
def test_responses_with_a_readers_own_part_are_never_kept(make):
    cache.set("public:test:token", "t1")
    middleware = public_cache.PublicAnswerMiddleware(make)
    request = RequestFactory().get("/kept-or-not/")
    middleware(request)
    assert public_cache._known == {}
    second = RequestFactory().get("/kept-or-not/")
    answered = public_cache.PublicAnswerMiddleware(lambda r: HttpResponse("the view", status=299))(
        second
    )
    assert answered.status_code == 299


def test_an_offered_response_is_kept_and_answered():
    """The positive control of the test above: the same middleware keeps a clean offer."""
    cache.set("public:test:token", "t1")
    public_cache.PublicAnswerMiddleware(lambda r: _offered(HttpResponse("kept")))(
        RequestFactory().get("/kept-or-not/")
    )
    answered = public_cache.PublicAnswerMiddleware(lambda r: HttpResponse("the view", status=299))(
        RequestFactory().get("/kept-or-not/")
    )
    assert (answered.status_code, answered.content) == (200, b"kept")
    cache.set("public:test:token", "t2")  # the token changed: the view answers
    answered = public_cache.PublicAnswerMiddleware(lambda r: HttpResponse("the view", status=299))(
        RequestFactory().get("/kept-or-not/")
    )
    assert answered.status_code == 299


def _set_cookie(response):
    response.set_cookie("x", "1")
    return response


def _csrf_used(request, response):
    from django.middleware.csrf import get_token

    get_token(request)
    return response


def _nonce(response):
    response["Content-Security-Policy"] = "script-src 'nonce-abc'"
    return response


def _vary(response, header):
    response["Vary"] = header
    return response


# --- invalidation ---------------------------------------------------------------------


def test_a_change_to_the_project_is_seen_at_once(release):
    client = Client()
    urls = _urls(release)
    before = {name: client.get(url)["ETag"] for name, url in urls.items()}
    with no_view():
        for url in urls.values():
            client.get(url)
    project_public_changed(slug=release.project.slug)
    with counting_views() as calls:
        after = {name: client.get(url)["ETag"] for name, url in urls.items()}
    assert calls["n"] == len(urls)  # every view ran again under the new token
    assert all(after[name] != before[name] for name in urls)
    with no_view():  # and the new answers are kept
        assert {name: client.get(url)["ETag"] for name, url in urls.items()} == after


def test_a_new_publication_shows_at_once_in_the_registry(release, project, owner, reviewer):
    client = Client()
    url = _urls(release)["registry"]
    count = len(client.get(url).json()["releases"])
    with no_view():
        assert len(client.get(url).json()["releases"]) == count
    second = build_release(
        project=project, owner=owner, reviewer=reviewer, title="Second", publish=False
    )
    from releases import lifecycle

    lifecycle.release_publish(release=second, actor=owner)
    assert len(client.get(url).json()["releases"]) == count + 1


def test_an_unpublished_release_is_never_served_staler_than_by_the_view(release):
    """A release leaving "published" behind the services' back (nothing renews the
    token): the view's cache serves it until its lookup expires; the early path no
    longer, and 404 from then on, as the view."""
    client, normal = Client(), normal_client()
    url = _urls(release)["page"]
    client.get(url)
    Release.objects.filter(pk=release.pk).update(status=Release.Status.COMPUTED)
    assert normal.get(url).status_code == 200  # the view's cache, as designed
    assert client.get(url).status_code == 200
    cache.delete(public_views._lookup_key(slug=release.project.slug, release_id=release.pk))
    assert normal.get(url).status_code == 404
    assert client.get(url).status_code == 404
    assert client.get(url).status_code == 404


def test_the_token_expiring_takes_the_normal_path(release):
    client = Client()
    urls = _urls(release)
    for url in urls.values():
        client.get(url)
    cache.delete(public_views.public_version_key(slug=release.project.slug))
    with counting_views() as calls:
        for url in urls.values():
            assert client.get(url).status_code == 200
    assert calls["n"] == len(urls)


def test_the_registry_is_answered_early_until_its_day_ends(release):
    client = Client()
    url = _urls(release)["registry"]
    client.get(url)
    with no_view():
        client.get(url)
    with (
        mock.patch.object(public_cache.time, "time", return_value=4102444800.0),  # 2100
        counting_views() as calls,
    ):
        assert client.get(url).status_code == 200
    assert calls["n"] == 1


def test_a_cache_that_is_down_takes_the_normal_path(release):
    client = Client()
    url = _urls(release)["page"]
    client.get(url)
    with (  # dpportal.cache answers as an empty cache while Redis is down
        mock.patch.object(cache_module._outage, "skipping", return_value=True),
        counting_views() as calls,
    ):
        assert client.get(url).status_code == 200
    assert calls["n"] == 1


def test_a_copy_in_another_process_is_read_from_the_cache(release):
    """Another worker: no local copy, one read of the kept answer with the token."""
    client = Client()
    url = _urls(release)["page"]
    expected = client.get(url).content
    public_cache.local_copies.clear()
    with no_view(), mock.patch.object(cache, "get", side_effect=AssertionError("2nd trip")):
        assert client.get(url).content == expected
