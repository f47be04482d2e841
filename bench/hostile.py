"""Hostile files: how long a real worker takes on each and its peak memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dpportal_bench_hostile \
      REDIS_URL=redis://127.0.0.1:6379/N DEBUG=1 .venv/bin/python bench/hostile.py [NAME ...]

Every generator of the modules in GENERATOR_MODULES (those that can be imported)
writes its file into a temporary folder; each file is uploaded to a throwaway project
and ingested by a fresh `celery worker` (one pool process) started for it alone, on a
private queue of the real broker, so that the worker's peak is that file's
(tests/hostile_support.ingest_in_worker: the VmHWM of the worker's whole process tree,
sampled while it runs). Prints, per file: its size on disk, how the ingest ended, the
seconds from upload to the end, the worker's peak resident memory and, for a refusal,
the start of its reason; a file over the bounds the hostile-file tests hold every file
to (WORKER_PEAK_LIMIT_MB, WORKER_SECONDS_LIMIT) is marked OVER. NAME arguments keep
only the generators whose names contain one of them. Uses its own database (created
and migrated when missing) and media folder (removed afterwards).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    del sys.path[0]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # the table, not every upload's log line
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dpportal_bench_hostile")

#: the modules whose generators are run (one that cannot be imported is skipped)
GENERATOR_MODULES = ("tests.hostile_files_binary", "tests.hostile_files_xlsx")
WORKER_READY_SECONDS = 60


def generators() -> dict[str, Callable[[Path], Path]]:
    """name -> function(folder) -> the file's path, from every module of GENERATOR_MODULES:
    its GENERATORS map when it has one, else its public functions whose one required
    parameter is `folder` (they return the path they wrote) or `path` (they write that
    file, named after the function, with the module's format as extension:
    tests/hostile_files_xlsx.py writes .xlsx)."""
    found = {}
    for name in GENERATOR_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            print(f"({name} not found: skipped)")
            continue
        table = getattr(module, "GENERATORS", None)
        if table is None:
            extension = name.rsplit("_", 1)[-1]
            table = {}
            for n, f in vars(module).items():
                if not inspect.isfunction(f) or f.__module__ != name or n.startswith("_"):
                    continue
                required = [
                    p.name
                    for p in inspect.signature(f).parameters.values()
                    if p.default is inspect.Parameter.empty
                ]
                if required == ["folder"]:
                    table[n] = f
                elif required == ["path"]:
                    table[n] = _writing_to(f, f"{n}.{extension}")
        found.update(table)
    return found


def _writing_to(write: Callable[[Path], None], filename: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        write(folder / filename)
        return folder / filename

    return make


def start_worker(queue: str, log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "celery", "-A", "dpportal.celery", "worker", "-Q", queue,
        "-c", "1", "-n", f"bench-{uuid.uuid4().hex[:8]}@%h", "--without-gossip",
        "--without-mingle", "-l", "INFO",
    ]  # fmt: skip
    env = {**os.environ, "CELERY_QUEUE": queue, "PYTHONPATH": str(ROOT)}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + WORKER_READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the worker exited early:\n{log.read_text()[-2000:]}")
        if b" ready." in log.read_bytes():
            return proc
        time.sleep(0.2)
    stop_worker(proc)
    raise SystemExit(f"the worker did not become ready:\n{log.read_text()[-2000:]}")


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="keep generators whose name contains one")
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL: the worker takes its tasks from the real broker")
    scratch = Path(tempfile.mkdtemp(prefix="dpportal-hostile-"))
    queue = f"bench-hostile-{uuid.uuid4().hex[:12]}"
    os.environ["MEDIA_ROOT"] = str(scratch / "media")
    os.environ["CELERY_QUEUE"] = queue
    (scratch / "media").mkdir()
    (scratch / "files").mkdir()
    from bench.database import ensure_database

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    from dpportal.celery import app
    from tests.factories import MembershipFactory, ProjectFactory, UserFactory
    from tests.hostile_support import WORKER_PEAK_LIMIT_MB, WORKER_SECONDS_LIMIT, ingest_in_worker

    call_command("migrate", verbosity=0)
    app.conf.task_default_queue = queue
    app.conf.CELERY_TASK_DEFAULT_QUEUE = queue
    owner = UserFactory(username=f"bench-hostile-{uuid.uuid4().hex[:8]}")
    stamp = uuid.uuid4().hex[:8]
    project = ProjectFactory(created_by=owner, slug=f"bench-hostile-{stamp}", name=stamp)
    MembershipFactory(project=project, user=owner, role="owner")
    chosen = {
        n: f for n, f in generators().items() if not args.names or any(a in n for a in args.names)
    }
    print(f"bounds: peak < {WORKER_PEAK_LIMIT_MB} MB, time < {WORKER_SECONDS_LIMIT} s")
    header = f"{'file':32s} {'on disk':>10s} {'status':>7s} {'seconds':>8s} {'peak MB':>8s}  reason"
    print(header)
    print("-" * len(header))
    try:
        for name, make in chosen.items():
            folder = scratch / "files" / name
            folder.mkdir()
            path = make(folder)
            proc = start_worker(queue, scratch / f"{name}.log")
            try:
                run = ingest_in_worker(
                    worker_pid=proc.pid, project=project, owner=owner, path=path, timeout=600
                )
            finally:
                stop_worker(proc)
            mark = "" if run.bounded else "  OVER"
            reason = run.failure_reason.replace("\n", " ")[:90]
            print(
                f"{name:32s} {path.stat().st_size:10,d} {run.status:>7s} {run.seconds:8.1f} "
                f"{run.peak_mb:8.0f}  {reason}{mark}",
                flush=True,
            )
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
