"""Cost of the login limits' check against the number of failed logins on record.

Run: .venv/bin/python bench/login.py [--repeat N]

Uses its own database (DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/dpportal_bench_login; created and migrated if
missing). For 0, 10,000 and 100,000 failed-login rows inside the lockout window
(axes.AccessAttempt, spread over 1,000 usernames and many addresses: a spraying
attack in progress) it times `LoginThrottle.refusal()`, the check every login
attempt makes before its password is tried, for a client with no failures and for
a locked username and address pair, and counts its queries. The cache is a dummy
(Redis down). The password hash itself (a few hundred ms by design) is not
included: a refused attempt never reaches it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    del sys.path[0]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dpportal_bench_login")
os.environ.pop("REDIS_URL", None)

ROWS = (0, 10_000, 100_000)


def fill(rows: int) -> None:
    from axes.models import AccessAttempt
    from django.utils import timezone

    AccessAttempt.objects.all().delete()
    now = timezone.now()
    batch = [
        AccessAttempt(
            username=f"user{i % 1000}",
            ip_address=f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",
            user_agent="bench",
            get_data="",
            post_data="",
            http_accept="*/*",
            path_info="/accounts/login/",
            failures_since_start=1,
            attempt_time=now,
        )
        for i in range(rows)
    ]
    AccessAttempt.objects.bulk_create(batch, batch_size=5_000)
    # the locked pair
    AccessAttempt.objects.create(
        username="victim",
        ip_address="198.51.100.66",
        user_agent="bench",
        http_accept="*/*",
        path_info="/accounts/login/",
        failures_since_start=10,
        attempt_time=now,
    )


def time_check(username: str, address: str, repeat: int) -> tuple[float, int, bool]:
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext

    from accounts.throttling import LoginThrottle

    times = []
    queries = 0
    refused = False
    for _ in range(repeat):
        request = RequestFactory().post("/accounts/login/", REMOTE_ADDR=address)
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            refused = LoginThrottle(request=request, username=username).refusal() is not None
            times.append(time.perf_counter() - started)
        queries = len(captured)
    return statistics.median(times), queries, refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    from bench.database import ensure_database

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    call_command("migrate", verbosity=0)
    header = f"{'rows':>8s} {'client':>12s} {'refused':>8s} {'queries':>8s} {'median ms':>10s}"
    print(f"login limit check, median of {args.repeat} runs")
    print(header)
    print("-" * len(header))
    for rows in ROWS:
        fill(rows)
        for label, username, address in (
            ("no failures", "someone", "192.0.2.10"),
            ("locked pair", "victim", "198.51.100.66"),
        ):
            seconds, queries, refused = time_check(username, address, args.repeat)
            print(f"{rows:8d} {label:>12s} {refused!s:>8s} {queries:8d} {seconds * 1000:10.2f}")


if __name__ == "__main__":
    main()
