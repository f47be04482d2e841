"""HTTP throughput of the public dashboards: wrk against gunicorn on loopback.

    .venv/bin/python bench/http.py [--duration 10] [--connections 16] [--workers 4] [--check]

Builds a published release (six statistics, through the real services) in its
own database (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/dpportal_bench_http;
created and migrated if missing) with Redis as the cache (REDIS_URL, default
redis://127.0.0.1:6379/5), starts gunicorn with production settings (DEBUG off)
on 127.0.0.1, warms the cache, and runs wrk for a bounded time against:

- the cached public release page (the goal: >= 500 req/s, p99 < 50 ms on 2 cores),
- its cached JSON download,
- the project's public registry JSON (cached under a version read in one query),
- the floor: a static file of the registry JSON's size served by whitenoise
  through the same gunicorn (no Python view at all),
- and, as a baseline in the same run, the uncached public home page (one
  aggregate query and a template render per request).

Prints requests per second and p50/p99 latency for each, and a JSON line per
run. --check exits 1 when the goal for the cached page is missed. wrk must be
installed (`apt-get install -y wrk`); the script says so if it is not.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path, where this module
# would shadow the standard library's `http` package: drop it before importing.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench.database
GOAL_RPS = 500.0
GOAL_P99_MS = 50.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_fixture(env: dict[str, str]) -> tuple[str, str, int, int]:
    """Migrate, create a project with a published release.

    Returns the release page's path, the registry JSON's path and their sizes in bytes.
    """
    code = r"""
import sys, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from budgets import services
from tests.public_builders import build_release
User = get_user_model()
stamp = str(int(time.time() * 1000))
owner = User.objects.create_user("bench-owner-" + stamp, password="x-bench-password-1")
reviewer = User.objects.create_user("bench-reviewer-" + stamp, password="x-bench-password-1")
project = services.project_create(
    name="Bench " + stamp, description="HTTP benchmark.", privacy_unit_description="One row.",
    epsilon_cap="10", delta_cap="0.001", created_by=owner, slug="bench-" + stamp,
)
services.membership_add(project=project, user=reviewer, role="reviewer")
release = build_release(project=project, owner=owner, reviewer=reviewer)
from django.test import Client
page, registry = f"/p/{project.slug}/releases/{release.pk}/", f"/registry/{project.slug}.json"
sizes = [len(Client().get(path).content) for path in (page, registry)]
sys.stdout.write(f"{page} {registry} {sizes[0]} {sizes[1]}\n")
"""
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        sys.exit(f"could not build the benchmark release:\n{result.stderr[-3000:]}")
    page, registry, page_size, registry_size = result.stdout.strip().splitlines()[-1].split()
    return page, registry, int(page_size), int(registry_size)


def write_floor(static_root: Path, size: int, name: str = "bench-floor.json") -> str:
    """A static JSON file of `size` bytes, served by whitenoise: the floor to compare with."""
    body = '{"padding": "' + "x" * max(0, size - 15) + '"}'
    (static_root / name).write_text(body[:size] if len(body) > size else body)
    return f"/static/{name}"


def wait_until_up(base: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("gunicorn exited before serving")
        try:
            with urllib.request.urlopen(base + "/", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    sys.exit("gunicorn did not answer in time")


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def parse_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not match:
        raise ValueError(f"unexpected wrk latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def run_wrk(url: str, *, duration: int, connections: int, threads: int) -> dict:
    cmd = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "5s",
        "--latency", url,
    ]  # fmt: skip
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=duration + 30, check=True
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = parse_ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = parse_ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:(.*)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {
        "url": url,
        "requests": total,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1).strip() if errors else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) * 2)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is missed")
    args = parser.parse_args()

    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")
    database_url = os.environ.get(
        "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dpportal_bench_http"
    )
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/5")
    from bench.database import ensure_database

    ensure_database(database_url)
    static_root = Path(tempfile.mkdtemp(prefix="dpportal-bench-static-"))
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        CACHE_KEY_PREFIX="bench-http",
        DEBUG="0",
        SECRET_KEY="bench-only-secret-" + "x" * 40,
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        STATIC_ROOT=str(static_root),
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, check=True, timeout=300,
    )  # fmt: skip
    page, registry, page_size, registry_size = build_fixture(env)
    floor = write_floor(static_root, registry_size)
    page_floor = write_floor(static_root, page_size, "bench-floor-page.json")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gunicorn = [
        sys.executable, "-m", "gunicorn", "dpportal.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers),
        "--worker-class", "sync", "--log-level", "warning", "--keep-alive", "5",
    ]  # fmt: skip
    proc = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_until_up(base, proc)
        targets = [
            ("cached release page", base + page),
            (f"static file of {page_size} B (page floor)", base + page_floor),
            ("cached release JSON", base + page + "data.json"),
            ("cached registry JSON", base + registry),
            (f"static file of {registry_size} B (floor)", base + floor),
            ("uncached home page (baseline)", base + "/"),
        ]
        for _, url in targets:  # warm the cache (and each worker's connections)
            for _ in range(args.workers * 2):
                with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
                    assert response.status == 200, url
        # rounds interleave the targets, so that a change in the machine's load during
        # the run weighs on each alike; each figure is the median of its rounds
        runs: dict[str, list[dict]] = {label: [] for label, _ in targets}
        loads = []
        for _ in range(args.rounds):
            for label, url in targets:
                result = run_wrk(
                    url, duration=args.duration, connections=args.connections, threads=args.threads
                )
                runs[label].append(result)
            loads.append(os.getloadavg()[0])
        results = []
        for label, _ in targets:
            rounds = runs[label]
            median = dict(rounds[0])
            for field in ("rps", "p50_ms", "p99_ms"):
                median[field] = statistics.median(r[field] for r in rounds)
            median["non_2xx"] = sum(r["non_2xx"] for r in rounds)
            median["label"] = label
            results.append(median)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(static_root, ignore_errors=True)

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average (1, 5, 15 min) after the runs: {load}; other processes skew the figures")
    print("1-min load after each round: " + ", ".join(f"{x:.2f}" for x in loads))
    print(
        f"\ngunicorn: {args.workers} sync workers; wrk: {args.threads} threads, "
        f"{args.connections} connections, {args.duration} s per run; {os.cpu_count()} CPUs"
    )
    print(f"{'target':36} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for r in results:
        print(
            f"{r['label']:36} {r['rps']:9.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
            f"{r['non_2xx']:8d}"
        )
    by_label = {r["label"]: r for r in results}
    ratios = {
        "release page / static file of its size": by_label["cached release page"]["rps"]
        / by_label[f"static file of {page_size} B (page floor)"]["rps"],
        "registry JSON / static file of its size": by_label["cached registry JSON"]["rps"]
        / by_label[f"static file of {registry_size} B (floor)"]["rps"],
    }
    print(f"medians of {args.rounds} interleaved rounds; goal: each ratio >= 0.5")
    for name, ratio in ratios.items():
        print(f"  {name}: {ratio:.2f}x")
    for r in results:
        print(json.dumps({"bench": "http", **r}))
    print(json.dumps({"bench": "http", "ratios": ratios, "load_after_rounds": loads}))
    page_result = results[0]
    met = (
        page_result["rps"] >= GOAL_RPS
        and page_result["p99_ms"] < GOAL_P99_MS
        and page_result["non_2xx"] == 0
    )
    print(
        f"goal for the cached page (>= {GOAL_RPS:.0f} req/s, p99 < {GOAL_P99_MS:.0f} ms): "
        + ("met" if met else "MISSED")
    )
    return 1 if (args.check and not met) else 0


if __name__ == "__main__":
    sys.exit(main())
