"""Login limits kept in the database: they hold with Redis down and survive its restart.

Ten wrong passwords lock one username from one address (even the right password is
refused, with the same answer); other addresses are only slowed for that username,
by seconds, never locked for an hour. The login page and the API token endpoint
both. The cache is a private redis-server (tests.test_cache_fallback.PrivateRedis)
that the tests stop and start, never the shared one.
"""

from __future__ import annotations

import re
import shutil
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import authenticate
from django.db.models import F
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.throttling import slow_down_seconds
from dpportal import cache as fallback_cache
from tests.factories import PASSWORD, UserFactory
from tests.test_cache_fallback import PrivateRedis, free_port

TOKEN_URL = "/api/v1/auth/token/"
ATTACKER = "198.51.100.66"
OWNER_HOME = "192.0.2.10"


def cache_at(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "dpportal.cache.FallbackRedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "login-test",
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 1.0},
        }
    }


@pytest.fixture(autouse=True)
def _fresh_outage(monkeypatch):
    monkeypatch.setattr(fallback_cache, "_outage", fallback_cache._Outage())


@pytest.fixture
def redis_down(settings):
    """The cache points at a port nothing listens on: Redis is down throughout."""
    settings.CACHES = cache_at(f"redis://127.0.0.1:{free_port()}/0")


