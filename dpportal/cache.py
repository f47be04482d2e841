"""Django's Redis cache, made optional: a Redis that is down is a cache miss, never a 500.

Redis is the cache and the Celery doorbell; the database is the record. Every read
the product serves (public pages and downloads, the registry, owners' pages, the
token endpoint, the throttles' counters) must still answer while Redis is down, so
this backend turns each Redis error into what an empty cache would answer (a miss,
a no-op) and logs the outage once, by exception type only. After a failure it
leaves Redis alone for `RETRY_SECONDS` (one cheap check of the clock per call
instead of a connection attempt), then tries again.

Options (CACHES["default"]["OPTIONS"]), besides redis-py's own connection options:

* ``RETRY_SECONDS``: how long to skip Redis after a failure (default 2 s);
* ``LOG_INTERVAL_SECONDS``: at most one warning per this many seconds (default 60 s).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Outage:
    """The process's view of Redis: down since when, when to try again, when last logged.

    Shared by every thread's cache object (Django builds one per thread); a race
    between threads costs at most one extra connection attempt or log line.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.retry_at = 0.0
        self.logged_at: float | None = None

    def skipping(self) -> bool:
        return self.down_since is not None and time.monotonic() < self.retry_at

    def failed(self, exc: Exception, *, retry_seconds: float, log_interval: float) -> None:
        now = time.monotonic()
        with self.lock:
            if self.down_since is None:
                self.down_since = now
            self.retry_at = now + retry_seconds
            if self.logged_at is not None and now - self.logged_at < log_interval:
                return
            self.logged_at = now
        # The type only: a message could name a host, a key or worse.
        logger.warning("cache unavailable (%s): answering without it", type(exc).__name__)

    def recovered(self) -> None:
        if self.down_since is None:
            return
        with self.lock:
            if self.down_since is None:
                return
            seconds = time.monotonic() - self.down_since
            self.down_since = None
            self.logged_at = None
        logger.info("cache reachable again after %.0f s", seconds)


_outage = _Outage()


class _KeptClientCacheClient(RedisCacheClient):
    """Django's Redis client, keeping one redis-py client per connection pool.

    Django makes a new redis-py client for every operation, and its constructor
    fills a table of some 160 response handlers: on a cached public page that is a
    tenth of the time the view takes (bench/http.py). A client only holds its pool
    (shared anyway) and that table, and is safe to share between threads.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class FallbackRedisCache(RedisCache):
    """RedisCache whose every operation answers as an empty cache when Redis fails."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = dict(params.get("OPTIONS", {}))
        self.retry_seconds = float(options.pop("RETRY_SECONDS", 2.0))
        self.log_interval = float(options.pop("LOG_INTERVAL_SECONDS", 60.0))
        super().__init__(server, {**params, "OPTIONS": options})
        self._class = _KeptClientCacheClient

    def _try(self, fallback: T, operation: Callable[..., T], *args: Any) -> T:
        """`operation(self, *args)` on Redis, or `fallback` when Redis fails or is resting."""
        if _outage.skipping():
            return fallback
        try:
            result = operation(self, *args)
        except RedisError as exc:
            _outage.failed(exc, retry_seconds=self.retry_seconds, log_interval=self.log_interval)
            return fallback
        _outage.recovered()
        return result

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._try(False, RedisCache.add, key, value, timeout, version)

    def get(self, key, default=None, version=None):
        return self._try(default, RedisCache.get, key, default, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._try(None, RedisCache.set, key, value, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._try(False, RedisCache.touch, key, timeout, version)

    def delete(self, key, version=None):
        return self._try(False, RedisCache.delete, key, version)

    def get_many(self, keys, version=None):
        return self._try({}, RedisCache.get_many, keys, version)

    def has_key(self, key, version=None):
        return self._try(False, RedisCache.has_key, key, version)

    def incr(self, key, delta=1, version=None):
        missing = object()
        value = self._try(missing, RedisCache.incr, key, delta, version)
        if value is missing:  # what an empty cache answers
            raise ValueError(f"Key '{key}' not found")
        return value

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._try(list(data), RedisCache.set_many, data, timeout, version)

    def delete_many(self, keys, version=None):
        self._try(None, RedisCache.delete_many, keys, version)

    def clear(self):
        return self._try(False, RedisCache.clear)
