"""Page weight and time to interactive of a public release page, before and after.

    .venv/bin/python bench/page_weight.py [--old-ref REF] [--repeats 3] [--check]

Serves the same published release (six statistics, built through the real
services into a fresh SQLite database) from two trees and two modes, and loads
it in Debian's chromium through Playwright with an empty cache:

- trees: this working tree ("new") and `--old-ref` ("old", by default the commit
  before the partial Plotly bundle was vendored), exported with `git archive`;
- modes: "run.sh" -- the embedded default, started the way that tree's
  scripts/run.sh starts it (DEBUG, runserver, collectstatic and --nostatic when
  the script does) -- and "gunicorn" -- production settings (DEBUG off, collected
  static files) under gunicorn with 2 workers.

For each it reports the bytes transferred (the sum of Chromium's
encodedDataLength over every response, headers included, from the DevTools
network events), the number of requests, and the time from navigation start to
interactive: when the page's script has drawn every chart (trees before the lazy
drawing) or every chart in the first window of 1280 x 900 (the others are drawn as
they scroll into view) and its controls work
(body[data-charts-ready], recorded in the page with performance.now()). Median
of --repeats fresh browser contexts; in each mode both trees are served at once and
their visits alternate, so a change in the machine's load touches both alike.
Goals: <= 700 KB under gunicorn, <= 1 MB from run.sh,
interactive in <= 1 s. --check exits 1 when the new tree misses one.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py
# would shadow the standard library's `http` package: drop it before importing.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_BYTES = {"gunicorn": 700_000, "run.sh": 1_000_000}
GOAL_INTERACTIVE_MS = 1000.0
# The first partial bundle vendored (since replaced by plotly-dpportal.min.js): the
# default "old" tree is the commit before it was added.
VENDORED = "static/vendor/plotly/plotly-cartesian.min.js"

FIXTURE = r"""
import sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from budgets.models import Membership, Project
from tests.public_builders import build_release
User = get_user_model()
owner = User.objects.create_user("bench-owner", password="x-bench-password-1")
reviewer = User.objects.create_user("bench-reviewer", password="x-bench-password-1")
project = Project.objects.create(
    name="Bench", slug="bench", description="Page weight benchmark.",
    privacy_unit_description="One respondent.", epsilon_cap=10, delta_cap=0, created_by=owner,
)
Membership.objects.create(project=project, user=owner, role="owner")
Membership.objects.create(project=project, user=reviewer, role="reviewer")
release = build_release(project=project, owner=owner, reviewer=reviewer)
sys.stdout.write(f"/p/{project.slug}/releases/{release.pk}/\n")
"""

# Records when the page's own script has drawn every chart, in page time.
READY_PROBE = """
new MutationObserver((_, observer) => {
  if (document.body && document.body.getAttribute('data-charts-ready')) {
    window.__interactiveMs = performance.now();
    observer.disconnect();
  }
}).observe(document, {attributes: true, subtree: true, attributeFilter: ['data-charts-ready']});
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_old_ref() -> str:
    """The parent of the commit that vendored the partial bundle (else HEAD)."""
    out = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", VENDORED],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return f"{out[-1]}^" if out else "HEAD"


def export_tree(ref: str, into: Path) -> Path:
    archive = into / "tree.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), ref], cwd=ROOT,
                   check=True)  # fmt: skip
    tree = into / "tree"
    tree.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def base_env(tree: Path, var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        PYTHONPATH=str(tree),
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        DPPORTAL_VAR_DIR=str(var),
        STATIC_ROOT=str(var / "static"),
        LOG_LEVEL="WARNING",
    )
    return env


