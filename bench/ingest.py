"""Ingest throughput and memory: dpportal's ingest against a bare pyarrow conversion.

    DEBUG=1 .venv/bin/python bench/ingest.py --rows 1000000

Generates N census-like rows (datasets.demo) to a temporary CSV, then, each in its
own subprocess so that the peak-RSS high-water marks are not shared:

* dpportal: the real code path, `datasets.services.dataset_ingest` in-process, on a
  throwaway test database (created and destroyed by the phase; only the ingest
  call is timed);
* bare: pyarrow.csv.open_csv streaming into pyarrow.parquet.ParquetWriter.

Prints rows/s, MB/s (of CSV) and peak RSS for each, and the time ratio.
Goals: ratio <= 1.25 at 1M rows; peak RSS at 10M <= 1.5x that at 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this folder comes first on sys.path, and its other benchmarks
# (bench/http.py) would shadow standard modules: take the project root instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(ROOT)


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss it is not inherited across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def phase_bare(csv_path: Path, workdir: Path) -> dict:
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    started = time.perf_counter()
    reader = pa_csv.open_csv(csv_path)
    with pq.ParquetWriter(workdir / "bare.parquet", reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb()}


def phase_dpportal(csv_path: Path, workdir: Path) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    import django

    django.setup()
    from django.core.files import File
    from django.db import connection

    from budgets.services import project_create
    from datasets.models import Dataset
    from datasets.services import dataset_create, dataset_ingest
    from tests.factories import UserFactory

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        owner = UserFactory(username="bench-owner")
        project = project_create(
            name="Bench", description="bench", privacy_unit_description="row",
            epsilon_cap="1", delta_cap="0", created_by=owner,
        )  # fmt: skip
        with open(csv_path, "rb") as handle:
            dataset = dataset_create(
                project=project, name="bench", uploaded_file=File(handle, name="bench.csv"),
                uploaded_by=owner, dispatch=False,
            )  # fmt: skip
        rss_before = peak_rss_mb()
        started = time.perf_counter()
        dataset = dataset_ingest(dataset_id=dataset.pk)
        seconds = time.perf_counter() - started
        if dataset.status != Dataset.Status.READY:
            raise SystemExit(f"ingest failed: {dataset.failure_reason}")
        return {"seconds": seconds, "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss_before}
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run_phase(name: str, csv_path: Path, workdir: Path, rows: int = 0) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--csv", str(csv_path), "--workdir",
         str(workdir), "--rows", str(rows)],
        check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per phase, alternating; best time is kept"
    )
    parser.add_argument("--phase", choices=["generate", "bare", "dpportal"], help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase == "generate":
        from datasets.demo import write_census_csv

        write_census_csv(args.csv, rows=args.rows)
        print(json.dumps({}))
        return
    if args.phase:
        phase = phase_bare if args.phase == "bare" else phase_dpportal
        print(json.dumps(phase(args.csv, args.workdir)))
        return

    # Even generating runs in a subprocess: this process stays small.
    with tempfile.TemporaryDirectory(prefix="dpportal-bench-") as tmp:
        workdir = Path(tmp)
        csv_path = workdir / "census.csv"
        started = time.perf_counter()
        run_phase("generate", csv_path, workdir, rows=args.rows)
        size_mb = csv_path.stat().st_size / 1e6
        took = time.perf_counter() - started
        print(f"generated {args.rows:,} rows, {size_mb:,.1f} MB in {took:.1f}s")
        runs: dict[str, list[dict]] = {"dpportal": [], "bare": []}
        for _ in range(max(args.repeat, 1)):
            for name in runs:
                runs[name].append(run_phase(name, csv_path, workdir))
    # Best time (least disturbed by other load), worst peak memory.
    results = {
        name: {
            **min(rs, key=lambda r: r["seconds"]),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
        }
        for name, rs in runs.items()
    }
    print(f"best of {max(args.repeat, 1)} runs per phase; peak RSS is the highest seen")
    for name, r in results.items():
        print(
            f"{name:>9}: {r['seconds']:7.2f}s  {args.rows / r['seconds']:>12,.0f} rows/s  "
            f"{size_mb / r['seconds']:8.1f} MB/s  peak RSS {r['peak_rss_mb']:7.1f} MB"
            + (f" (before ingest {r['rss_before_mb']:.1f} MB)" if "rss_before_mb" in r else "")
        )
    ratio = results["dpportal"]["seconds"] / results["bare"]["seconds"]
    print(f"    ratio: {ratio:.2f}x bare pyarrow time (goal <= 1.25 at 1M rows)")


if __name__ == "__main__":
    main()
