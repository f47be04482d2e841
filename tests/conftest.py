"""Fixtures shared by the whole suite.

The suite runs on the real services named by DATABASE_URL and REDIS_URL (the
test command and CI point them at PostgreSQL and Redis). Tests marked `worker`
start real Celery worker processes that talk to the same test database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.s3_support import s3_server, s3_storage  # noqa: F401 - the S3 fixtures, for every test

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    # whitenoise warns at every request when STATIC_ROOT does not exist yet
    Path(django_settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    """Every test stores its files in a fresh folder (the worker is told the same)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _english():
    """Every test starts in the default language: a request in zh-hans leaves its language
    active in the thread (LocaleMiddleware activates, nothing deactivates), and services
    called directly afterwards would write their messages in Chinese."""
    from django.utils import translation

    translation.activate(django_settings.LANGUAGE_CODE)
    yield
    translation.activate(django_settings.LANGUAGE_CODE)


@pytest.fixture
def owner(db):
    return UserFactory(username="olivia-owner")


@pytest.fixture
def reviewer(db):
    return UserFactory(username="ravi-reviewer")


@pytest.fixture
def project(db, owner, reviewer):
    project = ProjectFactory(created_by=owner)
    MembershipFactory(project=project, user=owner, role="owner")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    return project


def database_url_for_subprocess() -> str:
    """A DATABASE_URL naming the test database this process is using."""
    s = connection.settings_dict
    if s["ENGINE"] != "django.db.backends.postgresql":
        pytest.fail("worker tests need PostgreSQL: set DATABASE_URL (the test command does)")
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{s['NAME']}"


@dataclass
class WorkerProcess:
    proc: subprocess.Popen
    queue: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the whole process group (the main worker and its pool children)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)


class WorkerFactory:
    """Starts real `celery worker` processes on a private queue of the real broker."""

    def __init__(self, tmp_path: Path, extra_env: dict[str, str] | None = None) -> None:
        self.tmp_path = tmp_path
        self.queue = f"test-{uuid.uuid4().hex[:12]}"
        self.workers: list[WorkerProcess] = []
        self.extra_env = extra_env or {}

    def env(self, **extra: str) -> dict[str, str]:
        env = os.environ.copy()
        env.update(
            DATABASE_URL=database_url_for_subprocess(),
            MEDIA_ROOT=str(django_settings.MEDIA_ROOT),
            CELERY_QUEUE=self.queue,
            PYTHONPATH=str(ROOT),
        )
        env.update(self.extra_env)
        env.update(extra)
        return env

    def start(self, *, concurrency: int = 1, name: str | None = None, **extra_env: str):
        from dpportal.celery import app

        if not os.environ.get("REDIS_URL"):
            pytest.fail("worker tests need Redis: set REDIS_URL (the test command does)")
        # The namespaced key: with config_from_object(namespace="CELERY") setting the
        # short name alone is shadowed by CELERY_TASK_DEFAULT_QUEUE from settings.
        app.conf.task_default_queue = self.queue
        app.conf.CELERY_TASK_DEFAULT_QUEUE = self.queue
        index = len(self.workers)
        log_path = self.tmp_path / f"worker-{index}.log"
        hostname = name or f"w{index}-{self.queue}@%h"
        cmd = [
            sys.executable, "-m", "celery", "-A", "dpportal.celery", "worker",
            "-Q", self.queue, "-c", str(concurrency), "-n", hostname,
            "--without-gossip", "--without-mingle", "-l", "INFO",
        ]  # fmt: skip
        log = open(log_path, "wb")  # noqa: SIM115 - closed when the process ends
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env(**extra_env), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        worker = WorkerProcess(proc=proc, queue=self.queue, log_path=log_path)
        self.workers.append(worker)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"celery worker exited early:\n{worker.log()}")
            if b" ready." in log_path.read_bytes():
                return worker
            time.sleep(0.2)
        worker.kill()
        pytest.fail(f"celery worker did not become ready:\n{worker.log()}")

    def stop_all(self) -> None:
        from dpportal.celery import app

        for worker in self.workers:
            if worker.proc.poll() is None:
                os.killpg(worker.proc.pid, signal.SIGTERM)
                try:
                    worker.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
        app.conf.task_default_queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
        app.conf.CELERY_TASK_DEFAULT_QUEUE = django_settings.CELERY_TASK_DEFAULT_QUEUE


@pytest.fixture
def celery_workers(transactional_db, tmp_path):
    """Start real worker processes with `celery_workers.start()`; all stop after the test."""
    factory = WorkerFactory(tmp_path)
    yield factory
    factory.stop_all()


@pytest.fixture
def celery_worker(celery_workers):
    """One real worker process, already ready."""
    return celery_workers.start()


def wait_for(predicate, *, timeout: float = 60.0, interval: float = 0.2, message: str = ""):
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(message or "condition not met in time")


@pytest.fixture(scope="session")
def spark(django_db_blocker):
    """One local[2] Spark session for the whole run: the JVM starts once, and every module
    sees the same master (a session stopped and made again in one process may come back
    under the settings' default master instead)."""
    pytest.importorskip("pyspark")
    from releases.compute import spark_engine  # noqa: PLC0415 - pyspark only where Spark runs

    with django_db_blocker.unblock():
        session = spark_engine.spark_session("local[2]")
    yield session
    session.stop()  # before the interpreter exits (py4j otherwise logs to a closed stream)