class Login:
    """One login path (the page or the API token) as one call: status, message, logged in."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __call__(self, username: str, password: str, address: str):
        if self.kind == "api":
            response = APIClient().post(
                TOKEN_URL,
                {"username": username, "password": password},
                format="json",
                REMOTE_ADDR=address,
            )
            body = response.json()
            message = body.get("error", {}).get("message", "")
            return response, message, "token" in body
        from django.test import Client

        client = Client()
        response = client.post(
            reverse("accounts:login"),
            {"username": username, "password": password},
            REMOTE_ADDR=address,
        )
        text = response.content.decode()
        found = re.search(r'<ul class="errorlist nonfield">\s*<li>(.*?)</li>', text, re.S)
        return response, (found.group(1) if found else ""), "_auth_user_id" in client.session

    @property
    def failed_status(self) -> int:
        return 401 if self.kind == "api" else 200


@pytest.fixture(params=["page", "api"])
def login(request):
    return Login(request.param)


def fail_ten_times(login: Login, username: str, address: str) -> None:
    for _ in range(9):
        response, _, logged_in = login(username, "wrong", address)
        assert response.status_code == login.failed_status, response.content
        assert not logged_in
    # the tenth failure locks the pair and says so
    response, message, logged_in = login(username, "wrong", address)
    assert response.status_code == 429 and not logged_in
    assert "the limit is 10" in message


def backdate(seconds: float) -> None:
    """As if `seconds` had passed since every recorded failure."""
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


def test_with_redis_down_ten_failures_lock_the_pair_and_others_are_only_slowed(
    db, redis_down, owner, login, settings
):
    assert settings.DPPORTAL_LOGIN_FAILURE_LIMIT == 10
    fail_ten_times(login, owner.username, ATTACKER)

    # the locked pair: the right password is refused, exactly as a wrong one is
    right, right_message, logged_in = login(owner.username, PASSWORD, ATTACKER)
    wrong, wrong_message, _ = login(owner.username, "wrong", ATTACKER)
    assert right.status_code == wrong.status_code == 429
    assert not logged_in and not Token.objects.filter(user=owner).exists()
    assert right_message == wrong_message
    assert "the limit is 10" in right_message and "60 more minutes" in right_message
    assert 3500 < int(right["Retry-After"]) <= 3600
    # refused attempts are not failures: the count stayed at the limit
    assert sum(AccessAttempt.objects.values_list("failures_since_start", flat=True)) == 10

    # the owner at home, right away: slowed by seconds, not refused for an hour
    response, message, logged_in = login(owner.username, PASSWORD, OWNER_HOME)
    assert response.status_code == 429 and not logged_in
    wait = int(response["Retry-After"])
    assert 1 <= wait <= settings.DPPORTAL_LOGIN_SLOW_FIRST_SECONDS
    assert "10 failed logins for this username" in message

    backdate(wait)
    response, _, logged_in = login(owner.username, PASSWORD, OWNER_HOME)
    assert response.status_code in (200, 302) and logged_in
    # ... while the attacker's address stays locked
    assert login(owner.username, PASSWORD, ATTACKER)[0].status_code == 429

    # the lock ends DPPORTAL_LOGIN_LOCKOUT_MINUTES after the last failure
    backdate(3600)
    response, _, logged_in = login(owner.username, PASSWORD, ATTACKER)
    assert logged_in


def test_nine_failures_do_not_lock(db, redis_down, owner, login):
    for _ in range(9):
        login(owner.username, "wrong", ATTACKER)
    response, _, logged_in = login(owner.username, PASSWORD, ATTACKER)
    assert logged_in, response.content


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_the_lock_survives_a_redis_restart(db, owner, login, settings, tmp_path):
    redis_server = PrivateRedis(tmp_path)
    redis_server.start()
    try:
        settings.CACHES = cache_at(redis_server.url)
        fail_ten_times(login, owner.username, ATTACKER)
        assert login(owner.username, PASSWORD, ATTACKER)[0].status_code == 429

        redis_server.stop()
        assert login(owner.username, PASSWORD, ATTACKER)[0].status_code == 429

        redis_server.start()  # empty: --save "" --appendonly no
        assert redis_server.client().dbsize() == 0
        fallback_cache._outage.retry_at = 0.0  # use the restarted Redis at once
        response, message, logged_in = login(owner.username, PASSWORD, ATTACKER)
        assert response.status_code == 429 and not logged_in
        assert "the limit is 10" in message
    finally:
        redis_server.stop()


def test_slowing_for_one_username_grows_and_is_capped(db, redis_down, owner, login, settings):
    # failures spread over many addresses: no pair is locked, the username is slowed
    for i in range(10):
        assert login(owner.username, "wrong", f"203.0.113.{i}")[0].status_code == (
            login.failed_status
        )
    waits = []
    for i in range(10, 16):
        response = login(owner.username, "wrong", f"203.0.113.{i}")[0]
        assert response.status_code == 429
        waits.append(int(response["Retry-After"]))
        backdate(waits[-1])  # the wait passes; the next failure counts
        assert login(owner.username, "wrong", f"203.0.113.{i}")[0].status_code == (
            login.failed_status
        )
    assert waits == [5, 10, 20, 40, 80, 120]
    assert max(waits) <= settings.DPPORTAL_LOGIN_SLOW_MAX_SECONDS


def test_slow_down_formula():
    assert slow_down_seconds(failures=9, slow_after=10) == 0
    assert slow_down_seconds(failures=10, slow_after=10) == 5
    assert slow_down_seconds(failures=12, slow_after=10) == 20
    assert slow_down_seconds(failures=10_000, slow_after=10) == 120


def test_one_address_trying_many_usernames_is_slowed(db, redis_down, owner, login, settings):
    settings.DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER = 3
    for i in range(3):
        assert login(f"nobody{i}", "wrong", ATTACKER)[0].status_code == login.failed_status
    response, message, logged_in = login(owner.username, PASSWORD, ATTACKER)
    assert response.status_code == 429 and not logged_in
    assert "from your address" in message
    # another address is not affected
    assert login(owner.username, PASSWORD, OWNER_HOME)[2]


def test_a_success_clears_only_its_own_pair(db, redis_down, owner):
    login = Login("api")
    for _ in range(4):  # 8 failures for the username: not yet slowed
        login(owner.username, "wrong", OWNER_HOME)
        login(owner.username, "wrong", ATTACKER)
    assert login(owner.username, PASSWORD, OWNER_HOME)[2]
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {ATTACKER}


# --- the address recorded ---------------------------------------------------------------


def test_forwarded_header_is_ignored_without_trusted_proxies(db, redis_down, owner):
    APIClient().post(
        TOKEN_URL,
        {"username": owner.username, "password": "wrong"},
        format="json",
        REMOTE_ADDR=OWNER_HOME,
        HTTP_X_FORWARDED_FOR="10.1.2.3",
    )
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == [OWNER_HOME]


def test_trusted_proxy_address_is_recorded_and_garbage_falls_back(db, redis_down, owner, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for forwarded in ("10.9.9.9, 198.51.100.7", "not-an-address"):
        response = APIClient().post(
            TOKEN_URL,
            {"username": owner.username, "password": "wrong"},
            format="json",
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR=forwarded,
        )
        assert response.status_code == 401
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {
        "198.51.100.7",
        "127.0.0.1",
    }


def test_the_admin_login_obeys_the_lock(db, redis_down, client):
    UserFactory(username="staff-sam", is_staff=True, is_superuser=True)
    for _ in range(9):
        response = client.post(
            "/admin/login/", {"username": "staff-sam", "password": "wrong"}, REMOTE_ADDR=ATTACKER
        )
        assert response.status_code == 200
    for password in ("wrong", PASSWORD):
        response = client.post(
            "/admin/login/", {"username": "staff-sam", "password": password}, REMOTE_ADDR=ATTACKER
        )
        assert response.status_code == 429
        assert int(response["Retry-After"]) > 3500
        assert "the limit is 10" in response.content.decode()
        assert "_auth_user_id" not in client.session


def test_the_backend_refuses_a_locked_pair_on_any_path(db, redis_down, owner, rf):
    fail_ten_times(Login("api"), owner.username, ATTACKER)
    request = rf.post("/elsewhere/", REMOTE_ADDR=ATTACKER)
    assert authenticate(request=request, username=owner.username, password=PASSWORD) is None
    assert request.axes_locked_out
    other = rf.post("/elsewhere/", REMOTE_ADDR=OWNER_HOME)
    assert authenticate(request=other, username=owner.username, password=PASSWORD) == owner
    # without a request (no address to check) the lock is not consulted
    assert authenticate(username=owner.username, password=PASSWORD) == owner
