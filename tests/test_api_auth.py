"""Logging in: throttles by the real client address, per-username slowing, token expiry.

The database-kept lockouts with Redis down: tests/test_login_lockout.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import PASSWORD, UserFactory

V1 = "/api/v1"
TOKEN_URL = f"{V1}/auth/token/"


@pytest.fixture
def rates(settings):
    """Set throttle rates for one test (unnamed scopes are unthrottled)."""

    def set_rates(**rates: str) -> None:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    return set_rates


def obtain(client: APIClient, username: str, password: str = PASSWORD, **extra):
    return client.post(
        TOKEN_URL, {"username": username, "password": password}, format="json", **extra
    )


# --- the real client address --------------------------------------------------------------


def test_varying_x_forwarded_for_does_not_bypass_the_anonymous_limit(db, rates):
    rates(anon="3/minute")
    client = APIClient()
    codes = [
        client.get(f"{V1}/public/projects/", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]


def test_trusted_proxy_count_picks_the_address_the_proxy_appended(db, rates, settings):
    rates(anon="2/minute")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    client = APIClient()
    url = f"{V1}/public/projects/"
    # one client behind the proxy, forging ever new left-hand entries: still one client
    forged = [
        client.get(url, HTTP_X_FORWARDED_FOR=f"10.9.9.{i}, 198.51.100.7").status_code
        for i in range(3)
    ]
    assert forged == [200, 200, 429]
    # another client behind the same proxy has its own count
    assert client.get(url, HTTP_X_FORWARDED_FOR="198.51.100.8").status_code == 200


def test_trusted_proxies_default_to_none():
    from django.conf import settings

    assert settings.REST_FRAMEWORK["NUM_PROXIES"] == 0


# --- the token endpoint ----------------------------------------------------------------------


def test_token_endpoint_slows_failures_per_username_from_any_address(db, owner, reviewer, settings):
    settings.DPPORTAL_LOGIN_SLOW_AFTER = 3
    client = APIClient()
    for i in range(3):
        response = obtain(client, owner.username, "wrong", REMOTE_ADDR=f"192.0.2.{i}")
        assert response.status_code == 401
    # the fourth try, from yet another address and with the right password, waits
    # seconds (DPPORTAL_LOGIN_SLOW_FIRST_SECONDS), not an hour
    response = obtain(client, owner.username, REMOTE_ADDR="192.0.2.99")
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    assert error["code"] == "throttled"
    assert 0 < int(response["Retry-After"]) <= settings.DPPORTAL_LOGIN_SLOW_FIRST_SECONDS
    assert error["details"]["retry_after"] == int(response["Retry-After"])
    assert "3 failed logins for this username" in error["message"]
    assert not Token.objects.filter(user=owner).exists()
    # another account is not affected
    assert obtain(client, reviewer.username, REMOTE_ADDR="192.0.2.99").status_code == 200


def test_token_endpoint_successes_do_not_count_against_the_username(db, owner, settings):
    settings.DPPORTAL_LOGIN_SLOW_AFTER = 2
    client = APIClient()
    for _ in range(4):
        assert obtain(client, owner.username).status_code == 200


def test_token_endpoint_limits_attempts_per_address_whatever_the_forwarded_header(
    db, owner, reviewer, rates
):
    rates(login_address="3/minute")
    client = APIClient()
    codes = [
        obtain(client, name, "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i, name in enumerate([owner.username, reviewer.username, "nobody", "x"])
    ]
    assert codes == [401, 401, 401, 429]


def test_token_expires_and_gets_a_clear_401(db, owner, settings):
    settings.DPPORTAL_TOKEN_LIFETIME = timedelta(days=30)
    body = obtain(APIClient(), owner.username).json()
    token = Token.objects.get(key=body["token"])
    assert body["expires_at"].startswith(str((token.created + timedelta(days=30)).date()))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get(f"{V1}/projects/").status_code == 200

    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(days=30, seconds=1))
    response = client.get(f"{V1}/projects/")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "token_expired"
    assert "expired" in error["message"] and "/api/v1/auth/token/" in error["message"]

    # logging in again gives a new token; the old key stays refused
    fresh = obtain(APIClient(), owner.username).json()["token"]
    assert fresh != token.key
    assert client.get(f"{V1}/projects/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Token {fresh}")
    assert client.get(f"{V1}/projects/").status_code == 200


def test_a_valid_token_is_reused_not_extended(db, owner):
    first = obtain(APIClient(), owner.username).json()
    second = obtain(APIClient(), owner.username).json()
    assert first["token"] == second["token"]
    assert first["expires_at"] == second["expires_at"]


def test_revoking_the_token_makes_it_401(db, owner):
    token = obtain(APIClient(), owner.username).json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.post(f"{V1}/auth/token/revoke/")
    assert response.status_code == 200 and response.json() == {"revoked": True}
    assert not Token.objects.filter(user=owner).exists()
    assert client.get(f"{V1}/projects/").status_code == 401
    # a new token can be obtained; revoking needs a caller
    assert obtain(APIClient(), owner.username).json()["token"] != token
    assert APIClient().post(f"{V1}/auth/token/revoke/").status_code == 401


def test_session_caller_without_token_revokes_nothing(db, owner):
    client = APIClient()
    client.force_login(owner)
    response = client.post(f"{V1}/auth/token/revoke/")
    assert response.status_code == 200 and response.json() == {"revoked": False}


# --- the login pages ---------------------------------------------------------------------------


def test_login_page_slows_failures_per_username(db, client, owner, settings):
    settings.DPPORTAL_LOGIN_SLOW_AFTER = 3
    url = reverse("accounts:login")
    for i in range(3):
        response = client.post(
            url, {"username": owner.username, "password": "wrong"}, REMOTE_ADDR=f"192.0.2.{i}"
        )
        assert response.status_code == 200 and "_auth_user_id" not in client.session
    response = client.post(
        url, {"username": owner.username, "password": PASSWORD}, REMOTE_ADDR="192.0.2.50"
    )
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= settings.DPPORTAL_LOGIN_SLOW_FIRST_SECONDS
    assert "Too many login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_login_page_limits_attempts_per_address(db, client, owner, rates):
    rates(login_address="2/minute")
    url = reverse("accounts:login")
    for i in range(2):
        client.post(
            url, {"username": f"u{i}", "password": "x"}, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}"
        )
    response = client.post(
        url, {"username": owner.username, "password": PASSWORD}, HTTP_X_FORWARDED_FOR="8.8.8.8"
    )
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_login_page_logs_in_under_the_limits(db, client, owner):
    response = client.post(
        reverse("accounts:login"), {"username": owner.username, "password": PASSWORD}
    )
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)


def test_admin_login_is_limited_too(db, client, settings):
    UserFactory(username="staff-sam", is_staff=True, is_superuser=True)
    settings.DPPORTAL_LOGIN_SLOW_AFTER = 2
    for _ in range(2):
        client.post("/admin/login/", {"username": "staff-sam", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "staff-sam", "password": PASSWORD})
    assert "Too many login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
