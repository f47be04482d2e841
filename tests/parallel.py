"""Side-by-side test processes (pytest-xdist) each get a Redis database of their own.

Loaded as a plugin (``-p tests.parallel`` in the pytest options) so that it runs before
pytest-django reads the settings. PostgreSQL needs nothing here: pytest-django already
gives each process its own test database. Redis does: every test empties the cache,
which is the whole database that also carries the Celery queues of the worker tests,
so two processes sharing one would drop each other's tasks. Process ``gwN`` takes the
database N after the one REDIS_URL names (modulo Redis's 16), and the worker processes
a test starts inherit it through the environment.
"""

from __future__ import annotations

import os
import re

import pytest

REDIS_DATABASES = 16


def redis_url_for(url: str, worker: str) -> str:
    """REDIS_URL moved on by the number in the xdist worker's name (``gw0`` keeps it)."""
    index = int(worker.removeprefix("gw"))
    match = re.fullmatch(r"(?P<server>redis://[^/]+)(?:/(?P<db>\d+))?", url)
    if match is None:
        raise ValueError(f"REDIS_URL must be redis://host:port[/db] for parallel tests: {url}")
    base = int(match["db"] or 0)
    return f"{match['server']}/{(base + index) % REDIS_DATABASES}"


#: REDIS_URL as the test command gave it, before this process moved it on
GIVEN_REDIS_URL = os.environ.get("REDIS_URL", "")
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and GIVEN_REDIS_URL:
    os.environ["REDIS_URL"] = redis_url_for(GIVEN_REDIS_URL, _worker)


def pytest_collection_modifyitems(items):
    """The Spark tests share one process (``--dist loadgroup``): each process that runs
    one starts a JVM of its own, some 10-20 s and a gigabyte."""
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
