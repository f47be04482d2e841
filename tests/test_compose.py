"""docker-compose.yml: only the web server publishes a port, and no credential has a
default (each is `${NAME:?message}`, so compose refuses to start without it). The
consoles file publishes the MinIO console and the Spark UI on the loopback only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
CONSOLES = ROOT / "docker-compose.consoles.yml"

#: environment names that hold a credential (or part of one)
CREDENTIAL = re.compile(r"PASSWORD|SECRET|ACCESS_KEY|ROOT_USER|TOKEN|SECRET_KEY")
#: `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?err}`, `${NAME?err}`
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?P<op>:?[-?+])?(?P<rest>[^}]*)\}")
#: user:password@ in a URL
URL_PASSWORD = re.compile(r"://[^:/@\s]+:(?P<password>\$\{[^}]*\}|[^@\s]+)@")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())  # merge keys (<<) resolved


def environments(compose: dict):
    for name, service in compose["services"].items():
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        for key, value in env.items():
            yield name, key, "" if value is None else str(value)


def required(value: str) -> bool:
    """The value is one interpolation that refuses to start when its variable is unset."""
    match = INTERPOLATION.fullmatch(value)
    return bool(match and match["op"] in (":?", "?"))


def container_port(entry) -> str:
    if isinstance(entry, dict):
        return str(entry["target"])
    return str(entry).split(":")[-1].split("/")[0]


def test_only_the_web_server_publishes_a_port():
    services = load(COMPOSE)["services"]
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert set(published) == {"web"}, published
    assert [container_port(p) for p in published["web"]] == ["8000"]
    for service in services.values():  # nothing published another way either
        assert service.get("network_mode") != "host"


def test_no_credential_has_a_default():
    compose = load(COMPOSE)
    checked = []
    for service, key, value in environments(compose):
        if CREDENTIAL.search(key):
            assert required(value), f"{service}: {key} = {value!r} (must be ${{{key}:?...}})"
            checked.append(key)
        url = URL_PASSWORD.search(value)
        if url:
            assert required(url["password"]), f"{service}: {key} carries a literal password"
            checked.append(key)
    assert {"POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "DATABASE_URL", "SECRET_KEY"} <= set(
        checked
    )
    # and nowhere in the file (comments aside) does a credential's variable get a default
    text = "\n".join(line.split(" #")[0] for line in COMPOSE.read_text().splitlines())
    for match in INTERPOLATION.finditer(text):
        if CREDENTIAL.search(match["name"]):
            assert match["op"] in (":?", "?"), match[0]


def test_the_consoles_file_publishes_on_the_loopback_only():
    services = load(CONSOLES)["services"]
    ports = {name: s["ports"] for name, s in services.items()}
    assert ports == {"minio": ["127.0.0.1:9001:9001"], "spark-master": ["127.0.0.1:8080:8080"]}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("${X:?set X}", True),
        ("${X?set X}", True),
        ("${X:-secret}", False),
        ("${X}", False),
        ("literal", False),
        ("${X:?set X}suffix", False),
    ],
)
def test_the_checker_tells_required_from_defaulted(value, ok):
    assert required(value) is ok
