"""The foundation: settings from the environment, admin, login pages."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

ROOT = Path(__file__).resolve().parent.parent


def test_login_page_renders(client):
    response = client.get(reverse("accounts:login"))
    assert response.status_code == 200
    assert b"Log in" in response.content


@pytest.mark.django_db
def test_admin_lists_every_model(admin_client):
    response = admin_client.get(reverse("admin:index"))
    assert response.status_code == 200
    for name in [b"Projects", b"Memberships", b"Ledger entries", b"Datasets", b"Releases"]:
        assert name in response.content


def test_settings_refuse_to_start_without_secret_key_outside_debug():
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    result = subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE']="
         "'dpportal.settings'; django.setup()"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_check_deploy_passes_with_production_environment():
    env = dict(os.environ)
    env.update(
        DEBUG="0",
        SECRET_KEY="a-long-random-production-secret-" + "x" * 40,
        ALLOWED_HOSTS="dp.example.org",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres",
        SECURE_HSTS_PRELOAD="1",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("cookie", ["abc\x00defghijk", "x" * 300, "ZZZ-not-a-key"])
def test_malformed_session_cookie_is_ignored_not_a_500(client, cookie):
    client.cookies["sessionid"] = cookie
    assert client.get(reverse("accounts:login")).status_code == 200
    assert client.get("/").status_code == 200
    response = client.get(reverse("accounts:home"))
    assert response.status_code == 302  # treated as anonymous: sent to log in
