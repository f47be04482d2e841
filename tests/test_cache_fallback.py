"""Redis is a cache and a doorbell, never a dependency of a read.

A private redis-server (never the shared one) backs a real gunicorn serving the
test database; the test stops that Redis and walks every public page, download,
the registry, the token endpoint and the owner's pages, then starts it again and
checks that the cache is used again.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
import requests
from django.conf import settings as django_settings
from django.urls import reverse

from dpportal import cache as fallback_cache
from dpportal.cache import FallbackRedisCache
from tests.conftest import ROOT, database_url_for_subprocess, wait_for
from tests.factories import PASSWORD
from tests.public_builders import build_release
from tests.releases_support import make_dataset, submitted

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs the redis-server binary"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of our own on a free port: stopping it harms no one else."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.dir = tmp_path
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=1)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(self._pings, timeout=20, message="private redis-server did not start")

    def _pings(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


# --- the backend alone ------------------------------------------------------------------------


@pytest.fixture
def fresh_outage(monkeypatch):
    monkeypatch.setattr(fallback_cache, "_outage", fallback_cache._Outage())


def backend(url: str, **options) -> FallbackRedisCache:
    return FallbackRedisCache(
        url, {"OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 1.0, **options}}
    )


def test_every_operation_answers_as_an_empty_cache_when_redis_is_down(fresh_outage, caplog):
    cache = backend(f"redis://127.0.0.1:{free_port()}/0", RETRY_SECONDS=0)
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="dpportal.cache"):
        assert cache.get("k") is None
        assert cache.get("k", "default") == "default"
        cache.set("k", 1)
        assert cache.add("k", 1) is False
        assert cache.touch("k") is False
        assert cache.delete("k") is False
        assert cache.get_many(["a", "b"]) == {}
        assert cache.has_key("k") is False
        assert cache.set_many({"a": 1, "b": 2}) == ["a", "b"]
        cache.delete_many(["a", "b"])
        assert cache.get_or_set("k", 5) == 5
        with pytest.raises(ValueError):
            cache.incr("k")
        assert cache.clear() is False
    assert time.monotonic() - started < 5  # refused connections cost milliseconds
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # logged once, not per call
    assert warnings[0].getMessage() == "cache unavailable (ConnectionError): answering without it"


def test_after_a_failure_redis_is_left_alone_for_a_moment_then_used_again(
    fresh_outage, private_redis, caplog
):
    cache = backend(private_redis.url, RETRY_SECONDS=1)
    cache.set("k", "v")
    assert cache.get("k") == "v"
    private_redis.stop()
    with caplog.at_level(logging.INFO, logger="dpportal.cache"):
        assert cache.get("k") is None
        private_redis.start()
        assert cache.get("k") is None  # still resting: no connection attempt yet
        time.sleep(1.1)
        cache.set("k", "again")
        assert cache.get("k") == "again"
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("cache unavailable (")
    assert messages[-1].startswith("cache reachable again after")


def test_settings_use_the_fallback_backend_with_short_timeouts():
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the embedded default uses a local-memory cache")
    cache = django_settings.CACHES["default"]
    assert cache["BACKEND"] == "dpportal.cache.FallbackRedisCache"
    assert cache["OPTIONS"]["socket_connect_timeout"] <= 0.5
    assert django_settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"


# --- a real server whose Redis goes away -------------------------------------------------------


class Gunicorn:
    def __init__(self, *, tmp_path: Path, redis_url: str) -> None:
        self.port = free_port()
        self.log_path = tmp_path / "gunicorn.log"
        env = os.environ.copy()
        env.update(
            DATABASE_URL=database_url_for_subprocess(),
            REDIS_URL=redis_url,
            MEDIA_ROOT=str(django_settings.MEDIA_ROOT),
            DEBUG="1",
            PYTHONPATH=str(ROOT),
            LOG_LEVEL="INFO",
        )
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed when the process ends
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "dpportal.wsgi", "--workers", "1",
             "--bind", f"127.0.0.1:{self.port}", "--timeout", "60"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        wait_for(self._answers, timeout=60, message=f"gunicorn did not start:\n{self.log()}")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{self.log()}")
        try:
            return requests.get(self.base + "/", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)


@pytest.fixture
def server(transactional_db, private_redis, tmp_path):
    app = Gunicorn(tmp_path=tmp_path, redis_url=private_redis.url)
    yield app
    app.stop()


def logged_in_session(base: str, username: str) -> requests.Session:
    session = requests.Session()
    login = base + reverse("accounts:login")
    session.get(login, timeout=10)
    response = session.post(
        login,
        data={"username": username, "password": PASSWORD,
              "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": login}, allow_redirects=False, timeout=10,
    )  # fmt: skip
    assert response.status_code == 302, response.text[:500]
    return session


def test_reads_answer_from_the_database_while_redis_is_down(
    server, private_redis, project, owner, reviewer
):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    dataset = make_dataset(project=project, owner=owner, rows=200)
    pending = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    slug, rid = project.slug, release.pk
    public = {
        "home": (reverse("public:home"), project.name),
        "project": (reverse("public:project", args=[slug]), release.title),
        "release": (reverse("public:release", args=[slug, rid]), release.title),
        "json": (reverse("public:release-json", args=[slug, rid]), '"statistics"'),
        "csv": (reverse("public:release-csv", args=[slug, rid]), "Respondents by region"),
        "registry": (reverse("registry:project", args=[slug]), release.title),
        "registry.json": (reverse("registry:project_json", args=[slug]), release.title),
        "api projects": ("/api/v1/public/projects/", slug),
        "api release": (f"/api/v1/public/projects/{slug}/releases/{rid}/", '"statistics"'),
        "api registry": (f"/api/v1/public/projects/{slug}/registry/", release.title),
    }
    owner_pages = {
        "home": (reverse("accounts:home"), project.name),
        "project": (reverse("budgets:project_detail", args=[slug]), project.name),
        "budget": (reverse("budgets:project_budget", args=[slug]), project.name),
        "datasets": (reverse("datasets:list", args=[slug]), "survey.csv"),
        "dataset": (reverse("datasets:detail", args=[dataset.pk]), dataset.name),
        "release": (reverse("releases:detail", args=[pending.pk]), pending.title),
        "status": (reverse("releases:status", args=[rid]), '"status"'),
    }
    reviewer_pages = {
        "inbox": (reverse("budgets:inbox"), pending.title),
        "request": (
            reverse("review:request_detail", args=[pending.budget_request_id]),
            pending.title,
        ),
    }

    def walk(session: requests.Session, pages: dict) -> dict[str, bytes]:
        bodies = {}
        for name, (path, expected) in pages.items():
            started = time.monotonic()
            response = session.get(server.base + path, timeout=10)
            assert response.status_code == 200, (name, response.status_code, server.log()[-3000:])
            assert expected in response.text, name
            assert time.monotonic() - started < 3, name  # no waiting on a dead Redis
            bodies[name] = response.content
        return bodies

    # Redis up: everything answers and the public reads fill the cache.
    with_cache = walk(requests.Session(), public)
    cached_keys = private_redis.client().dbsize()
    assert cached_keys > 0

    private_redis.stop()
    without_cache = walk(requests.Session(), public)
    # the same published content, straight from the database
    for name in ("json", "csv", "api release"):
        assert without_cache[name] == with_cache[name], name
    walk(logged_in_session(server.base, owner.username), owner_pages)
    walk(logged_in_session(server.base, reviewer.username), reviewer_pages)
    token = requests.post(
        server.base + "/api/v1/auth/token/",
        json={"username": owner.username, "password": PASSWORD},
        timeout=10,
    )
    assert token.status_code == 200, token.text
    api = requests.get(
        f"{server.base}/api/v1/releases/{rid}/",
        headers={"Authorization": f"Token {token.json()['token']}"},
        timeout=10,
    )
    assert api.status_code == 200 and release.title in api.text
    outage_lines = re.findall(r"cache unavailable \((\w+)\)", server.log())
    assert outage_lines == ["ConnectionError"], server.log()[-3000:]  # once, by type only

    # Redis back (empty): after the short rest the cache fills again.
    private_redis.start()
    assert private_redis.client().dbsize() == 0
    time.sleep(2.5)  # RETRY_SECONDS
    walk(requests.Session(), public)
    assert private_redis.client().dbsize() >= cached_keys
    assert "cache reachable again" in server.log()
    assert "Traceback" not in server.log()
