"""What listing a location registered in place costs, and that a large one stops early.

Run: .venv/bin/python bench/register_listing.py [--files N] [--repeat N]

In a temporary allowed root (local disk) it times, as medians over --repeat runs:

- checking a location in the request (datasets.locations.parse_location: syntax,
  allow-list, dpportal's own storage; nothing listed);
- listing a folder of DPPORTAL_EXTERNAL_MAX_FILES small *.parquet files with their
  fingerprints (datasets.locations.list_files): what a worker does before profiling,
  and what approving a release does again to freeze the file list;
- refusing a folder of --files entries (10 x the limit by default): listing stops at
  the limit's next entry, so this time does not grow with the folder.

The files are a few bytes each: only names and metadata are read, plus each file's
last bytes for its fingerprint.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py
# would shadow the standard library's `http` package: drop it before importing.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DPPORTAL_VAR_DIR", str(ROOT / "var" / "bench"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from datasets import locations  # noqa: E402
from datasets.ingest.common import IngestRejected  # noqa: E402


def fill(folder: Path, count: int) -> None:
    folder.mkdir()
    for i in range(count):
        (folder / f"part-{i:07}.parquet").write_bytes(b"PAR1....PAR1")


def timed(call, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    limit = settings.DPPORTAL_EXTERNAL_MAX_FILES
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10 * limit)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch).resolve()
        settings.DPPORTAL_EXTERNAL_ROOTS = [str(root)]
        fill(root / "fits", limit)
        fill(root / "large", args.files)
        fits = locations.parse_location(str(root / "fits"))
        large = locations.parse_location(str(root / "large"))

        def refuse() -> None:
            try:
                locations.list_files(large)
            except IngestRejected:
                return
            raise SystemExit("the large folder was not refused")

        parse = timed(lambda: locations.parse_location(str(root / "fits")), args.repeat)
        listed = timed(lambda: locations.list_files(fits), args.repeat)
        refused = timed(refuse, args.repeat)
    print(f"limit DPPORTAL_EXTERNAL_MAX_FILES = {limit:,}")
    print(f"request check (parse_location):             {parse * 1000:8.2f} ms")
    print(f"list {limit:,} files with fingerprints:     {listed * 1000:8.1f} ms")
    print(f"refuse a folder of {args.files:,} entries:      {refused * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
