"""Each side-by-side test process talks to a Redis database of its own."""

from __future__ import annotations

import os

import pytest

from tests import parallel
from tests.parallel import redis_url_for


def test_first_process_keeps_the_database_named():
    assert redis_url_for("redis://127.0.0.1:6379/3", "gw0") == "redis://127.0.0.1:6379/3"


def test_later_processes_move_on_by_their_number():
    assert redis_url_for("redis://127.0.0.1:6379/3", "gw2") == "redis://127.0.0.1:6379/5"
    assert redis_url_for("redis://127.0.0.1:6379", "gw1") == "redis://127.0.0.1:6379/1"


def test_the_number_wraps_at_redis_sixteen_databases():
    assert redis_url_for("redis://127.0.0.1:6379/15", "gw1") == "redis://127.0.0.1:6379/0"


def test_an_url_with_options_is_refused_rather_than_guessed():
    with pytest.raises(ValueError, match="REDIS_URL"):
        redis_url_for("redis://127.0.0.1:6379/0?timeout=3", "gw1")


def test_this_process_uses_its_own_database(settings):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("the suite runs in one process")
    expected = redis_url_for(parallel.GIVEN_REDIS_URL, worker)
    assert os.environ["REDIS_URL"] == settings.CELERY_BROKER_URL == expected
