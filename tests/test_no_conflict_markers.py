"""No tracked file keeps a merge's conflict markers: a template once shipped with
`<<<<<<< HEAD` on the project page, rendered as text to every owner."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def conflicted(text: str) -> bool:
    return bool(MARKER.search(text))


def test_the_check_finds_markers():
    assert conflicted("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> branch\n")
    assert not conflicted("a heading\n=======  \nnot a marker: it has trailing spaces\n")


def test_no_tracked_file_has_conflict_markers():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if path.suffix in {".md", ".po", ".rst"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if conflicted(text):
            found.append(name)
    assert found == []