def run_sh_server(tree: Path, env: dict[str, str], port: int) -> list[str]:
    """The web server command of the tree's scripts/run.sh, and its static setup."""
    script = (tree / "scripts" / "run.sh").read_text()
    env["DEBUG"] = "1"
    for name, value in re.findall(r"^export (DPPORTAL_STATIC_COLLECTED)=(\S+)", script, re.M):
        env[name] = value
    if "manage.py collectstatic" in script:
        collect(tree, env)
    line = next(x for x in script.splitlines() if "manage.py runserver" in x)
    flags = [f for f in shlex.split(line) if f.startswith("--")]
    return [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", *flags]


def gunicorn_server(tree: Path, env: dict[str, str], port: int) -> list[str]:
    env.update(
        DEBUG="0", SECRET_KEY="bench-only-secret-" + "x" * 40, ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0", SECURE_HSTS_SECONDS="0", SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
    )  # fmt: skip
    collect(tree, env)
    return [
        sys.executable, "-m", "gunicorn", "dpportal.wsgi:application", "--bind",
        f"127.0.0.1:{port}", "--workers", "2", "--log-level", "warning",
    ]  # fmt: skip


def collect(tree: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
                   cwd=tree, env=env, check=True, timeout=600)  # fmt: skip


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited before serving {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    sys.exit(f"the server did not answer {url} in time")


def load_once(browser, url: str) -> dict:
    """One first visit: bytes over the wire, requests, time to interactive (ms)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(READY_PROBE)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        sizes: dict[str, float] = {}
        cdp.on(
            "Network.loadingFinished",
            lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]),
        )
        page.goto(url, wait_until="load")
        page.wait_for_function("window.__interactiveMs !== undefined", timeout=60_000)
        interactive = page.evaluate("window.__interactiveMs")
        page.wait_for_load_state("networkidle")
        return {"bytes": int(sum(sizes.values())), "requests": len(sizes),
                "interactive_ms": float(interactive)}  # fmt: skip
    finally:
        context.close()


def start_server(tree: Path, var: Path, mode: str, page: str):
    env = base_env(tree, var)
    port = free_port()
    build = run_sh_server if mode == "run.sh" else gunicorn_server
    command = build(tree, env, port)
    proc = subprocess.Popen(command, cwd=tree, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return proc, f"http://127.0.0.1:{port}{page}"


def measure(browser, sites: dict[str, tuple[Path, Path, str]], mode: str, repeats: int) -> list:
    """Both trees served at once in one mode, their first visits alternated (old, new,
    then new, old...) so that both see the same machine load, however it drifts."""
    servers = {}
    try:
        for name, (tree, var, page) in sites.items():
            servers[name] = start_server(tree, var, mode, page)
            wait_until_up(servers[name][1], servers[name][0])
        # warm the servers' caches (both gunicorn workers), not the browser's
        for _proc, url in servers.values():
            load_once(browser, url)
            load_once(browser, url)
        runs: dict[str, list[dict]] = {name: [] for name in servers}
        for i in range(repeats):
            for name in sorted(servers, reverse=bool(i % 2)):
                runs[name].append(load_once(browser, servers[name][1]))
    finally:
        for proc, _url in servers.values():
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    return [
        {
            "tree": name,
            "mode": mode,
            "bytes": int(statistics.median(r["bytes"] for r in tree_runs)),
            "requests": int(statistics.median(r["requests"] for r in tree_runs)),
            "interactive_ms": statistics.median(r["interactive_ms"] for r in tree_runs),
            "runs": tree_runs,
        }
        for name, tree_runs in runs.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-ref", default=None, help="git ref of the 'old' tree")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        sys.exit("chromium is not installed: apt-get install chromium")
    old_ref = args.old_ref or default_old_ref()
    work = Path(tempfile.mkdtemp(prefix="dpportal-bench-weight-"))
    (work / "old").mkdir()
    trees = {"old": export_tree(old_ref, work / "old"), "new": ROOT}
    from playwright.sync_api import sync_playwright

    results = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
            sites = {}
            for name, tree in trees.items():
                var = work / f"var-{name}"
                var.mkdir()
                fixture = subprocess.run([sys.executable, "-c", FIXTURE], cwd=tree,
                                         env=base_env(tree, var) | {"DEBUG": "1"},
                                         capture_output=True, text=True, timeout=600)  # fmt: skip
                if fixture.returncode != 0:
                    sys.exit(f"could not build the release in {name}:\n{fixture.stderr[-3000:]}")
                sites[name] = (tree, var, fixture.stdout.strip().splitlines()[-1])
            for mode in ("run.sh", "gunicorn"):
                results.extend(measure(browser, sites, mode, args.repeats))
            results.sort(key=lambda r: (r["tree"] != "old", r["mode"] != "run.sh"))
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nold = {old_ref}, new = this working tree; median of {args.repeats} first visits"
          " (old and new alternated)")  # fmt: skip
    print(f"load average after the runs: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'tree':5} {'mode':9} {'transferred':>12} {'requests':>9} {'interactive':>12}")
    for r in results:
        print(f"{r['tree']:5} {r['mode']:9} {r['bytes'] / 1000:9.0f} KB {r['requests']:9d} "
              f"{r['interactive_ms']:9.0f} ms")  # fmt: skip
    for r in results:
        print(json.dumps({"bench": "page_weight", **{k: v for k, v in r.items() if k != "runs"}}))
    met = all(
        r["bytes"] <= GOAL_BYTES[r["mode"]] and r["interactive_ms"] <= GOAL_INTERACTIVE_MS
        for r in results
        if r["tree"] == "new"
    )
    print("goals for the new tree (<= 700 KB gunicorn, <= 1 MB run.sh, <= 1 s): "
          + ("met" if met else "MISSED"))  # fmt: skip
    return 1 if (args.check and not met) else 0


if __name__ == "__main__":
    sys.exit(main())
