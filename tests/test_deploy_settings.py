"""Production settings: `manage.py check --deploy` is clean, and proxies are trusted only
when the operator says so."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def production_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DEBUG", "SECURE_", "SESSION_", "CSRF_", "DPPORTAL_TRUSTED"))
    }
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="dpportal.example.org",
        CSRF_TRUSTED_ORIGINS="https://dpportal.example.org",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "extra",
    [{}, {"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto", "DPPORTAL_TRUSTED_PROXIES": "1"}],
    ids=["direct", "behind-a-proxy"],
)
def test_check_deploy_prints_no_warning(extra):
    result = run(["manage.py", "check", "--deploy"], production_env(**extra))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output, output
    assert "WARNING" not in output.upper(), output


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = production_env()
    del env["SECRET_KEY"]
    result = run(["manage.py", "check"], env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


PRINT_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(repr(s.SECURE_PROXY_SSL_HEADER)); print(s.REST_FRAMEWORK['NUM_PROXIES']); "
    "print(s.DPPORTAL_TOKEN_LIFETIME.days)"
)


def test_proxy_headers_are_trusted_only_when_configured():
    env = production_env(DJANGO_SETTINGS_MODULE="dpportal.settings")
    plain = run(["-c", PRINT_SETTINGS], env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["None", "0", "30"]

    configured = run(
        ["-c", PRINT_SETTINGS],
        {
            **env,
            "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
            "DPPORTAL_TRUSTED_PROXIES": "2",
            "DPPORTAL_TOKEN_LIFETIME_DAYS": "7",
        },
    )
    assert configured.returncode == 0, configured.stderr
    assert configured.stdout.splitlines() == ["('HTTP_X_FORWARDED_PROTO', 'https')", "2", "7"]


def test_a_forged_forwarded_proto_is_not_https_by_default(db, client, settings):
    assert settings.SECURE_PROXY_SSL_HEADER is None
    response = client.get("/", HTTP_X_FORWARDED_PROTO="https", secure=False)
    assert response.wsgi_request.is_secure() is False
